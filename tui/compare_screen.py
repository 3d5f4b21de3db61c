"""``CompareScreen``: two runs, overlaid, with their differences and the settings apart."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, Select, Static

from warmscope.core import units
from warmscope.core.digest import MetricRow, metric_rows, run_diff
from warmscope.tui import fmt
from warmscope.tui.overlay_chart import OverlayChart
from warmscope.tui.runs import RunEntry

# Metrics where a larger B is better; for the others a smaller B is.
HIGHER_IS_BETTER = ("throughput_per_s",)


def ratio_text(row: MetricRow) -> Text:
    """B/A, green or red only where the difference is one to call (not within noise)."""
    ratio = row.ratio
    if ratio is None:
        return Text("-", style="dim")
    if row.within_noise:
        return Text(f"{ratio:.2f}× ≈", style="dim", justify="right")
    better = ratio > 1 if row.metric in HIGHER_IS_BETTER else ratio < 1
    style = "" if 0.95 <= ratio <= 1.05 or row.metric == "cv" else "green" if better else "red"
    return Text(f"{ratio:.2f}×", style=style, justify="right")


class CompareScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,c,q", "app.pop_screen", "Back", id="compare-back"),
        Binding("w", "swap", "Swap A/B", id="compare-swap", tooltip="Swap the two runs"),
        Binding("l", "toggle_log", "Log", id="compare-log", tooltip="Log or linear latency axis"),
    ]

    def __init__(self, runs: list[RunEntry], a: RunEntry, b: RunEntry) -> None:
        super().__init__(id="compare")
        self.runs = runs
        self.a = a
        self.b = b

    def compose(self) -> ComposeResult:
        options = [(Text(e.title), e.number) for e in self.runs]  # a str prompt is markup
        with Horizontal(id="compare-pick"):
            yield Label("A", classes="pick-label pick-a")
            yield Select(options, value=self.a.number, allow_blank=False, compact=True, id="pick-a")
            yield Label("B", classes="pick-label pick-b")
            yield Select(options, value=self.b.number, allow_blank=False, compact=True, id="pick-b")
        yield OverlayChart(id="overlay")
        with Horizontal(id="compare-tables"):
            yield DataTable(id="compare-metrics", cursor_type="none", zebra_stripes=True)
            with VerticalScroll(id="compare-settings"):
                yield Static("", id="compare-settings-text")
        yield Footer()

    def on_mount(self) -> None:
        metrics = self.query_one("#compare-metrics", DataTable)
        metrics.add_column("metric", key="metric")
        metrics.add_column(Text("A", justify="right"), key="a")
        metrics.add_column(Text("B", justify="right"), key="b")
        metrics.add_column(Text("B/A", justify="right"), key="ratio")
        self.show_pair()

    def _entry(self, number: object) -> RunEntry:
        return next(e for e in self.runs if e.number == number)

    @on(Select.Changed)
    def picked(self, event: Select.Changed) -> None:
        if event.select.id == "pick-a":
            self.a = self._entry(event.value)
        elif event.select.id == "pick-b":
            self.b = self._entry(event.value)
        self.show_pair()

    def show_pair(self) -> None:
        a, b = self.a, self.b
        sa, sb = a.summary(), b.summary()
        self.query_one(OverlayChart).show(
            a.view.series, b.view.series, (sa.steady_from, sb.steady_from)
        )
        metrics = self.query_one("#compare-metrics", DataTable)
        metrics.clear()
        metrics.add_row(
            "status", Text(a.view.status, justify="right"), Text(b.view.status, justify="right"), ""
        )
        metrics.add_row(
            "iterations",
            Text(fmt.count(a.view.count), justify="right"),
            Text(fmt.count(b.view.count), justify="right"),
            "",
        )
        for row in metric_rows(sa, sb):
            metrics.add_row(
                row.name,
                Text(units.metric(row.metric, row.a), justify="right"),
                Text(units.metric(row.metric, row.b), justify="right"),
                ratio_text(row),
            )
        # Content, not markup: setting values come from runs and records.
        lines = [
            Content.assemble((c.name, "b"), "\n  ", (c.a, "$accent"), " → ", (c.b, "$secondary"))
            for c in run_diff(a.data, b.data)
        ]
        self.query_one("#compare-settings-text", Static).update(
            Content("\n").join(lines)
            if lines
            else Content.styled("the same settings", "$text-muted")
        )
        metrics.border_title = f"A #{a.number} vs B #{b.number}"
        self.query_one("#compare-settings").border_title = "settings A → B"

    def action_swap(self) -> None:
        a, b = self.a, self.b
        with self.prevent(Select.Changed):
            self.query_one("#pick-a", Select).value = b.number
            self.query_one("#pick-b", Select).value = a.number
        self.a, self.b = b, a
        self.show_pair()

    def action_toggle_log(self) -> None:
        chart = self.query_one(OverlayChart)
        chart.log_scale = not chart.log_scale
