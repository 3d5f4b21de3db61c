"""``ExportScreen``: where to write the viewed run's JSON, CSV, Markdown and report, or a
comparison's JSON and Markdown."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from textual.widget import Widget
from textual.widgets import Static

from warmscope.core.output.export import FORMATS, REPORT_SUFFIX
from warmscope.tui.screens.prompt_screen import PromptScreen


class ExportScreen(PromptScreen[Path]):
    """Returns the chosen folder; the app writes the files in a worker."""

    CSS_PATH = "export_screen.tcss"  # loaded when the screen first opens

    PREFIX = "export"
    BOX_TITLE = "export"
    LABEL = "folder"
    OK = "Export"

    RUN_FILES = (*FORMATS, REPORT_SUFFIX)
    RUN_WHAT = (
        "the JSON document, a CSV of iterations, a Markdown summary, the full report "
        "(warmscope report)"
    )

    def __init__(
        self,
        directory: Path,
        stem: str,
        title: str,
        suffixes: Sequence[str] = RUN_FILES,
        what: str = RUN_WHAT,
    ) -> None:
        """``suffixes`` of the files written as ``stem.SUFFIX``, and ``what`` they hold."""
        super().__init__(str(directory), input_id="export-dir")
        self.stem = stem
        self.run_title = title
        self.suffixes = suffixes
        self.what = what

    def head(self) -> Iterable[Widget]:
        yield Static(f"Export {self.run_title}", id="export-title", markup=False)

    def notes(self) -> Iterable[Widget]:
        names = ", ".join(f"{self.stem}.{ext}" for ext in self.suffixes)
        yield Static(f"writes {names}: {self.what}", id="export-files", markup=False)

    def accept(self, text: str) -> None:
        self.dismiss(Path(text.strip() or ".").expanduser())
