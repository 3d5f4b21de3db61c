"""``OverlayChart``: every compared run's latency curve over the same iterations, told apart by
colour, or by glyph where there is no colour (``NO_COLOR``) or no braille (ASCII)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.reactive import reactive

from warmscope.tui.drawing.chart import ChartStyles, Line, overlay_chart, overlay_legend, run_letter
from warmscope.tui.drawing.series import LatencySeries
from warmscope.tui.widgets.text_lines import TextLines

RUN_COLOURS = ("$accent", "$secondary", "$success", "$error", "#b07cd8", "$primary")
"""Each run's colour, A first: its curve, its letter in the legend, its picker's label. Not
$warning: in the default themes it is $accent's colour."""


def _css() -> str:
    runs = "\n".join(
        f"    & > .overlay-chart--{run_letter(i).lower()} {{ color: {colour}; }}"
        for i, colour in enumerate(RUN_COLOURS)
    )
    return f"OverlayChart {{\n{runs}\n}}\n"


class OverlayChart(TextLines):
    DEFAULT_CSS = _css()

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *(f"overlay-chart--{run_letter(i).lower()}" for i in range(len(RUN_COLOURS))),
        "overlay-chart--both",
        "overlay-chart--axis",
    }

    log_scale: reactive[bool] = reactive(True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series: list[LatencySeries] = []
        self.steady: list[int | None] = []

    def show(self, series: Sequence[LatencySeries], steady: Sequence[int | None]) -> None:
        self.series, self.steady = list(series), list(steady)
        counts = {s.count for s in series}
        n = max(counts)
        scale = "log" if self.log_scale else "linear"
        title = f"latency ({scale}) · iterations 0–{max(n - 1, 0)}"
        if len(counts) == 1:  # else a shorter run's curve ends early, which says it
            title += " of both runs" if len(series) == 2 else " of all runs"
        self.set_titles(title, self._legend())
        self.redraw()

    def _legend(self) -> str:
        """The legend as markup, each run's letter (and glyph) in its colour, as much of it
        as fits the border less its corners."""
        room = self.size.width - 4 if self.size.width else None
        return overlay_legend(
            self.app.no_color,
            len(self.series),
            room,
            paint=lambda i, item: f"[{RUN_COLOURS[i]}]{item}[/]",
        )

    def watch_log_scale(self) -> None:
        if self.series:
            self.show(self.series, self.steady)

    def on_resize(self) -> None:
        if self.series:
            self.show(self.series, self.steady)

    def build_lines(self, width: int, height: int) -> list[Line]:
        if not self.series:
            return []
        get = self.get_component_rich_style
        styles = ChartStyles(
            runs=tuple(
                get(f"overlay-chart--{run_letter(i).lower()}", partial=True)
                for i in range(len(RUN_COLOURS))
            ),
            both=get("overlay-chart--both", partial=True),
            axis=get("overlay-chart--axis", partial=True),
        )
        return overlay_chart(
            self.series,
            width,
            height,
            log=self.log_scale,
            steady=self.steady,
            styles=styles,
            shapes=self.app.no_color,
        )
