"""``Exports``: the comparison a compare screen asks to export, and what an export wrote, told.

A run's export starts from its key (``export_screen``); either kind is asked where, then
written on a worker, whose ``Exported`` comes back here as a toast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import App

from warmscope.tui.messages import Exported

if TYPE_CHECKING:
    from warmscope.tui.screens.compare_screen import CompareScreen


class Exports:
    """The handlers of what the compare screen and the export workers post."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app

    def on_compare_screen_export_asked(self, message: CompareScreen.ExportAsked) -> None:
        from warmscope.tui.export_jobs import comparison_job
        from warmscope.tui.screens.export_screen import ask_and_write  # a screen not yet opened

        ask_and_write(self.app, comparison_job(message.entries))

    def on_exported(self, message: Exported) -> None:
        if message.error:
            self.app.notify(
                message.error, title="Export failed", severity="error", timeout=8, markup=False
            )
            return
        text = "\n".join(str(p) for p in message.paths)
        self.app.notify(text, title="Exported", timeout=8, markup=False)
