"""``Viewer``: the run the main screen shows, kept current.

A run is shown when it starts, when it is picked in the history and when a sweep starts a
process. A live run is polled on one timer (``POLL_S``) and each batch applied to the main
screen at once; a compare screen that shows it follows it; its end is told. The footer's keys
are redrawn only when what they depend on has changed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.timer import Timer

from warmscope.core.child import outcome
from warmscope.tui import fmt
from warmscope.tui.messages import ViewRun
from warmscope.tui.run_view import error_lines
from warmscope.tui.screens.main_screen import MainScreen, main_of
from warmscope.tui.widgets.run.run_header import RunHeader

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState
    from warmscope.tui.run_view import RunEntry
    from warmscope.tui.summaries import Summaries

POLL_S = 1 / 10  # ten batches a second: live to the eye, cheap for the CPU
COMPARE_FOLLOW_S = 1.0  # a compare screen over a live run redraws this often


class Viewer:
    """Shows one run at a time on the main screen; polls it while it is live."""

    def __init__(self, app: App[Any], state: AppState, summaries: Summaries) -> None:
        self.app = app
        self.state = state
        self.summaries = summaries
        self.timer: Timer | None = None
        """The poll timer: paused while no run is live."""
        self._binding_state: tuple[bool, bool, bool] | None = None
        self._compare_drawn = 0.0

    @property
    def main(self) -> MainScreen:
        return main_of(self.app)

    def start(self) -> None:
        """Make the poll timer (the app is mounted), paused until a run is live."""
        self.timer = self.app.set_interval(POLL_S, self._tick, pause=True)

    def show(self, entry: RunEntry) -> None:
        """Show ``entry`` from scratch; a live one is polled from now on."""
        self.state.viewed = entry
        if entry.live and self.timer is not None:  # just started, here or by a sweep
            self.timer.resume()
        self.main.show_entry(entry, self.state.next_note())
        if entry.view.summary_count != entry.view.count:
            self.summaries.want(entry, force=True)
        self.bindings_may_change()

    def on_view_run(self, message: ViewRun) -> None:
        self.show(message.entry)

    def follow(self) -> None:
        """Poll the live run (a record a live run is writing, opened: followed as it grows)."""
        if self.state.live is not None and self.timer is not None:
            self.timer.resume()

    def stop(self) -> None:
        """Poll no more: nobody to draw for (a hang-up), no writes for the terminal to take."""
        if self.timer is not None:
            self.timer.pause()

    def note_changed(self) -> None:
        """The next run's settings changed: the header's note on them says so."""
        if self.state.viewed is not None:
            self.main.query_one(RunHeader).show_entry(self.state.viewed, self.state.next_note())

    def bindings_may_change(self) -> None:
        """Redraw the footer only when what ``check_action`` reads has changed."""
        state = self.state
        now = (state.live is not None, len(state.runs) >= 2, state.viewed is not None)
        if now != self._binding_state:
            first = self._binding_state is None  # the footer is yet to compose: it will ask
            self._binding_state = now
            if not first:
                self.app.refresh_bindings()

    def _tick(self) -> None:
        if not self.app.screen_stack:
            return  # the app is closing: its screens are gone before its timers
        tick = self.state.controller.tick(self.state.viewed)
        if tick is None:
            self.stop()
            return
        # The note is asked for only when the header repaints (it compares every setting).
        self.main.apply(tick.entry, tick.delta, self.state.next_note)
        self.summaries.want(tick.entry, force=tick.finished)
        self._follow_compare(tick.entry, tick.finished)
        if tick.finished:
            self._run_ended(tick.entry)

    def _follow_compare(self, entry: RunEntry, finished: bool) -> None:
        """A compare screen that shows the live run follows it: once a second, and at its end."""
        screen = self.app.screen
        if screen.id != "compare" or not screen.is_mounted:
            return  # none open (its module is not even loaded), or it draws itself once mounted
        from warmscope.tui.screens.compare_screen import CompareScreen  # open, so loaded

        if not isinstance(screen, CompareScreen) or not screen.follows(entry):
            return
        now = time.monotonic()
        if finished or now - self._compare_drawn >= COMPARE_FOLLOW_S:
            self._compare_drawn = now
            screen.show_pair()

    def _run_ended(self, entry: RunEntry) -> None:
        data = entry.data
        app = self.app
        self.bindings_may_change()
        if data.status == outcome.OK:  # a sweep's process: its screen says so
            if entry.sweep is None and entry.mode != "exec":  # a program's end is told once
                app.notify(f"run #{entry.number} done: {fmt.count(entry.view.count)} iterations")
            return
        if data.status == outcome.STOPPED:
            app.notify(
                f"run #{entry.number} {data.status_detail or 'stopped'}",
                severity="warning",
                markup=False,
            )
            return
        lines = entry.view.add_stderr(error_lines(data))
        self.main.show_failure(entry, lines)
        if app.screen is self.main:
            # The header says it failed and the stderr pane shows why; a toast would sit on
            # the traceback's last lines, which name the cause.
            return
        app.notify(
            f"run #{entry.number} {data.status}: {data.status_detail}",
            severity="error",
            timeout=10,
            markup=False,
        )
