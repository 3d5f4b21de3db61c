"""``OverlayChart``: two runs' latency curves over the same iterations, told apart by colour, or
by glyph where there is no colour (``NO_COLOR``) or no braille (ASCII)."""

from __future__ import annotations

from typing import ClassVar

from textual.reactive import reactive

from warmscope.tui.chart import ChartStyles, Line, overlay_chart, overlay_legend
from warmscope.tui.series import LatencySeries
from warmscope.tui.text_lines import TextLines


class OverlayChart(TextLines):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "overlay-chart--a",
        "overlay-chart--b",
        "overlay-chart--both",
        "overlay-chart--axis",
    }

    log_scale: reactive[bool] = reactive(True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series: tuple[LatencySeries, LatencySeries] | None = None
        self.steady: tuple[int | None, int | None] = (None, None)

    def show(
        self, a: LatencySeries, b: LatencySeries, steady: tuple[int | None, int | None]
    ) -> None:
        self.series = (a, b)
        self.steady = steady
        n = min(a.count, b.count)
        scale = "log" if self.log_scale else "linear"
        self.set_titles(
            f"latency ({scale}) · iterations 0–{max(n - 1, 0)} of both runs",
            overlay_legend(self.app.no_color),
        )
        self.redraw()

    def watch_log_scale(self) -> None:
        if self.series is not None:
            self.show(*self.series, self.steady)

    def build_lines(self, width: int, height: int) -> list[Line]:
        if self.series is None:
            return []
        get = self.get_component_rich_style
        styles = ChartStyles(
            a=get("overlay-chart--a", partial=True),
            b=get("overlay-chart--b", partial=True),
            both=get("overlay-chart--both", partial=True),
            axis=get("overlay-chart--axis", partial=True),
        )
        return overlay_chart(
            *self.series,
            width,
            height,
            log=self.log_scale,
            steady=self.steady,
            styles=styles,
            shapes=self.app.no_color,
        )
