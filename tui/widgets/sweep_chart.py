"""``SweepChart``: a sweep's first iterations, one strip per cell (``drawing/sweep_strips.py``),
drawn at the widget's width whenever it renders."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from warmscope.tui.drawing.sweep_strips import Strip, draw


class SweepChart(Widget):
    """The strips of a sweep, redrawn at the widget's width."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: list[Strip] = []

    def show(self, rows: list[Strip]) -> None:
        self.rows = rows
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(draw(self.rows, width))

    def render(self) -> Text:
        return Text("\n").join(draw(self.rows, self.content_size.width or 80))
