"""``TabbedModal``: a screen over the main one, made of tabs: 1, 2, 3… pick one, Esc or q close.

Subclasses list their tabs in ``TABS`` (key, pane id, label, the widget to focus) and add their
own bindings after ``tab_bindings(...)``.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import TabbedContent

Tab = tuple[str, str, str, str]
"""``(key, pane id, label, selector of the widget that takes focus)``."""


def tab_bindings(name: str, tabs: tuple[Tab, ...]) -> list[Binding]:
    """Esc/q closes the screen; each tab's key shows it."""
    return [
        Binding("escape,q", "dismiss", "Close", id=f"close-{name}"),
        *(
            Binding(key, f"tab('{pane}')", label, id=f"{name}-{label.lower()}")
            for key, pane, label, _ in tabs
        ),
    ]


class TabbedModal(ModalScreen[None]):
    TABS: ClassVar[tuple[Tab, ...]] = ()

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self.focus_tab(tab)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id:
            self.focus_tab(event.pane.id)

    def focus_tab(self, tab: str) -> None:
        """Focus the tab's main widget, so its keys (scrolling, Enter) work at once."""
        selector = next((focus for _, pane, _, focus in self.TABS if pane == tab), None)
        found = self.query(selector) if selector else None
        if found:
            found.first().focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
