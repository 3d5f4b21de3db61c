"""``CompareScreen``: two runs or more, each against the first (A), all overlaid, with their
differences in words and the settings that set them apart."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Label, Select, Static
from textual.widgets.data_table import ColumnKey

from warmscope.core.base import units
from warmscope.core.data.stats import Summary
from warmscope.core.output.comparison import MetricRow, comparison_notes, side_rows
from warmscope.core.output.settings_diff import settings_line, settings_table
from warmscope.core.output.verdicts import SAME_SETTINGS, context_table
from warmscope.tui import fmt
from warmscope.tui.messages import ToApp
from warmscope.tui.run_view import RunEntry
from warmscope.tui.widgets.keys_footer import KeysFooter
from warmscope.tui.widgets.overlay_chart import RUN_COLOURS, OverlayChart

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState

MAX_RUNS = len(RUN_COLOURS)
"""Runs side by side at most: a column each (and its ratio) must still fit a terminal, and each
curve needs a colour and a glyph of its own."""


def letter(index: int) -> str:
    return chr(ord("A") + index)


def ratio_text(row: MetricRow) -> Text:
    """Against A, in words (they read without colour): ``0.26× better`` in green, ``1.80×
    worse`` in red, ``within noise`` dim and uncoloured; ``can't tell`` (one process each,
    too few iterations) and ``same settings`` dim too."""
    if row.ratio is None:
        return Text("-", style="dim", justify="right")
    if row.within_noise:
        return Text("within noise", style="dim", justify="right")
    if row.untold:
        # The values stand beside it; the settings pane's notes say why it cannot be told.
        word = "same settings" if row.untold == SAME_SETTINGS else "can't tell"
        return Text(word, style="dim", justify="right")
    better = row.better
    style = "" if better is None else "green" if better else "red"
    return Text(row.ratio_text, style=style, justify="right")


def _value(metric: str, value: float | None) -> Text:
    return Text(units.metric(metric, value), justify="right")


def short_titles(runs: list[RunEntry]) -> dict[int, str]:
    """Each run named by what sets it apart, first: its settings, then its target and mode
    where the runs differ in them (``#2 preset no-profiling``, not a title cut before its
    settings)."""
    targets = {e.target for e in runs}
    modes = {e.mode for e in runs}
    titles = {}
    for e in runs:
        where = [e.short_target] if len(targets) > 1 else []
        where += [e.mode] if len(modes) > 1 else []
        title = f"#{e.number} {settings_line(e.data.settings)}"
        titles[e.number] = title + (f" · {' '.join(where)}" if where else "")
    return titles


class CompareScreen(Screen[None]):
    CSS_PATH = "compare_screen.tcss"  # loaded when the screen first opens

    # Each run's letter over its picker in the colour of its curve.
    DEFAULT_CSS = "\n".join(
        f".pick-{letter(i).lower()} {{ color: {colour}; }}" for i, colour in enumerate(RUN_COLOURS)
    )

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,c,q", "app.pop_screen", "Back", id="compare-back"),
        Binding("plus,a", "add", "Add", id="compare-add", tooltip="Compare one more run"),
        Binding("minus,d", "remove", "Drop", id="compare-drop", tooltip="Drop the last run"),
        Binding("w", "swap", "Swap", id="compare-swap", tooltip="B becomes A, A goes last"),
        Binding("l", "toggle_log", "Log", id="compare-log", tooltip="Log or linear latency axis"),
        Binding("x", "export", "Export", id="compare-export", tooltip="The comparison: JSON, MD"),
    ]

    class ExportAsked(ToApp):
        """``x``: the app asks where, then writes the comparison of ``entries`` (A first)."""

        def __init__(self, entries: list[RunEntry]) -> None:
            super().__init__()
            self.entries = entries

    def __init__(
        self,
        runs: list[RunEntry],
        chosen: list[RunEntry],
        cell_runs: Callable[[RunEntry], list[RunEntry]] = lambda entry: [entry],
    ) -> None:
        """``chosen``: the runs compared, the first (A) the baseline of every ratio.
        ``cell_runs``: every run of an entry's sweep cell (``RunController.cell_runs``), so a
        sweep's process stands for its cell's fresh processes."""
        super().__init__(id="compare")
        self.runs = runs
        self.chosen = list(chosen)
        self.cell_runs = cell_runs
        self._notes: list[str] = []
        """What the untold verdicts mean, from the last drawing of the metrics."""

    @property
    def a(self) -> RunEntry:
        return self.chosen[0]

    def compose(self) -> ComposeResult:
        with Horizontal(id="compare-pick"):
            yield from self._picks()
        with Horizontal(id="compare-top"):
            yield OverlayChart(id="overlay")
            with VerticalScroll(id="compare-settings"):
                yield Static("", id="compare-settings-text")
        yield self._table()
        yield KeysFooter()

    def _picks(self) -> ComposeResult:
        titles = short_titles(self.runs)
        options = [(Text(titles[e.number]), e.number) for e in self.runs]  # str is markup
        for i, entry in enumerate(self.chosen):
            yield Label(letter(i), classes=f"pick-label pick-{letter(i).lower()}")
            yield Select(
                options, value=entry.number, allow_blank=False, compact=True, id=f"pick-{i}"
            )

    def _table(self) -> DataTable[object]:
        """A column a run, and after each but A its ratio to A."""
        table: DataTable[object] = DataTable(
            id="compare-metrics", cursor_type="none", zebra_stripes=True
        )
        table.add_column("metric", key="metric")
        for i in range(len(self.chosen)):
            table.add_column("", key=f"v{i}")
            if i:
                table.add_column(Text(f"{letter(i)}/A", justify="right"), key=f"r{i}")
        return table

    def on_mount(self) -> None:
        self.show_pair()

    def _entry(self, number: object) -> RunEntry:
        return next(e for e in self.runs if e.number == number)

    @on(Select.Changed)
    def picked(self, event: Select.Changed) -> None:
        index = int(str(event.select.id).removeprefix("pick-"))
        if self.chosen[index].number == event.value:
            return  # a new picker saying what it was made with
        self.chosen[index] = self._entry(event.value)
        self.show_pair()

    _rebuilding = False
    """A run is being added or dropped: the table has the old columns until it is rebuilt."""

    def follows(self, entry: RunEntry) -> bool:
        """Whether the screen shows ``entry`` (a live run it redraws as it goes)."""
        return entry in self.chosen

    def show_pair(self) -> None:
        """Draw every part anew: the overlay, the metrics, the settings."""
        if self._rebuilding:
            return  # a live run's redraw while the table's columns change: drawn once they have
        chosen = self.chosen
        summaries = [e.summary() for e in chosen]
        self.query_one(OverlayChart).show(
            [e.view.series for e in chosen], [s.steady_from for s in summaries]
        )
        self._fill_metrics(summaries)
        self._fill_settings()

    def _sides(self, summaries: list[Summary]) -> list[tuple[list[RunEntry], list[Summary]]]:
        """Each chosen run as a side: a sweep process stands for every finished process of
        its cell (same settings, fresh processes), so the comparison has their intervals."""
        sides = []
        for e, summary in zip(self.chosen, summaries, strict=True):
            runs = self.cell_runs(e)
            others = [r for r in runs if r is not e and r.view.finished and r.view.count]
            if e.sweep is None or not others:
                sides.append(([e], [summary]))
            else:
                sides.append(([e, *others], [summary, *(r.summary() for r in others)]))
        return sides

    def _fill_metrics(self, summaries: list[Summary]) -> None:
        table = self.query_one("#compare-metrics", DataTable)
        table.clear()
        sides = self._sides(summaries)
        for i, (e, (runs, _)) in enumerate(zip(self.chosen, sides, strict=True)):
            # picks and swaps rename them; a side of a sweep's processes says how many
            many = f" ×{len(runs)}" if len(runs) > 1 else ""
            table.columns[ColumnKey(f"v{i}")].label = Text(
                f"{letter(i)} #{e.number}{many}", justify="right"
            )

        def row(name: str, cells: list[str]) -> None:
            values: list[object] = [name]
            for i, cell in enumerate(cells):
                values.append(Text(cell, justify="right"))
                if i:
                    values.append("")
            table.add_row(*values)

        row("status", [e.view.status for e in self.chosen])
        row("iterations", [fmt.count(e.view.count) for e in self.chosen])
        base, base_sums = sides[0]
        columns = [
            side_rows([r.data for r in base], [r.data for r in runs], base_sums, sums)
            for runs, sums in sides
        ]
        repeated = any(len(runs) > 1 for runs, _ in sides)
        self._notes = comparison_notes([c for col in columns[1:] for c in col], repeated=repeated)
        for n, first in enumerate(columns[0]):
            values: list[object] = [first.name, _value(first.metric, first.a)]
            for col in columns[1:]:
                values += [_value(col[n].metric, col[n].b), ratio_text(col[n])]
            table.add_row(*values)
        table.border_title = "each run against A"

    def _fill_settings(self) -> None:
        rows = settings_table([e.data for e in self.chosen])
        lines = []
        for name, values in rows:
            parts: list[str | tuple[str, str]] = [(name, "b")]
            if len(values) == 2:  # A → B on one line
                parts += ["\n  ", (values[0], "$accent"), " → ", (values[1], "$secondary")]
            for i, value in enumerate(values if len(values) > 2 else []):  # a line each
                style = (
                    "$accent" if i == 0 else "$text-muted" if value == values[0] else "$secondary"
                )
                parts += ["\n  ", (f"{letter(i)} ", "bold"), (value, style)]
            lines.append(Content.assemble(*parts))
        # Content, not markup: setting values come from runs and records.
        same = Content.styled("the same settings", "$text-muted")
        blocks = [Content("\n").join(lines) if lines else same]
        context = context_table([[e.data] for e in self.chosen])
        if context:
            blocks.append(Content.styled("context that differs", "bold $warning"))
        for row in context:
            joined = " → ".join(row.values) if len(row.values) == 2 else " · ".join(row.values)
            blocks.append(Content.assemble((row.name, "b"), "\n  ", joined))
        blocks += [Content.styled(note, "$text-muted") for note in self._notes]
        self.query_one("#compare-settings-text", Static).update(Content("\n\n").join(blocks))
        self.query_one("#compare-settings").border_title = "settings"

    async def _runs_changed(self) -> None:
        """A run added or dropped: new pickers and a new table (its columns change)."""
        self._rebuilding = True
        try:
            pick = self.query_one("#compare-pick")
            await pick.remove_children()
            await pick.mount_all(list(self._picks()))
            await self.query_one("#compare-metrics").remove()
            await self.mount(self._table(), before=self.query_one(KeysFooter))
        finally:
            self._rebuilding = False
        self.show_pair()

    async def action_add(self) -> None:
        unshown = [e for e in reversed(self.runs) if e not in self.chosen]
        if not unshown:
            self.notify("every run is compared already", timeout=2)
            return
        if len(self.chosen) >= MAX_RUNS:
            self.notify(f"{MAX_RUNS} runs at most", timeout=2)
            return
        self.chosen.append(unshown[0])
        await self._runs_changed()

    async def action_remove(self) -> None:
        if len(self.chosen) <= 2:
            self.notify("a comparison needs two runs", timeout=2)
            return
        self.chosen.pop()
        await self._runs_changed()

    def action_swap(self) -> None:
        """B becomes the baseline and A goes last: with two runs a swap; pressed again, each
        run in turn is A."""
        self.chosen = self.chosen[1:] + self.chosen[:1]
        for index, entry in enumerate(self.chosen):
            with self.prevent(Select.Changed):
                self.query_one(f"#pick-{index}", Select).value = entry.number
        self.show_pair()

    def action_toggle_log(self) -> None:
        chart = self.query_one(OverlayChart)
        chart.log_scale = not chart.log_scale

    def action_export(self) -> None:
        self.post_message(self.ExportAsked(list(self.chosen)))


def open_screen(app: App[Any], state: AppState) -> None:
    """``c``: the viewed run against the one before it (or, for the first, the one after it)."""
    runs = state.runs
    if len(runs) < 2:
        app.notify("compare needs two runs: r runs again, or open two records", timeout=4)
        return
    b = state.viewed or runs[-1]
    earlier = [e for e in runs if e.number < b.number]
    if earlier:
        a = earlier[-1]
    else:
        a, b = b, next(e for e in runs if e is not b)
    compare(app, state, [a, b])


def compare(app: App[Any], state: AppState, chosen: list[RunEntry]) -> None:
    """Open the compare screen on ``chosen``, the first the baseline (A)."""
    app.push_screen(CompareScreen(state.runs, chosen, state.controller.cell_runs))
