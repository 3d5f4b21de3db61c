"""Latency charts drawn with text: bars in eighth blocks, overlays in braille.

Pure functions from a ``LatencySeries`` to lines of styled runs (``Line``); the widgets give them
their size and their styles, and turn each line into a strip at once. Meaning never rests on colour alone (``NO_COLOR``): event marks are
letters, the warm-up region is a heavy rule under the axis, the steady p50 a dashed line.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.style import Style
from rich.text import Text

from warmscope.tui import fmt
from warmscope.tui.series import MARK_LETTER, Column, LatencySeries

BLOCKS = " ▁▂▃▄▅▆▇█"
AXIS_W = 8  # a 7-character value label and the axis line


@dataclass
class ChartStyles:
    """Rich styles for the parts of a chart (the widget reads them from its CSS)."""

    bar: Style = field(default_factory=lambda: Style(color="cyan"))
    peak: Style = field(default_factory=lambda: Style(color="blue"))
    warmup: Style = field(default_factory=lambda: Style(color="yellow", bgcolor="grey11"))
    p50: Style = field(default_factory=lambda: Style(color="green"))
    axis: Style = field(default_factory=lambda: Style(dim=True))
    marks: dict[int, Style] = field(default_factory=dict)
    a: Style = field(default_factory=lambda: Style(color="cyan"))
    b: Style = field(default_factory=lambda: Style(color="magenta"))
    both: Style = field(default_factory=lambda: Style(color="white"))


def _scale(lo: float, hi: float, log: bool) -> tuple[float, float, Callable[[float], float]]:
    """(bottom, top, value -> fraction of the height) for values in ``[lo, hi]``."""
    if log:
        lo = max(lo, 1e-6)
        hi = max(hi, lo * 1.5)
        bottom, top = lo / 1.25, hi * 1.05
        span = math.log(top) - math.log(bottom)
        return bottom, top, lambda v: (math.log(max(v, bottom)) - math.log(bottom)) / span
    top = max(hi, 1e-6) * 1.05
    return 0.0, top, lambda v: max(v, 0.0) / top


def _bg(style: Style | None) -> Style | None:
    return Style(bgcolor=style.bgcolor) if style is not None and style.bgcolor else None


def _fg_bg(fg: Style, bg: Style | None) -> Style:
    """``fg``'s colour on ``bg``'s background colour (or ``bg``'s colour, for a peak)."""
    if bg is None:
        return Style(color=fg.color)
    return Style(color=fg.color, bgcolor=bg.bgcolor or bg.color)


class Line(list[tuple[str, "Style | None"]]):
    """One chart line as runs of ``(text, style)``: cheap to turn into a ``Strip``."""

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self)

    @property
    def cell_len(self) -> int:
        return sum(len(text) for text, _ in self)

    def to_text(self) -> Text:
        text = Text()
        for chunk, style in self:
            text.append(chunk, style=style or "")
        return text


class _Row:
    """Builds one line, one run per stretch of cells in the same style (not one per cell)."""

    def __init__(self) -> None:
        self.line = Line()
        self._chars: list[str] = []
        self._style: Style | None = None

    def add(self, chars: str, style: Style | None = None) -> None:
        if style is not self._style:  # the same few objects: identity is enough
            self._flush()
            self._style = style
        self._chars.append(chars)

    def _flush(self) -> None:
        if self._chars:
            self.line.append(("".join(self._chars), self._style))
            self._chars = []

    def done(self) -> Line:
        self._flush()
        return self.line


def _label(value: float) -> str:
    return fmt.ms(value).rjust(AXIS_W - 1)[: AXIS_W - 1]


def _message(text: str, height: int) -> list[Line]:
    return [Line([(text, Style(dim=True))])] + [Line() for _ in range(max(0, height - 1))]


def too_small(width: int, height: int, what: str = "chart") -> list[Line]:
    return _message(f"{what}: enlarge the terminal", height)


