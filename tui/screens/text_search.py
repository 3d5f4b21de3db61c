"""``TextSearch``: a screen of read-only text (graphs, an event's text) searched with ``/``, as
in ``less``, through its ``SearchLine``; ``w`` wraps long lines. The search line's styles are
in ``text_search.tcss``, which its screens load."""

from __future__ import annotations

from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Input, TextArea

from warmscope.tui.widgets.search_line import SearchLine

TEXT_KEYS: list[BindingType] = [
    # Priority, so that what is typed right after `/` lands in the search line.
    Binding("slash", "search", "Find", id="text-search", priority=True),
    Binding("n", "search_next(1)", "Next", id="text-search-next", show=False),
    Binding("N", "search_next(-1)", "Previous", id="text-search-previous", show=False),
    Binding("w", "wrap", "Wrap", id="text-wrap", tooltip="Wrap long lines, or cut them"),
]
"""The keys of a screen of read-only text with a ``SearchLine``: ``TextSearch`` acts on them."""
TEXT_ACTIONS = ("search", "search_next", "wrap")


class TextSearch(ModalScreen[None]):
    """A screen of read-only ``TextArea`` s with a ``SearchLine``: Esc clears the search first."""

    def _text_areas(self) -> list[TextArea]:
        return [t for t in self.query(TextArea) if t.display and t.region.width]

    def action_search(self) -> None:
        focused = self.focused
        if isinstance(focused, Input):
            raise SkipAction()
        found = self.query(SearchLine)
        areas = self._text_areas()
        target = focused if isinstance(focused, TextArea) else (areas[0] if areas else None)
        if found and target is not None:
            found.first().open(target)

    def action_search_next(self, direction: int) -> None:
        found = self.query(SearchLine)
        if found:
            found.first().next(direction)

    def action_wrap(self) -> None:
        areas = list(self.query(TextArea))
        wrap = not (areas and areas[0].soft_wrap)
        for area in areas:
            area.soft_wrap = wrap
        self.notify("long lines wrapped" if wrap else "long lines cut (← → scroll)", timeout=2)

    def action_dismiss(self) -> None:  # type: ignore[override]
        found = self.query(SearchLine)
        if found and found.first().cancel():
            return
        self.dismiss(None)
