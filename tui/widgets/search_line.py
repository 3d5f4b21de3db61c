"""``SearchLine``: ``/`` over read-only text (graphs, an event's text), as in ``less``.

A line under the text: what is typed is found as it is typed (from where the search began),
Enter keeps it and gives the focus back to the text, n/N go to the next/previous match, Esc
clears. A match is selected in its ``TextArea``: highlighted, and scrolled into view.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Label, Static, TextArea
from textual.widgets.text_area import Selection


def find(text: str, term: str, at: int, direction: int) -> int | None:
    """Index of ``term`` (lower case) in ``text``: the first at or after ``at`` (``1``), the
    last before it (``-1``), wrapping round; ``None`` when it is nowhere."""
    low = text.lower()
    if not term:
        return None
    if direction >= 0:
        found = low.find(term, at)
        found = found if found >= 0 else low.find(term)
    else:
        found = low.rfind(term, 0, max(0, at))
        found = found if found >= 0 else low.rfind(term)
    return found if found >= 0 else None


def location(text: str, index: int) -> tuple[int, int]:
    """``(row, column)`` of ``index`` in ``text``."""
    return text.count("\n", 0, index), index - (text.rfind("\n", 0, index) + 1)


def index_of(text: str, where: tuple[int, int]) -> int:
    """The index in ``text`` of ``(row, column)``."""
    at = 0
    for _ in range(where[0]):
        at = text.find("\n", at) + 1
        if at == 0:
            return len(text)
    return min(len(text), at + where[1])


class SearchLine(Horizontal):
    """Hidden until ``open``; its screen binds the keys and asks it what to do with Esc."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="search-line")
        self.target: TextArea | None = None
        self.term = ""
        self._from: Selection | None = None

    def compose(self) -> ComposeResult:
        yield Label("/", classes="search-line-label")
        yield Input(placeholder="find in the text", compact=True, classes="search-line-input")
        yield Static("", classes="search-line-found", markup=False)

    def on_mount(self) -> None:
        self.display = False

    @property
    def typing(self) -> bool:
        return self.query_one(Input).has_focus

    def open(self, target: TextArea) -> None:
        """Take what is typed next as the search in ``target``."""
        self.target = target
        self._from = target.selection
        self.display = True
        line = self.query_one(Input)
        line.can_focus = True
        line.value = ""
        # At once, not after the queue: "/text" typed fast must land in the line.
        self.screen.set_focus(line, scroll_visible=False)

    @on(Input.Changed)
    def changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.target is not None and self._from is not None:
            self._select(event.value.lower(), self._index(self._from.start), 1)

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.term = event.value.lower()
        self._close()

    def cancel(self) -> bool:
        """Esc: close the line (back where the search began), else forget the search; False
        when there was nothing to do (Esc closes the screen then)."""
        if self.typing:
            self.term = ""
            if self.target is not None and self._from is not None:
                self.target.selection = self._from
            self._close()
            return True
        if self.term:
            self.term = ""
            if self.target is not None:
                self.target.selection = Selection.cursor(self.target.selection.end)
            self._close()
            return True
        return False

    def next(self, direction: int) -> None:
        """n / N: the next or previous match in the text the search was made in."""
        target = self.target
        if target is None or not self.term:
            return
        sel = target.selection
        at = self._index(max(sel.start, sel.end) if direction > 0 else min(sel.start, sel.end))
        self._select(self.term, at, direction)

    def _index(self, where: tuple[int, int]) -> int:
        return index_of(self.target.text, where) if self.target is not None else 0

    def _select(self, term: str, at: int, direction: int) -> None:
        target = self.target
        if target is None:
            return
        found = find(target.text, term, at, direction)
        if found is None:
            self._say(f"no match for {term!r}" if term else "")
            return
        text = target.text
        target.selection = Selection(location(text, found), location(text, found + len(term)))
        target.scroll_cursor_visible(center=True)
        total = target.text.lower().count(term)
        nth = target.text.lower().count(term, 0, found) + 1
        self._say(f"{nth}/{total}" + (" · n N" if total > 1 else ""))

    def _say(self, text: str) -> None:
        self.query_one(".search-line-found", Static).update(text)

    def _close(self) -> None:
        self.display = self.term != ""  # a kept search stays in view: what n and N look for
        self.query_one(Input).can_focus = False  # Tab goes between the texts
        if self.target is not None:
            self.screen.set_focus(self.target, scroll_visible=False)
