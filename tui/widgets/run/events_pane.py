"""``EventsPane``: JIT and compiler events and warnings, each with its iteration.

``/`` searches them as ``less`` does (typed in the pane's header line; Enter keeps it, n/N go
to the next/previous match, Esc clears), and a kind filter shows one kind of event only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import events

from warmscope.core.data.run import Event
from warmscope.tui.run_view import RunView
from warmscope.tui.widgets.row_list import RowList

KIND_W = 9
KIND_STYLE = {"warning": "warn", "recompile": "error", "compile": "accent", "knob": "warn"}


def where(ev: Event) -> str:
    """``#12`` for an iteration, the phase name (shortened) otherwise."""
    if ev.iteration is not None:
        return f"#{ev.iteration}"
    return (ev.phase or "setup")[:7]


def matches(ev: Event, query: str) -> bool:
    """Whether ``query`` (lower case) is in the event's place, kind, title or full text."""
    return any(query in s.lower() for s in (where(ev), ev.kind, ev.title, ev.text))


def split_on(text: str, query: str) -> list[tuple[str, bool]]:
    """``text`` cut around each (case-insensitive) occurrence of ``query``: (piece, is_match)."""
    if not query:
        return [(text, False)]
    low, parts, at = text.lower(), [], 0
    while (found := low.find(query, at)) >= 0:
        if found > at:
            parts.append((text[at:found], False))
        parts.append((text[found : found + len(query)], True))
        at = found + len(query)
    if at < len(text):
        parts.append((text[at:], False))
    return parts


class EventsPane(RowList):
    """Rows are ``Event`` objects (not stderr ones: those go to the stderr pane)."""

    empty_text = "no events: JIT logs, compiles, recompiles, graph breaks and warnings land here"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.source: Sequence[Event] = ()
        """Every event the pane was given; ``rows`` are those the kind filter lets through."""
        self.kind: str | None = None
        self.term = ""
        """The search kept with Enter (lower case); ``draft`` is the one being typed."""
        self.draft: str | None = None
        self._draft_from = 0
        self._hits: tuple[tuple[Any, ...], list[int]] = ((), [])

    # -- data -----------------------------------------------------------------------------

    def show_view(self, view: RunView) -> None:
        self.show_rows(view.events, view.events_total - len(view.events), follow=not view.finished)

    def show_rows(self, rows: Sequence[Any], dropped: int = 0, *, follow: bool = True) -> None:
        self.source = rows
        super().show_rows(self._filtered(), dropped, follow=follow)

    def _filtered(self) -> Sequence[Event]:
        kind = self.kind
        return self.source if kind is None else [e for e in self.source if e.kind == kind]

    def sync(self, dropped: int | None = None) -> None:
        if self.kind is None:
            super().sync(dropped)
            return
        # A filtered list is rebuilt: keep the cursor on its event, not on its position.
        current = self.current_row()
        rows = self._filtered()
        at = next((i for i, e in enumerate(rows) if e is current), 0)
        self.place(rows, at, self.following)
        super().sync()
        if dropped is not None:
            self.dropped = dropped

    def kinds(self) -> list[str]:
        """The kinds of event present, in the order they first came."""
        return list(dict.fromkeys(e.kind for e in self.source))

    def filter_next(self) -> str | None:
        """Show only the next kind present (after the last: every kind again)."""
        kinds = self.kinds()
        at = kinds.index(self.kind) + 1 if self.kind in kinds else 0
        self.set_filter(kinds[at] if at < len(kinds) else None)
        return self.kind

    def set_filter(self, kind: str | None) -> None:
        current = self.current_row()
        self.kind = kind
        rows = self._filtered()
        found = next((i for i, e in enumerate(rows) if e is current), None)
        if found is None:
            self.place(rows, len(rows) - 1, True)
        else:
            self.place(rows, found, found == len(rows) - 1)
        super().sync()
        self._show_cursor()

    # -- searching ------------------------------------------------------------------------

    def hits(self) -> list[int]:
        """Indexes of the rows the search matches (cached until the rows or the query move)."""
        key = (self.term, id(self.rows), len(self.rows), self.dropped, self.kind)
        if self._hits[0] != key:
            q = self.term
            self._hits = (key, [i for i, e in enumerate(self.rows) if q and matches(e, q)])
        return self._hits[1]

    def start_search(self) -> None:
        """Take what is typed next as the search, in the header line."""
        self.draft = ""
        self._draft_from = max(0, self.cursor)
        self.refresh()

    def search(self, query: str) -> bool:
        """Search for ``query`` from the cursor on (then from the top); False: no match."""
        self.term = query.lower()
        self.draft = None
        return self.search_next(0)

    def search_next(self, direction: int, start: int | None = None) -> bool:
        """The next match after the cursor (``1``), before it (``-1``), or at it (``0``); or
        after, before, at ``start``."""
        hits = self.hits()
        if not hits:
            self.refresh()
            return False
        c = self.cursor if start is None else start
        if direction < 0:
            before = [i for i in hits if i < c]
            target = before[-1] if before else hits[-1]
        else:
            after = [i for i in hits if (i >= c if direction == 0 else i > c)]
            target = after[0] if after else hits[0]
        self.move_to(target)
        return True

    def clear(self) -> bool:
        """Esc: the search goes, then the filter; False when there was neither."""
        if self.term:
            self.term = ""
            self.refresh()
            return True
        if self.kind is not None:
            self.set_filter(None)
            return True
        return False

    def on_key(self, event: events.Key) -> None:
        if self.draft is None:
            if event.key == "escape" and self.clear():
                event.stop()
            return
        event.stop()
        event.prevent_default()
        if event.key == "escape":
            self.draft = None
            self.move_to(self._draft_from)
        elif event.key == "enter":
            self.search(self.draft)
        elif event.key == "backspace" or (event.is_printable and event.character):
            draft = (
                self.draft[:-1] if event.key == "backspace" else self.draft + str(event.character)
            )
            # As you type: the first match from where the search began.
            self.term, self.draft = draft.lower(), draft
            self.search_next(0, start=self._draft_from)
            self.term = ""
        self.refresh()

    # -- drawing --------------------------------------------------------------------------

    def state_text(self) -> str:
        """What the pane shows of its filter and search, in its header."""
        parts = []
        if self.kind is not None:
            parts.append(f"only {self.kind} ({len(self.rows)}) · f next, esc all")
        if self.draft is not None:
            parts.append(f"/{self.draft}▏ ⏎ find, esc cancel")
        elif self.term:
            hits = self.hits()
            at = hits.index(self.cursor) + 1 if self.cursor in hits else "-"
            found = f"{at}/{len(hits)} · n N" if hits else "no match"
            parts.append(f"/{self.term}: {found}")
        return " · ".join(parts)

    def header_text(self) -> Text:
        state = self.state_text()
        head = Text(f"{'where':>7} {'kind':<{KIND_W}} ")
        if state:
            head.append(state, style="reverse")  # the pane's mode, seen without colour too
        else:
            head.append("title")
        return head

    def row_cells(self, ev: Event) -> list[tuple[str, str]]:
        title = " " + ev.title.replace("\n", " ")
        q = self.draft.lower() if self.draft else self.term
        pieces = split_on(title, q)
        hidden = bool(q) and len(pieces) == 1 and matches(ev, q)  # a match in the full text
        return [
            (f"{where(ev):>7}", "match" if hidden else ""),
            (" ", ""),
            (f"{ev.kind:<{KIND_W}}", KIND_STYLE.get(ev.kind, "dim")),
            *((piece, "match" if hit else "") for piece, hit in pieces),
        ]
