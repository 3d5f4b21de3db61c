"""``EventDetailScreen``: the full text of events (a whole graph dump, a guard failure);
``/`` finds text in it, ``w`` wraps long lines."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult, CSSPathType
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static, TextArea

from warmscope.core.data.run import Event
from warmscope.tui.screens.text_search import TEXT_KEYS, TextSearch
from warmscope.tui.widgets.keys_footer import KeysFooter
from warmscope.tui.widgets.search_line import SearchLine


def event_text(events: list[Event]) -> str:
    """Each event under a heading line with its kind, place and title."""
    parts = []
    for ev in events:
        where = f"iteration {ev.iteration}" if ev.iteration is not None else f"phase {ev.phase}"
        extra = f" · {ev.ms:.1f} ms" if ev.ms is not None else ""
        head = f"── {ev.kind} · {where}{extra} · {ev.title}"
        parts.append(head + ("\n" + ev.text.rstrip() if ev.text.strip() else ""))
    return "\n\n".join(parts) + "\n"


class EventDetailScreen(TextSearch):
    """Scrollable, selectable, read-only; Escape closes."""

    CSS_PATH: ClassVar[CSSPathType | None] = [
        "event_screen.tcss",
        "text_search.tcss",
    ]  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="close"),
        *TEXT_KEYS,
    ]

    def __init__(self, events: list[Event], iteration: int | None = None) -> None:
        super().__init__()
        self.events = events
        self.iteration = iteration

    def compose(self) -> ComposeResult:
        if self.iteration is not None:
            title = f"iteration {self.iteration}: {len(self.events)} event(s)"
        else:
            ev = self.events[0]
            title = f"{ev.kind}: {ev.title}"
        with Vertical(id="detail-box"):
            yield Static(title, id="detail-title", markup=False)
            yield TextArea(
                event_text(self.events),
                read_only=True,
                soft_wrap=True,
                show_line_numbers=False,
                id="detail-text",
            )
            yield SearchLine(id="detail-search")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()
