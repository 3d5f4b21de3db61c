"""``ExportScreen``: where to write an export (a run's JSON, CSV, Markdown and report, or a
comparison's JSON and Markdown), the files it writes named beforehand; ``ask_and_write``: the
screen, then the writing in a worker, whose ``Exported`` the app's ``Exports`` tells."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.widget import Widget
from textual.widgets import Static

from warmscope.tui.export_jobs import ExportJob, run_job, write_job
from warmscope.tui.messages import Exported
from warmscope.tui.screens.prompt_screen import PromptScreen

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState


class ExportScreen(PromptScreen[Path]):
    """Returns the chosen folder; the app writes the job's files there in a worker."""

    CSS_PATH = "export_screen.tcss"  # loaded when the screen first opens

    PREFIX = "export"
    BOX_TITLE = "export"
    LABEL = "folder"
    OK = "Export"

    def __init__(self, job: ExportJob) -> None:
        super().__init__(str(job.directory), input_id="export-dir")
        self.job = job

    def head(self) -> Iterable[Widget]:
        yield Static(f"Export {self.job.title}", id="export-title", markup=False)

    def notes(self) -> Iterable[Widget]:
        job = self.job
        names = ", ".join(f"{job.stem}.{ext}" for ext in job.suffixes)
        yield Static(f"writes {names}: {job.what}", id="export-files", markup=False)

    def accept(self, text: str) -> None:
        self.dismiss(Path(text.strip() or ".").expanduser())


def ask_and_write(app: App[Any], job: ExportJob) -> None:
    """Ask where, then write ``job``'s files in a thread worker, which posts ``Exported``:
    what was written, or why not."""

    def write(folder: Path) -> None:  # on the worker
        app.post_message(Exported(*write_job(job, folder)))

    def done(folder: Path | None) -> None:
        if folder is not None:
            app.run_worker(
                partial(write, folder),
                name="export",
                description="export",
                thread=True,
                group="export",
                exit_on_error=False,
            )

    app.push_screen(ExportScreen(job), done)


def open_screen(app: App[Any], state: AppState) -> None:
    """``x``: the viewed run's files."""
    if state.viewed is not None:
        ask_and_write(app, run_job(state.viewed))
