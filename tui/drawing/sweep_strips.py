"""A sweep's first iterations drawn as text: one strip per cell, every process a point.

Pure functions from a sweep document (and the processes still running) to lines of rich
``Text``. All cells share one axis, so strips can be compared by eye; on it each cell's median
and interval (the sweep digest's, never computed here; the header says the coverage it
reaches, 95% from 6 processes) are drawn under its points, and narrow as processes finish.
Meaning never rests on colour: a finished process is ``●``, one in progress ``○``, several in
one column a digit; the interval ``├─┼─┤`` on the line below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from warmscope.core.base.safe_text import clean_line
from warmscope.core.output.sweep_digest import is_decided, iv_text
from warmscope.core.output.sweep_stats import interval_of
from warmscope.tui import fmt, glyphs

LABEL_MAX = 22
FIGURE_W = 22
PLOT_MIN = 10
LOG_SPREAD = 10.0
"""Where the largest value is this many times the smallest, the axis is logarithmic."""


@dataclass
class Strip:
    """One cell as the chart draws it."""

    label: str
    done: list[float] = field(default_factory=list)
    """The first iteration of each finished process (those the digest counts)."""
    running: list[float] = field(default_factory=list)
    """The first iteration of the process in progress, once measured."""
    interval: tuple[float, float, float] | None = None
    """median, lo, hi: drawn where two processes or more have finished."""
    figure: str = "-"
    style: str = ""


def strips(doc: dict[str, Any], running: Sequence[tuple[int, float]] = ()) -> list[Strip]:
    """A strip per cell of ``doc``; ``running``: ``(cell, first ms)`` of processes in progress."""
    out = []
    ranking = doc.get("ranking", [])
    ranks = {r.get("cell"): r for r in ranking}
    decided = is_decided(ranking)  # a best only where it is beyond noise better than the rest
    for c in doc.get("cells", []):
        stat = c.get("first_ms")
        values = [float(v) for v in (stat or {}).get("values", []) if _finite(v)]
        iv = interval_of(stat)
        if iv is not None and not all(map(math.isfinite, (iv.median, iv.lo, iv.hi))):
            iv = None  # a live sweep's figure no axis can place
        many = iv is not None and len(values) >= 2
        rank = ranks.get(c.get("index"), {})
        style = "bold" if decided and rank.get("vs_best") == "best" else ""
        out.append(
            Strip(
                label=clean_line(str(c.get("label", "?"))),
                done=values,
                running=[ms for cell, ms in running if cell == c.get("index") and _finite(ms)],
                interval=(iv.median, iv.lo, iv.hi) if many and iv is not None else None,
                figure=iv_text(stat) if many else (fmt.ms(values[0]) if values else "-"),
                style="dim" if rank.get("dropped_round") else style,
            )
        )
    return out


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


@dataclass
class Axis:
    lo: float
    hi: float
    log: bool

    def position(self, value: float, width: int) -> int:
        if not math.isfinite(value):  # drawn at the end it lies beyond
            value = self.lo if value < 0 or value != value else self.hi
        f = math.log if self.log else float
        span = f(self.hi) - f(self.lo)
        at = (f(max(value, self.lo)) - f(self.lo)) / span if span > 0 else 0.5
        return max(0, min(width - 1, round(at * (width - 1))))


def axis_for(rows: Sequence[Strip]) -> Axis | None:
    values = [v for s in rows for v in (*s.done, *s.running)]
    values += [v for s in rows if s.interval for v in s.interval]
    values = [v for v in values if math.isfinite(v)]
    if not values:
        return None
    lo, hi = min(values), max(values)
    if hi <= lo:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = max(0.0, lo - pad), hi + pad
    log = lo > 0 and hi / lo >= LOG_SPREAD
    return Axis(lo, hi, log)


def point_glyphs() -> tuple[str, str, str, str, str, str]:
    """done, running, line, left end, right end, median."""
    if glyphs.current() is glyphs.ASCII:
        return "o", "*", "-", "[", "]", "|"
    return "●", "○", "─", "├", "┤", "┼"


def draw(rows: Sequence[Strip], width: int) -> list[Text]:
    """The legend, a line per strip (its points), under it its interval where it has one, and
    the axis; each line at most ``width`` cells wide."""
    done_g, run_g, line_g, left_g, right_g, mid_g = point_glyphs()
    label_w = min(LABEL_MAX, max((len(s.label) for s in rows), default=5))
    plot_w = max(PLOT_MIN, width - label_w - FIGURE_W - 2)
    legend = Text(
        f"first iteration of each process: {done_g} finished  {run_g} running  "
        f"{left_g}{line_g}{mid_g}{line_g}{right_g} median and its interval",
        style="dim",
        no_wrap=True,
        overflow="ellipsis",
    )
    lines = [legend]
    axis = axis_for(rows)
    for s in rows:
        label = s.label if len(s.label) <= label_w else s.label[: label_w - 1] + "…"
        line = Text(label.ljust(label_w) + " ", style=s.style, no_wrap=True)
        cells: list[tuple[str, str]] = [(" ", "")] * plot_w
        bar = Text(" " * (label_w + 1), no_wrap=True)
        if axis is not None:
            if s.interval is not None:
                median, lo, hi = (axis.position(v, plot_w) for v in s.interval)
                under = [" "] * plot_w
                for x in range(lo, hi + 1):
                    under[x] = line_g
                under[lo], under[hi], under[median] = left_g, right_g, mid_g
                bar.append("".join(under).rstrip(), style="cyan")
            counts: dict[int, int] = {}
            for v in s.done:
                x = axis.position(v, plot_w)
                counts[x] = counts.get(x, 0) + 1
            for x, n in counts.items():
                cells[x] = (done_g if n == 1 else (str(n) if n < 10 else "+"), "bold")
            for v in s.running:
                cells[axis.position(v, plot_w)] = (run_g, "bold yellow")
        for char, style in cells:
            line.append(char, style=style)
        line.append(" " + s.figure[:FIGURE_W], style=s.style)
        lines.append(line)
        if s.interval is not None and axis is not None:
            lines.append(bar)
    if axis is not None:
        left, right = fmt.ms(axis.lo), fmt.ms(axis.hi)
        scale = " log scale" if axis.log else ""
        gap = max(1, plot_w - len(left) - len(right))
        lines.append(
            Text(" " * (label_w + 1) + left + " " * gap + right + scale, style="dim", no_wrap=True)
        )
    else:
        lines.append(Text(" " * (label_w + 1) + "no first iteration yet", style="dim"))
    for line in lines:
        line.truncate(width, overflow="ellipsis")
    return lines
