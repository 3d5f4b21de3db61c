"""``ExportScreen``: where to write the viewed run's JSON, CSV, Markdown and report."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

from warmscope.core.export import FORMATS

REPORT_SUFFIX = "report.md"


class ExportScreen(ModalScreen[Path | None]):
    """Returns the chosen folder; the app writes the files in a worker."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="export-cancel"),
    ]

    def __init__(self, directory: Path, stem: str, title: str) -> None:
        super().__init__()
        self.directory = directory
        self.stem = stem
        self.run_title = title

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Static(f"Export {self.run_title}", id="export-title", markup=False)
            with Horizontal(id="export-line"):
                yield Label("folder", id="export-label")
                yield Input(str(self.directory), id="export-dir")
            names = ", ".join(f"{self.stem}.{ext}" for ext in (*FORMATS, REPORT_SUFFIX))
            yield Static(
                f"writes {names}: the JSON document, a CSV of iterations, a Markdown summary, "
                "the full report (warmscope report)",
                id="export-files",
                markup=False,
            )
            with Horizontal(id="export-buttons"):
                yield Button("Export ⏎", id="export-ok", variant="primary", compact=True)
                yield Button("Cancel esc", id="export-no", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#export-box").border_title = "export"
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def submitted(self) -> None:
        self._done()

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "export-ok":
            self._done()
        else:
            self.action_cancel()

    def _done(self) -> None:
        text = self.query_one(Input).value.strip()
        self.dismiss(Path(text or ".").expanduser())

    def action_cancel(self) -> None:
        self.dismiss(None)
