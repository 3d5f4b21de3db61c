"""``TextLines``: a widget drawn from lines of styled runs, turned into strips once per change.

Charts change a few times a second and hold hundreds of styled cells; going through the
Line API (one cached ``Strip`` per line, built straight from the runs) keeps a redraw to the
cost of computing the lines. A redraw compares the new strips with those on screen and
refreshes only the cells that differ (``Widget.refresh`` of regions): Textual then renders and
writes only those, so a chart whose completed columns never change sends one column.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from warmscope.core.base.safe_text import clean_line
from warmscope.tui.drawing.chart import Line


def _cells(strip: Strip) -> list[tuple[str, Style | None]] | None:
    """One ``(character, style)`` a cell; None when a character is not one cell wide."""
    cells: list[tuple[str, Style | None]] = []
    for text, style, _ in strip:
        if len(text) != Segment(text).cell_length:
            return None
        cells.extend((ch, style) for ch in text)
    return cells


def changed_regions(old: list[Strip], new: list[Strip], width: int) -> list[Region]:
    """The regions (one a changed line, from its first to its last changed cell) where
    ``new`` differs from ``old``; lines only one of them has count as changed."""
    regions = []
    for y in range(max(len(old), len(new))):
        a = old[y] if y < len(old) else None
        b = new[y] if y < len(new) else None
        if a is not None and b is not None:
            if list(a) == list(b):
                continue
            ca, cb = _cells(a), _cells(b)
            if ca is not None and cb is not None and len(ca) == len(cb):
                first = next(x for x in range(len(ca)) if ca[x] != cb[x])
                last = next(x for x in range(len(ca) - 1, -1, -1) if ca[x] != cb[x])
                regions.append(Region(first, y, last - first + 1, 1))
                continue
        regions.append(Region(0, y, width, 1))
    return regions


class TextLines(Widget):
    """Subclasses implement ``build_lines``; ``redraw`` marks them stale."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._version = 0
        self._key: tuple[Size, int] | None = None
        self._strips: list[Strip] = []
        self._titles: tuple[str, str] | None = None
        self.repainted: list[Region] | None = None
        """What the last redraw refreshed: its regions, or None for the whole widget."""

    def build_lines(self, width: int, height: int) -> list[Line] | list[Text]:
        raise NotImplementedError

    def set_titles(self, title: str, subtitle: str) -> None:
        """Set the border's titles; only when they change, as setting one repaints it all."""
        if self._titles != (title, subtitle):
            self._titles = (title, subtitle)
            self.border_title = title
            self.border_subtitle = subtitle

    def redraw(self) -> None:
        """Draw again: at once, refreshing only the changed cells, when the widget is on
        screen at the size of its last drawing; else all of it when next painted."""
        self._version += 1
        size = self.size
        if self._key is None or self._key[0] != size or not self.is_mounted or not size:
            self.repainted = None
            self.refresh()
            return
        old = self._strips
        self._build(size)
        self.repainted = changed_regions(old, self._strips, size.width)
        if self.repainted:
            self.refresh(*self.repainted)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._key = None

    def _strip(self, line: Line | Text, width: int, base: Style, styles: dict[int, Style]) -> Strip:
        if isinstance(line, Text):
            segments = [
                seg if seg.text.isprintable() else Segment(clean_line(seg.text), seg.style)
                for seg in line.render(self.app.console, end="")
            ]
        else:
            segments = []
            for text, style in line:
                if not text.isprintable():  # a name or child text that escaped its cleaning
                    text = clean_line(text)
                if style is None:
                    segments.append(Segment(text, base))
                    continue
                combined = styles.get(id(style))
                if combined is None:
                    combined = styles[id(style)] = base + style
                segments.append(Segment(text, combined))
        return Strip(segments).crop_extend(0, width, base).simplify()

    def _build(self, size: Size) -> None:
        base = self._base = self.rich_style
        styles: dict[int, Style] = {}
        lines = self.build_lines(size.width, size.height)[: size.height]
        self._strips = [self._strip(line, size.width, base, styles) for line in lines]
        self._key = (size, self._version)

    def render_line(self, y: int) -> Strip:
        size = self.size
        if self._key != (size, self._version):
            self._build(size)
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(size.width, self._base)

    _base = Style()
