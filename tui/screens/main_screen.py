"""The main screen: header, latency chart, summary, iterations, events, utilization, stderr."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual.actions import SkipAction
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen

from warmscope.core.child import outcome
from warmscope.tui.keys import MATCH_BINDINGS, RUN_BINDINGS
from warmscope.tui.repaint import DEFAULT_REFRESH_HZ, PANE_HZ, RepaintBudget
from warmscope.tui.run_view import Delta, RunEntry
from warmscope.tui.widgets.keys_footer import KeysFooter
from warmscope.tui.widgets.run.latency_chart import LatencyChart
from warmscope.tui.widgets.run.run_header import RunHeader
from warmscope.tui.widgets.run.summary_panel import SummaryPanel

if TYPE_CHECKING:  # the panes below the chart are imported when mounted, after the first frame
    from warmscope.core.data.settings import RunSettings
    from warmscope.tui.widgets.row_list import RowList
    from warmscope.tui.widgets.run.events_pane import EventsPane
    from warmscope.tui.widgets.run.iteration_table import IterationTable
    from warmscope.tui.widgets.run.stderr_pane import StderrPane
    from warmscope.tui.widgets.run.utilization_pane import UtilizationPane

STDERR_LINES = 1000
PANES_AFTER_S = 0.05
"""How long after the first frame the panes below the chart are mounted."""
PALETTE_MIN_W = 90  # narrower, the footer keeps to the run keys (ctrl+p still works)


class MainScreen(Screen[None]):
    """Draws one ``RunEntry``; the app tells it what changed, a batch per tick."""

    BINDINGS: ClassVar[list[BindingType]] = RUN_BINDINGS + MATCH_BINDINGS
    AUTO_FOCUS = None  # the iterations table, once mounted (``_mount_panes``)

    class Ready(Message):
        """The screen's widgets exist: the app can show runs."""

    def __init__(
        self, refresh_hz: float = DEFAULT_REFRESH_HZ, first_run: RunSettings | None = None
    ) -> None:
        """``first_run``: the settings of the run the app starts behind the first frame, which
        the header names from the first frame on."""
        super().__init__(id="main")
        self.entry: RunEntry | None = None
        self.budget = RepaintBudget(refresh_hz)
        self.first_run = first_run

    def compose(self) -> ComposeResult:
        yield RunHeader(id="run-header")
        with Horizontal(id="top"):
            yield LatencyChart(id="chart")
            summary_box = VerticalScroll(id="summary-box")
            summary_box.border_title = "summary"
            with summary_box:
                yield SummaryPanel("", id="summary")
        yield Horizontal(id="bottom")
        footer = KeysFooter(id="footer", compact=True)
        # Told of the bindings before it composes, it draws its keys in the first frame (else it
        # waits for a later one to ask for them).
        footer.bindings_changed(self)
        yield footer

    def on_mount(self) -> None:
        # The first frame has the header (naming the run that is starting), the chart and the
        # summary; then the footer's keys; the panes below follow a moment later, so the window
        # is not blank while Textual styles and lays out a dozen more widgets. Runs and records
        # are shown once they exist (``Ready``).
        if self.first_run is not None:  # readable at once: what runs, while it starts
            settings = self.first_run
            doing = f"connecting to {settings.host}" if settings.host else "starting its process"
            self.query_one(RunHeader).show_starting(1, settings.target, settings.host, doing)
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        # A moment after the first frame: Textual writes frames from a thread, and mounting the
        # panes at once would hold the interpreter while the frame waits to be written.
        self.set_timer(PANES_AFTER_S, self._mount_panes)

    async def _mount_panes(self) -> None:
        # The panes' widgets load here, after the first frame, with the panes.
        from textual.widgets import TabbedContent, TabPane

        from warmscope.tui.widgets.run.events_pane import EventsPane
        from warmscope.tui.widgets.run.iteration_table import IterationTable
        from warmscope.tui.widgets.run.stderr_pane import StderrPane
        from warmscope.tui.widgets.run.utilization_pane import UtilizationPane

        table = IterationTable(id="iterations")
        table.border_title = "iterations"
        panes = TabbedContent(id="panes", initial="tab-events")
        for pane in (
            TabPane("Events", EventsPane(id="events"), id="tab-events"),
            TabPane("Usage", UtilizationPane(id="usage"), id="tab-usage"),
            TabPane("Stderr", StderrPane(id="stderr", max_lines=STDERR_LINES), id="tab-stderr"),
        ):
            panes.compose_add_child(pane)
        await self.query_one("#bottom", Horizontal).mount(table, panes)
        table.focus()
        self.app.post_message(self.Ready())

    def on_resize(self, event: Resize) -> None:
        footer = self.query_one(KeysFooter)
        show = event.size.width >= PALETTE_MIN_W
        if footer.show_command_palette != show:
            footer.show_command_palette = show
            # Not a recomposing reactive: without this the palette key stayed on a narrowed
            # footer, cutting "? Help" in half, until the bindings changed.
            footer.refresh(recompose=True)

    # -- showing a run ----------------------------------------------------------------

    def show_entry(self, entry: RunEntry, next_note: str = "") -> None:
        """Draw ``entry`` from scratch (a new run, or one picked in the history)."""
        self.entry = entry
        view = entry.view
        self.budget.pending.clear()  # all of it is drawn now
        self.budget.stderr.clear()
        self.query_one(RunHeader).show_entry(entry, next_note)
        self.query_one(LatencyChart).show_view(view)
        self.query_one(SummaryPanel).show_view(view)
        self._table.show_view(view)
        self._events.show_view(view)
        self._show_usage()
        log = self._stderr
        log.clear()
        log.write_lines(list(view.stderr))
        if view.finished and entry.data.status not in (outcome.OK, outcome.STOPPED):
            self.action_pane("tab-stderr")

    def apply(self, entry: RunEntry, delta: Delta, next_note: str | Callable[[], str] = "") -> None:
        """Take one batch; each pane repaints when its budget allows (``tui/repaint.py``).
        ``next_note``: the header's note on the next run, or how to get it (asked only when
        the header repaints: it compares every setting)."""
        if self.entry is None or entry is not self.entry:
            return
        budget = self.budget
        budget.changed("header")  # the elapsed time moves
        if delta.rows:
            budget.changed("chart", "summary", "table")
        if delta.marks:
            budget.changed("chart", "table")
        if delta.status:
            budget.changed("summary")
        if delta.events:
            budget.changed("events")
        if delta.samples:
            budget.changed("usage")
        if delta.stderr:
            budget.changed("stderr")
            budget.stderr.extend(delta.stderr)
        self._next_note = next_note
        self.repaint_due(everything=entry.view.finished)

    def repaint_due(self, *, everything: bool = False) -> None:
        entry = self.entry
        if entry is None:
            return
        if not self.is_active and not everything:
            # Under another screen (a sweep's, the form, help): what changed stays pending and
            # is drawn when this one is back on top. A repaint under a modal screen redraws
            # the whole terminal, the modal and the dimmed screen under it, each time.
            return
        view = entry.view
        due = self.budget.due(time.monotonic(), everything=everything)
        if "header" in due:
            note = self._next_note
            self.query_one(RunHeader).show_entry(entry, note if isinstance(note, str) else note())
        if "chart" in due:
            self.query_one(LatencyChart).show_view(view)
        if "summary" in due:
            self.query_one(SummaryPanel).show_view(view)
        if "table" in due:
            self._table.sync()
        if "events" in due:
            self._events.sync(view.events_total - len(view.events))
        if "usage" in due:
            self._show_usage()
        if "stderr" in due and self.budget.stderr:
            self._stderr.write_lines(self.budget.stderr)
            self.budget.stderr.clear()

    _next_note: str | Callable[[], str] = ""

    def on_screen_resume(self) -> None:
        if not self.budget.frozen:  # what changed while another screen was on top
            self.repaint_due(everything=True)

    def action_freeze(self) -> None:
        """Stop repainting while the run goes on (over a slow link, or to read); again: go on."""
        self.budget.frozen = not self.budget.frozen
        if not self.budget.frozen:
            self.budget.changed(*PANE_HZ)
            self.repaint_due(everything=True)
        self.notify(
            "frozen: the run goes on, space shows it again" if self.budget.frozen else "live again",
            timeout=2,
        )

    def summary_changed(self, entry: RunEntry) -> None:
        if self.entry is not None and entry is self.entry:
            self.budget.changed("chart", "summary", "table")
            self.repaint_due(everything=entry.view.finished)

    def show_failure(self, entry: RunEntry, lines: list[str]) -> None:
        """A failed run: its error under the child's last stderr lines, in view."""
        if entry is self.entry:
            if lines:
                self._stderr.write_lines(lines)
            self.action_pane("tab-stderr")

    def _show_usage(self) -> None:
        entry = self.entry
        if entry is None:
            return
        device = str(entry.data.settings.knobs.get("device") or "cpu")
        self._usage.show_view(entry.view, entry.data.env, device)

    # -- keys ---------------------------------------------------------------------------

    def action_toggle_log(self) -> None:
        chart = self.query_one(LatencyChart)
        chart.log_scale = not chart.log_scale
        self.notify(f"latency axis: {'log' if chart.log_scale else 'linear'}", timeout=2)

    def action_toggle_zoom(self) -> None:
        chart = self.query_one(LatencyChart)
        chart.zoom = not chart.zoom

    def action_toggle_device(self) -> None:
        chart = self.query_one(LatencyChart)
        entry = self.entry
        if not chart.device_time and (entry is None or not entry.view.device_series.count):
            self.notify("no device time: the run did not time its calls on a GPU", timeout=3)
            return
        chart.device_time = not chart.device_time
        self.notify(f"chart: {'device' if chart.device_time else 'host'} time", timeout=2)

    def action_goto(self) -> None:
        # a screen loads when first opened
        from warmscope.tui.screens.goto_screen import GotoScreen

        entry = self.entry
        if entry is None or not entry.view.count:
            return
        table = self._table

        def go(index: int | None) -> None:
            if index is not None:
                table.focus()
                table.show_iteration(index)

        self.app.push_screen(GotoScreen(entry.view.count), go)

    def action_search_events(self) -> None:
        if self._events.draft is not None:
            raise SkipAction()  # a `/` in the search itself
        self._events_pane().start_search()

    def action_search_next(self, direction: int) -> None:
        pane = self._events
        if pane.term and not pane.search_next(direction):
            self.notify(f"no event matches {pane.term!r}", timeout=2, markup=False)

    def action_filter_events(self) -> None:
        pane = self._events_pane()
        if pane.filter_next() is None:
            self.notify("every kind of event", timeout=2)

    @property
    def _table(self) -> IterationTable:
        return cast("IterationTable", self.query_one("#iterations"))

    @property
    def _events(self) -> EventsPane:
        return cast("EventsPane", self.query_one("#events"))

    @property
    def _usage(self) -> UtilizationPane:
        return cast("UtilizationPane", self.query_one("#usage"))

    def _events_pane(self) -> EventsPane:
        """The events pane, in view and focused now (not after the queued keys)."""
        self.action_pane("tab-events")
        pane = self._events
        self.set_focus(pane, scroll_visible=False)
        return pane

    def action_order(self) -> None:
        self._table.toggle_order()

    def action_pane(self, pane: str) -> None:
        # loaded with the panes, after the first frame (_mount_panes)
        from textual.widgets import TabbedContent

        self.query_one("#panes", TabbedContent).active = pane

    @property
    def _stderr(self) -> StderrPane:
        # loaded with the panes, after the first frame (_mount_panes)
        from warmscope.tui.widgets.run.stderr_pane import (
            StderrPane,  # with the panes, after the first frame
        )

        return self.query_one("#stderr", StderrPane)

    def on_row_list_selected(self, message: RowList.Selected) -> None:
        from warmscope.tui.screens.event_screen import EventDetailScreen

        entry = self.entry
        if entry is None:
            return
        if message.row_list.id == "events":
            self.app.push_screen(EventDetailScreen([message.row]))
            return
        # a screen loads when first opened
        from warmscope.tui.screens.iteration_screen import IterationScreen

        self.app.push_screen(IterationScreen(entry, message.row[0]))


def main_of(app: App[Any]) -> MainScreen:
    """The app's main screen: the first on its stack, under every other."""
    screen = app.screen_stack[0]
    assert isinstance(screen, MainScreen)
    return screen