def latency_chart(
    series: LatencySeries,
    width: int,
    height: int,
    *,
    log: bool = True,
    steady_from: int | None = None,
    p50: float | None = None,
    stop: int | None = None,
    styles: ChartStyles | None = None,
) -> list[Line]:
    """Bars of each column's mean (bright) and maximum (dim), with marks, warm-up and p50.

    Row 0 holds the event marks, the last row the iteration axis.
    """
    st = styles or ChartStyles()
    pw, ph = width - AXIS_W, height - 2
    if pw < 8 or ph < 2:
        return too_small(width, height)
    cols = series.columns(pw, stop)
    if not cols:
        return _message("waiting for the first iteration…", height)
    bottom, top, frac = _scale(min(c.lo for c in cols), max(c.hi for c in cols), log)
    eighths = ph * 8
    mean_h = [max(1, round(frac(c.mean) * eighths)) for c in cols]
    peak_h = [max(m, round(frac(c.hi) * eighths)) for c, m in zip(cols, mean_h, strict=True)]
    warm = [steady_from is not None and c.first < steady_from for c in cols]
    p50_row = None
    if p50 is not None and bottom <= p50 <= top:
        p50_row = min(ph - 1, int(frac(p50) * ph))
    warm_bg = _bg(st.warmup)
    peak_bg = Style(bgcolor=st.peak.color) if st.peak.color else None

    labels = {ph - 1: _label(top), 0: _label(bottom)}
    if p50_row is not None:
        labels[p50_row] = _label(p50)  # type: ignore[arg-type]

    lines: list[Line] = []
    marks = _Row()
    marks.add(f"{'events':>{AXIS_W - 1}} ", st.axis)
    for c in cols:
        if c.mark:
            marks.add(MARK_LETTER[c.mark], st.marks.get(c.mark, Style(bold=True)))
        else:
            marks.add(" ")
    lines.append(marks.done())

    # The few styles a cell can take, built once rather than per cell.
    bar_on = {
        None: _fg_bg(st.bar, None),
        "warm": _fg_bg(st.bar, warm_bg),
        "peak": _fg_bg(st.bar, peak_bg),
    }
    peak_on = {None: _fg_bg(st.peak, None), "warm": _fg_bg(st.peak, warm_bg)}
    p50_on = {None: _fg_bg(st.p50, None), "warm": _fg_bg(st.p50, warm_bg)}
    blank_on = {None: None, "warm": warm_bg}
    for r in range(ph - 1, -1, -1):  # top row first; r counts from the bottom
        line = _Row()
        tick = "┼" if r == p50_row else "┤" if r in (0, ph - 1) else "│"
        label_style = st.p50 if r == p50_row else st.axis
        line.add(labels.get(r, " " * (AXIS_W - 1)), label_style)
        line.add(tick, st.axis)
        lo8, hi8 = r * 8, (r + 1) * 8
        for i in range(len(cols)):
            region = "warm" if warm[i] else None
            m, p = mean_h[i], peak_h[i]
            if m >= hi8:
                line.add("█", st.bar)
            elif m > lo8:
                line.add(BLOCKS[m - lo8], bar_on["peak" if p >= hi8 and peak_bg else region])
            elif p >= hi8:
                line.add("█", st.peak)
            elif p > lo8:
                line.add(BLOCKS[p - lo8], peak_on[region])
            elif r == p50_row:
                line.add("╌", p50_on[region])
            else:
                line.add(" ", blank_on[region])
        lines.append(line.done())

    lines.append(_x_axis(cols, warm, st))
    return lines


