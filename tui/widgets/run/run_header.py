"""``RunHeader``: target, mode, changed settings, status and elapsed time of the viewed run."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style

from warmscope.core.base.safe_text import clean_name
from warmscope.tui import fmt
from warmscope.tui.drawing.chart import Line
from warmscope.tui.run_view import RunEntry
from warmscope.tui.widgets.text_lines import TextLines

STATUS = {
    "starting": ("◌", "muted"),
    "running": ("●", "success"),
    "ok": ("✓", "success"),
    "stopped": ("■", "warning"),
    "timeout": ("■", "error"),
    "failed": ("✗", "error"),
    "crashed": ("✗", "error"),
}
PARTS = ("accent", "muted", "success", "warning", "error", "bold")


def header_lines(entry: RunEntry, styles: dict[str, Style], next_note: str = "") -> list[Line]:
    """Two lines: what runs, and how it is going."""
    view, data = entry.view, entry.data
    bold, muted = styles["bold"], styles["muted"]
    line1 = Line(
        [
            (f" #{entry.number} ", bold),
            (entry.target, styles["accent"] + bold),
            (" · ", None),
            (entry.mode, bold),
            (" · " + entry.how_it_ran, None),
        ]
    )
    if data.settings.host:  # where the child runs, as while it was starting
        line1.append((f" · on {clean_name(data.settings.host)}", None))
    if entry.record_name:  # where the run is kept, live or opened
        line1.append(("  " + entry.record_name, muted))
    status = view.status
    mark, part = STATUS.get(status, ("?", "bold"))
    line2 = Line([(f" {mark} {status}", styles[part] + bold)])
    parts = [fmt.seconds(entry.elapsed())]
    if view.count:
        parts.append(f"{fmt.count(view.count)} it")
        rate = entry.loop_rate()
        if rate:  # by the wall clock, slow first iterations included: not the steady rate
            parts.append(f"{fmt.rate(rate)} {'now' if entry.live else 'overall'}")
    line2.append((" · " + " · ".join(parts), None))
    if entry.live:
        if view.busy:
            activity = view.busy.get("activity") or "running"
            busy_for = fmt.seconds(view.busy.get("ms", 0) / 1000)
            text = f"iteration {view.busy.get('iteration')} {activity} for {busy_for}"
            line2.append((" · " + text, styles["warning"]))
        elif not view.count:
            line2.append((f" · {view.phase or 'starting'}…", muted))
        elif view.last_ms is not None:
            line2.append((f" · last {fmt.ms(view.last_ms)}", None))
    elif data.status_detail and status != "ok":
        line2.append((" · " + data.status_detail, styles[part]))
    if next_note:
        line2 += [("  next run: ", muted), (next_note, styles["warning"])]
    return [line1, line2]


def starting_lines(
    number: int, target: str, host: str | None, doing: str, styles: dict[str, Style]
) -> list[Line]:
    """The header of a run not started yet: what will run, and what its start is doing."""
    mark, part = STATUS["starting"]
    bold = styles["bold"]
    line1 = Line([(f" #{number} ", bold), (clean_name(target), styles["accent"] + bold)])
    if host:
        line1.append((f" · on {clean_name(host)}", None))
    line2 = Line([(f" {mark} starting", styles[part] + bold), (f" · {doing}…", styles["muted"])])
    return [line1, line2]


class RunHeader(TextLines):
    """Redrawn on every tick of a live run (the elapsed time moves), never relaid out."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"run-header--{p}" for p in PARTS}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[Line] = []

    def _styles(self) -> dict[str, Style]:
        return {p: self.get_component_rich_style(f"run-header--{p}", partial=True) for p in PARTS}

    def show_entry(self, entry: RunEntry, next_note: str = "") -> None:
        lines = header_lines(entry, self._styles(), next_note)
        if [line.plain for line in lines] != [line.plain for line in self.lines]:
            self.lines = lines
            self.redraw()

    def show_starting(self, number: int, target: str, host: str | None, doing: str) -> None:
        """A run being started, before it exists: what will run, and what its start does."""
        self.lines = starting_lines(number, target, host, doing, self._styles())
        self.redraw()

    def clear(self) -> None:
        self.lines = []
        self.redraw()

    @property
    def plain(self) -> str:
        return "\n".join(line.plain for line in self.lines)

    def build_lines(self, width: int, height: int) -> list[Line]:
        return self.lines
