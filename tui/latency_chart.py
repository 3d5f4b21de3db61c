"""``LatencyChart``: every iteration's latency so far, drawn once per tick."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from textual.reactive import reactive

from warmscope.tui.chart import ChartStyles, Line, latency_chart
from warmscope.tui.runs import RunView
from warmscope.tui.series import MARK_LETTER, MARK_NAME, MARKS
from warmscope.tui.text_lines import TextLines

ZOOM_MIN = 60
LEGEND = {3: "profiling", 4: "optimized"}


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

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view: RunView | None = None

    def show_view(self, view: RunView) -> None:
        self.view = view
        self.update_titles()
        self.redraw()

    def watch_log_scale(self) -> None:
        self.update_titles()
        self.redraw()

    def watch_zoom(self) -> None:
        self.update_titles()
        self.redraw()

    def _stop(self) -> int | None:
        view = self.view
        if view is None or not self.zoom:
            return None
        s = view.summary
        return zoom_stop(view.count, s.steady_from if s else None)

    def update_titles(self) -> None:
        view = self.view
        scale = "log" if self.log_scale else "linear"
        span = ""
        if view is not None and view.count:
            stop = self._stop() or view.count
            span = f" · iterations 0–{stop - 1}" + (" (warm-up view)" if self.zoom else "")
        self.border_title = f"latency ({scale}){span}"
        seen = view.series.marks_seen() if view is not None else set()
        legend = [
            f"{MARK_LETTER[p]} {LEGEND.get(p, MARK_NAME[p])}" for p in sorted(seen, reverse=True)
        ]
        legend += ["━ warm-up", "╌ p50"]
        self.border_subtitle = " · ".join(legend)

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
        lines = latency_chart(
            view.series,
            width,
            height,
            log=self.log_scale,
            steady_from=s.steady_from if s else None,
            p50=s.p50_ms if s else None,
            stop=self._stop(),
            styles=self.styles_for_chart(),
        )
        return lines
