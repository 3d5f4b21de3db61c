"""``Opening``: what the app was started with, shown once the main screen is ready.

The records opened (a long one read behind a loading screen, the first frame drawn before
it), the sweeps their runs are processes of, and the run asked for on the command line,
started a moment after the first frame.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App

from warmscope.tui import record_reading
from warmscope.tui.screens.main_screen import PANES_AFTER_S

if TYPE_CHECKING:
    from warmscope.core.data.record import RecordError
    from warmscope.core.data.run import RunData
    from warmscope.core.data.settings import RunSettings
    from warmscope.tui.app_state import AppState
    from warmscope.tui.run_control import RunControl
    from warmscope.tui.viewer import Viewer


class Opening:
    """The records, sweeps and first run the app was made with."""

    def __init__(
        self,
        app: App[Any],
        state: AppState,
        viewer: Viewer,
        control: RunControl,
        *,
        records: list[Path | RunData],
        first_run: RunSettings | None,
    ) -> None:
        self.app = app
        self.state = state
        self.viewer = viewer
        self.control = control
        self.records = records
        self.first_run = first_run
        """The run started behind the first frame (``warmscope TARGET``), if any."""

    def open(self) -> None:
        """Show them (the main screen's panes are mounted)."""
        items = self.records
        if items and record_reading.any_long(items):
            from warmscope.tui.screens.loading_screen import LoadingScreen

            # A long record: the first frame now, the reading in a thread, its progress shown.
            self.app.push_screen(LoadingScreen(items), self._records_read)
            return
        self._records_read(record_reading.read_all(items))

    def _records_read(self, read: list[RunData | RecordError] | None) -> None:
        state = self.state
        for data in read or []:
            if isinstance(data, Exception):  # a RecordError: what is wrong with the file
                self.app.notify(str(data), title="Not opened", severity="error", markup=False)
                continue
            entry = state.controller.open_record(data)
            self.viewer.summaries.want(entry, force=True)
        if state.runs:
            self.viewer.show(state.runs[0])
            if state.next_settings is None:
                with contextlib.suppress(Exception):
                    state.next_settings = state.runs[0].data.settings.copy()
                    state.next_source = state.runs[0].record_name or "a record"
        if state.sweeps:
            state.controller.tag_sweeps(state.sweeps)
            from warmscope.tui.screens import sweep_screen

            sweep_screen.open_screen(self.app, state)
        self.viewer.follow()  # a record a live run is writing: followed as it grows
        if self.first_run is not None:
            # A moment after the first frame, as the panes are: Textual writes frames from a
            # thread, and starting the run (its plan, its record, the child) at once would hold
            # the interpreter while the first frame waits to be written.
            settings = self.first_run
            start = self.control.start_run
            self.app.call_after_refresh(self.app.set_timer, PANES_AFTER_S, lambda: start(settings))
