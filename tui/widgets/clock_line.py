"""``ClockLine``: a line of text rewritten every second or faster (a live sweep's progress,
a warm-up's status, with their clocks).

A ``Static`` updated with new text lays out its whole screen, since the text may take more or
fewer lines; over a modal screen the dimmed screen under it is drawn again too. A clock line
that stays on one line keeps its size: it is laid out only where it may not.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static


class ClockLine(Static):
    """A ``Static`` whose ``show`` lays the screen out only where the line may wrap."""

    _shown = ""
    """The text drawn."""

    def show(self, text: str, style: str = "dim") -> None:
        width = self.content_size.width
        one_line = width > 0 and cell_len(text) <= width and cell_len(self._shown) <= width
        self.update(Text(text, style=style), layout=not one_line)
        self._shown = text
