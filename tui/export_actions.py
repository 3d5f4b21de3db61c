"""Exporting from the app: ask where (``ExportScreen``), then write in a thread worker and say
what was written (or why not) in a notification."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App

from warmscope.tui.runs import RunEntry


def export_run(app: App[Any], entry: RunEntry) -> None:
    """Ask where, then write ``entry``'s JSON, CSV, Markdown and report; in the folder the
    app was started in by default (``default_folder``)."""
    from warmscope.tui.export_screen import ExportScreen

    record = Path(entry.data.record_path) if entry.data.record_path else None
    directory = default_folder()
    stem = record.stem if record else f"warmscope-run-{entry.number}"

    def write(folder: Path) -> list[Path]:
        from warmscope.core.output.export import export_all

        return export_all(entry.snapshot(), folder, stem)

    def done(folder: Path | None) -> None:
        if folder is not None:
            _write_in_worker(app, lambda: write(folder))

    app.push_screen(ExportScreen(directory, stem, entry.title), done)


def export_comparison(app: App[Any], entries: list[RunEntry]) -> None:
    """Ask where, then write the comparison of ``entries`` (the first the baseline) as its
    JSON document and a Markdown table."""
    from warmscope.tui.export_screen import ExportScreen

    stem = "warmscope-compare-" + "-".join(str(e.number) for e in entries)
    title = "the comparison of " + ", ".join(f"#{e.number}" for e in entries)

    def write(folder: Path) -> list[Path]:
        from warmscope.core.output.digest import comparison
        from warmscope.core.output.export import export_comparison

        runs = [e.snapshot() for e in entries]
        names = [e.record_name or f"run #{e.number}" for e in entries]
        doc = comparison(runs, names, [e.summary() for e in entries])
        return export_comparison(doc, folder, stem)

    def done(folder: Path | None) -> None:
        if folder is not None:
            _write_in_worker(app, lambda: write(folder))

    what = "the comparison document, and its table in Markdown"
    app.push_screen(ExportScreen(default_folder(), stem, title, ("json", "md"), what), done)


def default_folder() -> Path:
    """Where exports go by default: the folder the app was started in, where the user looks
    for them (the records' folder is warmscope's own, deep in the state folder)."""
    return Path.cwd()


def _write_in_worker(app: App[Any], write: Callable[[], list[Path]]) -> None:
    """Run ``write`` (it returns the paths it wrote) in a thread; the outcome is told on the
    main thread."""

    def job() -> None:
        try:
            paths, error = write(), ""
        except OSError as exc:
            paths, error = [], str(exc)
        with contextlib.suppress(RuntimeError):  # the app quit meanwhile: nobody to tell
            app.call_from_thread(_told, app, paths, error)

    app.run_worker(
        job, name="export", description="export", thread=True, group="export", exit_on_error=False
    )


def _told(app: App[Any], paths: list[Path], error: str) -> None:
    if error:
        app.notify(error, title="Export failed", severity="error", timeout=8, markup=False)
        return
    text = "\n".join(str(p) for p in paths)
    app.notify(text, title="Exported", timeout=8, markup=False)
