"""``TextLines``: a widget drawn from lines of styled runs, turned into strips once per change.

Charts change a few times a second and hold hundreds of styled cells; going through the
Line API (one cached ``Strip`` per line, built straight from the runs) keeps a redraw to the
cost of computing the lines.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from warmscope.tui.chart import Line


class TextLines(Widget):
    """Subclasses implement ``build_lines``; ``redraw`` marks them stale."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._version = 0
        self._key: tuple[Size, int] | None = None
        self._strips: list[Strip] = []

    def build_lines(self, width: int, height: int) -> list[Line] | list[Text]:
        raise NotImplementedError

    def redraw(self) -> None:
        self._version += 1
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._key = None

    def _strip(self, line: Line | Text, width: int, base: Style, styles: dict[int, Style]) -> Strip:
        if isinstance(line, Text):
            segments = list(line.render(self.app.console, end=""))
        else:
            segments = []
            for text, style in line:
                if style is None:
                    segments.append(Segment(text, base))
                    continue
                combined = styles.get(id(style))
                if combined is None:
                    combined = styles[id(style)] = base + style
                segments.append(Segment(text, combined))
        return Strip(segments).crop_extend(0, width, base)

    def render_line(self, y: int) -> Strip:
        size = self.size
        if self._key != (size, self._version):
            base = self._base = self.rich_style
            styles: dict[int, Style] = {}
            lines = self.build_lines(size.width, size.height)[: size.height]
            self._strips = [self._strip(line, size.width, base, styles) for line in lines]
            self._key = (size, self._version)
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(size.width, self._base)

    _base = Style()