def _x_axis(cols: list[Column], warm: list[bool], st: ChartStyles) -> Line:
    width = len(cols)
    chars = ["━" if w else "─" for w in warm]
    styles = [st.warmup if w else st.axis for w in warm]
    first, last = str(cols[0].first), str(cols[-1].last)
    warm_cols = sum(warm)
    text = "warm-up"
    if warm_cols >= len(text) + 2:
        start = max(len(first) + 1, (warm_cols - len(text)) // 2)
        if start + len(text) < warm_cols:
            chars[start : start + len(text)] = list(text)
    if width > len(first) + len(last) + 2:
        chars[: len(first)] = list(first)
        chars[width - len(last) :] = list(last)
        for k in range(width - len(last), width):
            styles[k] = st.axis
    line = _Row()
    line.add(" " * (AXIS_W - 1) + "└", st.axis)
    for ch, style in zip(chars, styles, strict=True):
        line.add(ch, style)
    return line.done()


# Braille dots: (x, y) with x in 0..1 and y in 0..3 from the top.
_DOT = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


def overlay_chart(
    a: LatencySeries,
    b: LatencySeries,
    width: int,
    height: int,
    *,
    log: bool = True,
    stop: int | None = None,
    steady: tuple[int | None, int | None] = (None, None),
    styles: ChartStyles | None = None,
) -> list[Line]:
    """Two runs' mean latency per column as braille lines over the same iterations."""
    st = styles or ChartStyles()
    pw, ph = width - AXIS_W, height - 1
    if pw < 8 or ph < 2:
        return too_small(width, height)
    n = min(a.count, b.count) if stop is None else stop
    ca, cb = a.columns(pw * 2, n), b.columns(pw * 2, n)
    if not ca or not cb:
        return _message("nothing to compare yet", height)
    lo = min(min(c.mean for c in ca), min(c.mean for c in cb))
    hi = max(max(c.mean for c in ca), max(c.mean for c in cb))
    bottom, top, frac = _scale(lo, hi, log)
    rows = ph * 4
    bits = [[[0, 0] for _ in range(pw)] for _ in range(ph)]  # [row][col] -> [a bits, b bits]
    for which, cols in enumerate((ca, cb)):
        prev: int | None = None
        for x, c in enumerate(cols):
            y = min(rows - 1, max(0, rows - 1 - int(frac(c.mean) * (rows - 1) + 0.5)))
            span = range(min(prev, y), max(prev, y) + 1) if prev is not None else range(y, y + 1)
            for yy in span:
                bits[yy // 4][x // 2][which] |= _DOT[x % 2][yy % 4]
            prev = y
    labels = {0: _label(top), ph - 1: _label(bottom)}
    if ph >= 5:
        mid_frac = 1 - (ph // 2 + 0.5) / ph
        if log:
            mid = math.exp(math.log(bottom) + mid_frac * (math.log(top) - math.log(bottom)))
        else:
            mid = bottom + mid_frac * (top - bottom)
        labels[ph // 2] = _label(mid)
    lines = []
    for r in range(ph):
        line = _Row()
        line.add(labels.get(r, " " * (AXIS_W - 1)), st.axis)
        line.add("┤" if r in labels else "│", st.axis)
        for ab in bits[r]:
            both = ab[0] | ab[1]
            if not both:
                line.add(" ")
                continue
            style = st.both if ab[0] and ab[1] else st.a if ab[0] else st.b
            line.add(chr(0x2800 + both), style)
        lines.append(line.done())
    axis = ["─"] * pw
    axis_styles: list[Style] = [st.axis] * pw
    last = str(n - 1)
    if pw > len(last) + 4:
        axis[0] = "0"
        axis[pw - len(last) :] = list(last)
    for letter, at, style in (("A", steady[0], st.a), ("B", steady[1], st.b)):
        if at is not None and 0 <= at < n:
            x = min(pw - 1, at * pw // n)
            axis[x] = "*" if axis[x] in "AB" and axis[x] != letter else letter
            axis_styles[x] = style
    x_line = _Row()
    x_line.add(" " * (AXIS_W - 1) + "└", st.axis)
    for ch, ch_style in zip(axis, axis_styles, strict=True):
        x_line.add(ch, ch_style)
    lines.append(x_line.done())
    return lines


def sparkline(values: list[float], width: int, *, top: float | None = None) -> str:
    """The newest ``width`` values as eighth blocks from zero to ``top`` (or their maximum)."""
    values = values[-width:] if width > 0 else []
    if not values:
        return ""
    ceiling = max(top or 0.0, max(values)) or 1.0
    return "".join(BLOCKS[max(1, min(8, round(8 * v / ceiling)))] for v in values)
