"""``LatencyChart``: every iteration's latency so far, drawn once per tick."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from textual.reactive import reactive

from warmscope.tui.drawing.chart import ChartStyles, Line, ScaleHold, latency_chart, mark_letter
from warmscope.tui.drawing.series import MARK_NAME, MARKS
from warmscope.tui.glyphs import current
from warmscope.tui.run_view import RunView
from warmscope.tui.widgets.text_lines import TextLines

ZOOM_MIN = 60
LEGEND = {3: "profiling", 4: "optimized"}
SHORT = {1: "event", 2: "warn", 3: "prof", 4: "opt", 5: "compile", 6: "recomp"}


def legend(seen: set[int], room: int) -> str:
    """The chart's key in at most ``room`` cells if it can be: full names, then shorter ones,
    then the letters alone."""
    g = current()
    kinds = sorted(seen, reverse=True)
    rules = [f"{g.warm} warm-up", f"{g.p50} p50"]
    tiers = [
        g.sep.join([f"{mark_letter(p)} {LEGEND.get(p, MARK_NAME[p])}" for p in kinds] + rules),
        g.sep.join([f"{mark_letter(p)} {SHORT[p]}" for p in kinds] + rules),
        " ".join([f"{mark_letter(p)}={SHORT[p]}" for p in kinds] + rules),
        " ".join([mark_letter(p) for p in kinds] + [f"{g.warm}warm-up", f"{g.p50}p50"]),
    ]
    return next((t for t in tiers if len(t) <= room), tiers[-1])


def zoom_stop(count: int, steady_from: int | None) -> int:
    """How many iterations the warm-up view shows: the warm-up and as much again, twice."""
    return min(count, max(ZOOM_MIN, 3 * (steady_from or 0) + 10))


class LatencyChart(TextLines):
    """Bars per column: mean bright, maximum dim; event letters on top; warm-up and p50 marked."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "latency-chart--bar",
        "latency-chart--peak",
        "latency-chart--warmup",
        "latency-chart--p50",
        "latency-chart--axis",
        *(f"latency-chart--mark-{p}" for p, _, _ in MARKS),
    }

    log_scale: reactive[bool] = reactive(True)
    zoom: reactive[bool] = reactive(False)
    device_time: reactive[bool] = reactive(False)
    """Draw each call's device time (CUDA events) instead of its host time."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view: RunView | None = None
        self.hold = ScaleHold()

    def show_view(self, view: RunView) -> None:
        if view is not self.view:
            self.hold = ScaleHold()
        self.view = view
        self.update_titles()
        self.redraw()

    def watch_log_scale(self) -> None:
        self.update_titles()
        self.redraw()

    def watch_zoom(self) -> None:
        self.hold = ScaleHold()
        self.update_titles()
        self.redraw()

    def watch_device_time(self) -> None:
        self.hold = ScaleHold()
        self.update_titles()
        self.redraw()

    def showing_device(self) -> bool:
        """Whether the chart draws device time: asked for, and the run has it."""
        view = self.view
        return self.device_time and view is not None and view.device_series.count > 0

    def on_resize(self) -> None:
        self.update_titles()

    def _stop(self) -> int | None:
        view = self.view
        if view is None or not self.zoom:
            return None
        s = view.summary
        return zoom_stop(view.count, s.steady_from if s else None)

    def update_titles(self) -> None:
        view = self.view
        # Nothing in the titles moves with each iteration: a new title repaints the whole chart.
        what = "device time" if self.showing_device() else "latency"
        title = f"{what} ({'log' if self.log_scale else 'linear'})"
        if self.zoom:
            title += " · warm-up view"
        seen = view.series.marks_seen() if view is not None else set()
        self.set_titles(title, legend(seen, self.outer_size.width - 4))

    def styles_for_chart(self) -> ChartStyles:
        def get(name: str) -> Style:
            return self.get_component_rich_style(name, partial=True)

        return ChartStyles(
            bar=get("latency-chart--bar"),
            peak=get("latency-chart--peak"),
            warmup=get("latency-chart--warmup"),
            p50=get("latency-chart--p50"),
            axis=get("latency-chart--axis"),
            marks={p: get(f"latency-chart--mark-{p}") for p, _, _ in MARKS},
        )

    def build_lines(self, width: int, height: int) -> list[Line]:
        view = self.view
        if view is None:
            return []
        s = view.summary
        device = self.showing_device()
        p50 = s.p50_ms if s else None
        if device:
            p50 = view.device["p50_ms"] if view.device else None
        lines = latency_chart(
            view.device_series if device else view.series,
            width,
            height,
            log=self.log_scale,
            steady_from=s.steady_from if s else None,
            p50=p50,
            stop=self._stop(),
            styles=self.styles_for_chart(),
            hold=self.hold,
        )
        return lines
