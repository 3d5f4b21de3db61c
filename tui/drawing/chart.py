"""Latency charts drawn with text: bars in eighth blocks, overlays in braille.

Pure functions from a ``LatencySeries`` to lines of styled runs (``Line``); the widgets give them
their size and their styles, and turn each line into a strip at once. Meaning never rests on colour alone (``NO_COLOR``): event marks are
letters, the warm-up region is a heavy rule under the axis, the steady p50 a dashed line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.style import Style

from warmscope.tui import fmt
from warmscope.tui.drawing.series import MARK_LETTER, Column, LatencySeries, mark_bits
from warmscope.tui.glyphs import current

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
    runs: tuple[Style, ...] = tuple(
        Style(color=c) for c in ("cyan", "magenta", "yellow", "green", "blue", "red")
    )
    """Each overlaid run's colour, A first."""
    both: Style = field(default_factory=lambda: Style(color="white"))


def nice_up(value: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``value``."""
    exp = 10.0 ** math.floor(math.log10(max(value, 1e-9)))
    return next(m * exp for m in (1, 2, 5, 10) if m * exp >= value * (1 - 1e-12))


def nice_down(value: float) -> float:
    """The largest of 1, 2, 5 times a power of ten that is at most ``value``."""
    exp = 10.0 ** math.floor(math.log10(max(value, 1e-9)))
    return next(m * exp for m in (5, 2, 1, 0.5) if m * exp <= value * (1 + 1e-12))


@dataclass
class ScaleHold:
    """A chart's value range, kept while the values stay well inside it (hysteresis): a new
    maximum a little above the last one changes nothing, so the bars drawn stay as they are.
    A bound moves, to a round value with room to spare, only when a value leaves the range or
    leaves most of it empty."""

    log: bool | None = None
    bottom: float = 0.0
    top: float = 0.0

    def fit(self, lo: float, hi: float, log: bool) -> tuple[float, float]:
        lo, hi = max(lo, 1e-6), max(hi, 1e-6)
        if log is not self.log:
            self.log, self.bottom, self.top = log, 0.0, 0.0
        if not (hi <= self.top and hi * (8 if log else 4) > self.top):
            self.top = nice_up(hi * 1.25)
        if not log:
            self.bottom = 0.0
        elif not (self.bottom <= lo and lo < self.bottom * 8):
            self.bottom = nice_down(lo / 1.25)
        if log and self.top < self.bottom * 2:
            self.top = nice_up(self.bottom * 2)
        return self.bottom, self.top


def _frac(bottom: float, top: float, log: bool) -> Callable[[float], float]:
    """Value -> fraction of the height between ``bottom`` and ``top``."""
    if log:
        span = math.log(top) - math.log(bottom)
        return lambda v: (math.log(max(v, bottom)) - math.log(bottom)) / span
    return lambda v: max(v, 0.0) / top


def _scale(lo: float, hi: float, log: bool) -> tuple[float, float, Callable[[float], float]]:
    """(bottom, top, value -> fraction of the height) for values in ``[lo, hi]``."""
    if log:
        lo = max(lo, 1e-6)
        hi = max(hi, lo * 1.5)
        bottom, top = lo / 1.25, hi * 1.05
    else:
        bottom, top = 0.0, max(hi, 1e-6) * 1.05
    return bottom, top, _frac(bottom, top, log)


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


def mark_letter(priority: int) -> str:
    return current().event if priority == 1 else MARK_LETTER[priority]


def mark_cells(cols: list[Column], width: int) -> list[int]:
    """The mark drawn in each of ``width`` cells (0: none). A column's strongest mark is drawn
    in it; its other kinds (several iterations in one column) in the free cells after it, so
    that merging columns loses no mark and no mark repeats across columns."""
    cells = [0] * width
    for x, col in enumerate(cols[:width]):
        if col.marks:
            cells[x] = col.mark
    free = 0
    for x, col in enumerate(cols[:width]):
        for priority in mark_bits(col.marks)[1:]:
            free = max(free, x + 1)
            while free < width and cells[free]:
                free += 1
            if free >= width:
                return cells
            cells[free] = priority
    return cells


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
    hold: ScaleHold | None = None,
) -> list[Line]:
    """Bars of each column's mean (bright) and maximum (dim), with marks, warm-up and p50.

    Row 0 holds the event marks, the last row the iteration axis. Column ``c`` always holds
    iterations ``[c*k, (c+1)*k)`` (``series.buckets``) and ``hold`` keeps the value range
    between calls: as a run goes on, only its newest column changes.
    """
    st = styles or ChartStyles()
    pw, ph = width - AXIS_W, height - 2
    if pw < 8 or ph < 2:
        return too_small(width, height)
    _, cols = series.buckets(pw, stop)
    if not cols:
        return _message(f"waiting for the first iteration{current().ellipsis}", height)
    lo, hi = min(c.lo for c in cols), max(c.hi for c in cols)
    bottom, top = (hold or ScaleHold()).fit(lo, hi, log)
    bars = _Bars.of(cols, ph, _frac(bottom, top, log), steady_from, p50, bottom, top)
    labels = {ph - 1: _label(top), 0: _label(bottom)}
    if bars.p50_row is not None:
        labels[bars.p50_row] = _label(p50)  # type: ignore[arg-type]
    lines = [_marks_line(cols, pw, st)]
    cell_styles = _CellStyles(st)
    for r in range(ph - 1, -1, -1):  # top row first; r counts from the bottom
        lines.append(_bar_line(r, bars, labels.get(r), pw, st, cell_styles))
    lines.append(_x_axis(cols[-1].last + 1, len(cols), pw, bars.warm, st))
    return lines


@dataclass
class _Bars:
    """Each column's bar, its heights in eighths of a row: of its mean and of its maximum;
    whether its iterations are in the warm-up; the row the p50 line runs along, if drawn."""

    rows: int
    mean: list[int]
    peak: list[int]
    warm: list[bool]
    p50_row: int | None

    @classmethod
    def of(
        cls,
        cols: list[Column],
        rows: int,
        frac: Callable[[float], float],
        steady_from: int | None,
        p50: float | None,
        bottom: float,
        top: float,
    ) -> _Bars:
        eighths = rows * 8
        mean_h = [max(1, round(frac(c.mean) * eighths)) for c in cols]
        peak_h = [max(m, round(frac(c.hi) * eighths)) for c, m in zip(cols, mean_h, strict=True)]
        warm = [steady_from is not None and c.first < steady_from for c in cols]
        p50_row = None
        if p50 is not None and bottom <= p50 <= top:
            p50_row = min(rows - 1, int(frac(p50) * rows))
        return cls(rows, mean_h, peak_h, warm, p50_row)


class _CellStyles:
    """The few styles a bar chart's cell can take, by region (``None``, ``"warm"``, and for a
    mean's top ``"peak"``: under a peak that fills the cell), built once rather than per cell."""

    def __init__(self, st: ChartStyles) -> None:
        warm_bg = _bg(st.warmup)
        self.peak_bg = Style(bgcolor=st.peak.color) if st.peak.color else None
        self.bar = {
            None: _fg_bg(st.bar, None),
            "warm": _fg_bg(st.bar, warm_bg),
            "peak": _fg_bg(st.bar, self.peak_bg),
        }
        self.peak = {None: _fg_bg(st.peak, None), "warm": _fg_bg(st.peak, warm_bg)}
        self.p50 = {None: _fg_bg(st.p50, None), "warm": _fg_bg(st.p50, warm_bg)}
        self.blank = {None: None, "warm": warm_bg}


def _marks_line(cols: list[Column], width: int, st: ChartStyles) -> Line:
    """The chart's first line: each column's event marks, as letters (``mark_cells``)."""
    marks = _Row()
    marks.add(f"{'events':>{AXIS_W - 1}} ", st.axis)
    for priority in mark_cells(cols, width):
        if priority:
            marks.add(mark_letter(priority), st.marks.get(priority, Style(bold=True)))
        else:
            marks.add(" ")
    return marks.done()


def _bar_line(
    r: int, bars: _Bars, label: str | None, width: int, st: ChartStyles, on: _CellStyles
) -> Line:
    """Row ``r`` of the bars (counted from the bottom): its value label and tick, an eighth
    block of each column's mean or peak (or the p50 line, or blank), then the p50 line over
    the columns still to come."""
    g = current()
    blocks, full = g.blocks, g.blocks[8]
    line = _Row()
    tick = g.cross if r == bars.p50_row else g.tick if r in (0, bars.rows - 1) else g.vline
    label_style = st.p50 if r == bars.p50_row else st.axis
    line.add(" " * (AXIS_W - 1) if label is None else label, label_style)
    line.add(tick, st.axis)
    lo8, hi8 = r * 8, (r + 1) * 8
    for m, p, warm in zip(bars.mean, bars.peak, bars.warm, strict=True):
        region = "warm" if warm else None
        if m >= hi8:
            line.add(full, st.bar)
        elif m > lo8:
            line.add(blocks[m - lo8], on.bar["peak" if p >= hi8 and on.peak_bg else region])
        elif p >= hi8:
            line.add(full, st.peak)
        elif p > lo8:
            line.add(blocks[p - lo8], on.peak[region])
        elif r == bars.p50_row:
            line.add(g.p50, on.p50[region])
        else:
            line.add(" ", on.blank[region])
    drawn = len(bars.mean)
    if drawn < width:  # the columns still to come; the p50 line runs on over them
        line.add(
            (g.p50 if r == bars.p50_row else " ") * (width - drawn),
            on.p50[None] if r == bars.p50_row else None,
        )
    return line.done()


def _x_axis(end: int, end_col: int, width: int, warm: list[bool], st: ChartStyles) -> Line:
    """The iteration axis: 0 on the left, the iterations drawn (``end``) just after the last
    drawn column (``end_col`` columns), the warm-up as a heavy rule. The label says how far the
    run has got, not how far the columns could reach."""
    g = current()
    chars = [g.warm if w else g.hline for w in warm] + [g.hline] * (width - len(warm))
    styles = [st.warmup if w else st.axis for w in warm] + [st.axis] * (width - len(warm))
    first, last = "0", str(end)
    warm_cols = sum(warm)
    text = "warm-up"
    if warm_cols >= len(text) + 2:
        start = max(len(first) + 1, (warm_cols - len(text)) // 2)
        if start + len(text) < warm_cols:
            chars[start : start + len(text)] = list(text)
    chars[: len(first)] = list(first)
    # The end label follows the last drawn column (so drawn columns keep their cells), or
    # ends the axis once the columns fill it.
    at = min(max(end_col, len(first) + 1), width - len(last))
    if at >= len(first) + 1:
        chars[at : at + len(last)] = list(last)
        for k in range(at, at + len(last)):
            styles[k] = st.axis
    line = _Row()
    line.add(" " * (AXIS_W - 1) + g.corner, st.axis)
    for ch, style in zip(chars, styles, strict=True):
        line.add(ch, style)
    return line.done()


# Braille dots: (x, y) with x in 0..1 and y in 0..3 from the top.
_DOT = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


def _dots_per_cell(shapes: bool) -> tuple[int, int]:
    """The points a cell of an overlay holds, across and down: braille's 2×4 dots, or one
    glyph with ``shapes``."""
    return (1, 1) if shapes else (2, 4)


def run_letter(index: int) -> str:
    return chr(ord("A") + index)


def overlay_legend(
    shapes: bool,
    runs: int = 2,
    room: int | None = None,
    paint: Callable[[int, str], str] | None = None,
) -> str:
    """What tells ``runs`` curves apart: each run's letter, after its glyph where shapes tell
    them (``shapes``, or no braille), then the glyph of a cell several share, then what the
    letters on the axis mean. What fits ``room``: all of it, or the runs alone, or those in a
    short form (``•A +B xC *shared``). ``paint`` gives a run's item its colour (markup)."""
    g = current()
    shapes = shapes or not g.braille
    letters = [run_letter(i) for i in range(runs)]
    names = [*letters, "both" if runs == 2 else "shared"]
    marks = [g.runs[i] if shapes else "" for i in range(runs)] + [g.both if shapes else ""]
    named = [f"{m} {name}".strip() for m, name in zip(marks, names, strict=True)]
    short = [f"{m}{name}" for m, name in zip(marks, names, strict=True)]
    axis = f"{'/'.join(letters)} on the axis: steady from"
    forms = [([*named, axis], g.sep), (named, g.sep), (short, " ")]
    items, sep = next((f for f in forms if room is None or len(f[1].join(f[0])) <= room), forms[-1])
    if paint is not None:
        items = [paint(i, item) if i < runs else item for i, item in enumerate(items)]
    return sep.join(items)


def overlay_chart(
    runs: Sequence[LatencySeries],
    width: int,
    height: int,
    *,
    log: bool = True,
    stop: int | None = None,
    steady: Sequence[int | None] = (),
    styles: ChartStyles | None = None,
    shapes: bool = False,
) -> list[Line]:
    """Each run's mean latency per column as a line over the same iterations (those of the
    longest run, ``[0, stop)`` at most): in braille dots
    told apart by colour, or (``shapes``, for ``NO_COLOR`` and ASCII) one glyph a cell, a
    different one for each run. A cell several runs pass through is drawn in the shared
    style (or glyph)."""
    st = styles or ChartStyles()
    shapes = shapes or not current().braille
    pw, ph = width - AXIS_W, height - 1
    if pw < 8 or ph < 2:
        return too_small(width, height)
    sub_x = _dots_per_cell(shapes)[0]
    # The longest run spans the plot; a shorter one (failed, or still running) ends early at
    # its last iteration rather than cutting every other run short.
    counts = [s.count if stop is None else min(s.count, stop) for s in runs]
    n = max(counts, default=0)
    cols = [
        s.columns(max(1, pw * sub_x * c // n) if c else 0, c)
        for s, c in zip(runs, counts, strict=True)
    ]
    if not any(cols):
        return _message("nothing to compare yet", height)
    lo = min(c.mean for run in cols for c in run)
    hi = max(c.mean for run in cols for c in run)
    bottom, top, frac = _scale(lo, hi, log)
    bits = _overlay_dots(cols, pw, ph, frac, shapes)
    labels = _overlay_labels(ph, bottom, top, log)
    run_styles = [st.runs[i % len(st.runs)] for i in range(len(runs))]
    lines = [_overlay_line(bits[r], labels.get(r), shapes, run_styles, st) for r in range(ph)]
    lines.append(_overlay_x_axis(n, pw, steady, len(runs), run_styles, st))
    return lines


def _overlay_dots(
    cols: list[list[Column]],
    width: int,
    rows: int,
    frac: Callable[[float], float],
    shapes: bool,
) -> list[list[list[int]]]:
    """The dots each run sets in each cell, ``[row][col][run]``: braille dots (two across,
    four down), or one a cell with ``shapes``. A run's consecutive points are joined by a
    vertical stroke, so that its curve has no gaps."""
    sub_x, sub_y = _dots_per_cell(shapes)
    dot_rows = rows * sub_y
    bits = [[[0] * len(cols) for _ in range(width)] for _ in range(rows)]
    for which, run in enumerate(cols):
        prev: int | None = None
        for x, c in enumerate(run):
            y = min(dot_rows - 1, max(0, dot_rows - 1 - int(frac(c.mean) * (dot_rows - 1) + 0.5)))
            span = range(min(prev, y), max(prev, y) + 1) if prev is not None else range(y, y + 1)
            for yy in span:
                dot = 1 if shapes else _DOT[x % 2][yy % 4]
                bits[yy // sub_y][x // sub_x][which] |= dot
            prev = y
    return bits


def _overlay_labels(rows: int, bottom: float, top: float, log: bool) -> dict[int, str]:
    """The value labels by row from the top: the top, the bottom, and the middle where the
    chart has five rows or more."""
    labels = {0: _label(top), rows - 1: _label(bottom)}
    if rows >= 5:
        mid_frac = 1 - (rows // 2 + 0.5) / rows
        if log:
            mid = math.exp(math.log(bottom) + mid_frac * (math.log(top) - math.log(bottom)))
        else:
            mid = bottom + mid_frac * (top - bottom)
        labels[rows // 2] = _label(mid)
    return labels


def _overlay_line(
    cells: list[list[int]],
    label: str | None,
    shapes: bool,
    run_styles: list[Style],
    st: ChartStyles,
) -> Line:
    """One row of the overlay: its value label and tick, then each cell in the colour (or
    glyph) of the one run that passes through it, or the shared one where several do."""
    g = current()
    line = _Row()
    line.add(" " * (AXIS_W - 1) if label is None else label, st.axis)
    line.add(g.vline if label is None else g.tick, st.axis)
    for cell in cells:
        present = [i for i, dots in enumerate(cell) if dots]
        if not present:
            line.add(" ")
        elif len(present) > 1:
            dots = 0
            for i in present:
                dots |= cell[i]
            line.add(g.both if shapes else chr(0x2800 + dots), st.both)
        else:
            i = present[0]
            line.add(g.runs[i] if shapes else chr(0x2800 + cell[i]), run_styles[i])
    return line.done()


def _overlay_x_axis(
    n: int,
    width: int,
    steady: Sequence[int | None],
    runs: int,
    run_styles: list[Style],
    st: ChartStyles,
) -> Line:
    """The iteration axis, ``0`` to the last (``n - 1``), with each run's letter where it
    became steady (the shared glyph where two land in one cell)."""
    g = current()
    axis = [g.hline] * width
    axis_styles: list[Style] = [st.axis] * width
    last = str(n - 1)
    if width > len(last) + 4:
        axis[0] = "0"
        axis[width - len(last) :] = list(last)
    letters = {run_letter(i) for i in range(runs)}
    for i, at in enumerate(steady):
        if at is not None and 0 <= at < n:
            x = min(width - 1, at * width // n)
            shared = axis[x] in letters
            axis[x] = g.both if shared else run_letter(i)
            axis_styles[x] = st.both if shared else run_styles[i]
    x_line = _Row()
    x_line.add(" " * (AXIS_W - 1) + g.corner, st.axis)
    for ch, ch_style in zip(axis, axis_styles, strict=True):
        x_line.add(ch, ch_style)
    return x_line.done()


def stable_window(count: int, width: int) -> int:
    """Where a strip of ``width`` cells over the newest of ``count`` values starts: fixed while
    it fills, then half a strip further on, so that a drawn cell stays put until that jump."""
    if count <= width or width <= 0:
        return 0
    step = max(1, width // 2)
    return -(-(count - width) // step) * step


def sparkline(values: list[float], width: int, *, top: float | None = None) -> str:
    """Up to ``width`` values as eighth blocks from zero to ``top`` (or a round value above
    their maximum, so that a new maximum rarely redraws the rest)."""
    values = values[-width:] if width > 0 else []
    if not values:
        return ""
    blocks = current().blocks
    ceiling = top if top else nice_up(max(values) or 1.0)
    ceiling = max(ceiling, max(values))
    return "".join(blocks[max(1, min(8, round(8 * v / ceiling)))] for v in values)


def hbar(fraction: float, width: int) -> tuple[str, str]:
    """A horizontal bar of ``width`` cells filled to ``fraction`` (0..1) in eighths, as the
    filled part and the rest (the widget draws the rest as a dim track). Anything above zero
    fills at least an eighth, so 0.4% does not read as idle."""
    if width <= 0:
        return "", ""
    bar = current().bar
    eighths = min(width * 8, round(max(0.0, fraction) * width * 8))
    if fraction > 0 and eighths == 0:
        eighths = 1
    full, part = divmod(eighths, 8)
    filled = bar[8] * full + (bar[part] if part else "")
    return filled, " " * (width - len(filled))
