"""``LoadingScreen``: long records read in a thread worker, with how far it has got, over the
first frame."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import ProgressBar, Static

from warmscope.core.data.record import RecordError
from warmscope.core.data.run import RunData
from warmscope.tui.messages import RecordsLoading, RecordsRead
from warmscope.tui.record_reading import read_in_worker


class LoadingScreen(ModalScreen[list[RunData | RecordError]]):
    """Reads ``items`` behind it and is dismissed with what it read."""

    CSS_PATH = "loading_screen.tcss"  # loaded when the screen first opens

    # Nothing to go back to: q, Esc and Ctrl+C all leave warmscope (the reading stops).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "app.quit", "Quit", id="loading-quit"),
    ]

    def __init__(self, items: list[Path | RunData]) -> None:
        super().__init__(id="loading")
        self.items = items

    def compose(self) -> ComposeResult:
        with Vertical(id="loading-box"):
            yield Static("reading the record…", id="loading-what", markup=False)
            yield Static("q / Esc: quit", id="loading-keys", markup=False)
            yield ProgressBar(total=1.0, show_eta=False, id="loading-bar")

    def on_mount(self) -> None:
        read = partial(read_in_worker, self.items, self.post_message)
        self.run_worker(read, name="load", thread=True, group="load", exit_on_error=False)

    def on_records_loading(self, message: RecordsLoading) -> None:
        """``what`` is being read and ``fraction`` of it is done."""
        self.query_one("#loading-what", Static).update(message.what)
        self.query_one(ProgressBar).update(progress=message.fraction)

    def on_records_read(self, message: RecordsRead) -> None:
        self.dismiss(message.read)

    def close_or_stop(self) -> None:
        """``q`` (the app's quit): nothing to see yet, so warmscope ends; the reading stops."""
        self.workers.cancel_group(self, "load")
        self.app.exit(0)
