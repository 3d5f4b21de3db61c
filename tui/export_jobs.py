"""What the app exports, each as an ``ExportJob``: a run's files, or a comparison's.

``ExportScreen`` asks where, naming the files the job writes; ``write`` then runs in a thread
worker, which posts ``Exported`` to the app (the files, or why not). The formats themselves are
core's (``core/output/export.py``). No Textual here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from warmscope.tui.run_view import RunEntry

RUN_WHAT = (
    "the JSON document, a CSV of iterations, a Markdown summary, the full report (warmscope report)"
)
COMPARISON_WHAT = "the comparison document, and its table in Markdown"


@dataclass(frozen=True)
class ExportJob:
    """Files to write into a folder the user picks: ``stem.SUFFIX`` for each suffix."""

    title: str
    """What is exported: ``#2 sample:speech script``, ``the comparison of #1, #2``."""
    directory: Path
    """The folder offered: beside the first record, else the current one."""
    stem: str
    suffixes: tuple[str, ...]
    what: str
    """What the files hold, in words."""
    write: Callable[[Path], list[Path]]
    """Writes the files into a folder (on a worker thread); returns the paths written."""


def run_job(entry: RunEntry) -> ExportJob:
    """``entry``'s JSON, CSV, Markdown and report; in the folder the app was started in by
    default (``default_folder``)."""
    # The writers and their formats: loaded when an export is asked for.
    from warmscope.core.output.export import FORMATS, REPORT_SUFFIX, export_all

    record = Path(entry.data.record_path) if entry.data.record_path else None
    stem = record.stem if record else f"warmscope-run-{entry.number}"

    def write(folder: Path) -> list[Path]:
        return export_all(entry.snapshot(), folder, stem)

    suffixes = (*FORMATS, REPORT_SUFFIX)
    return ExportJob(entry.title, default_folder(), stem, suffixes, RUN_WHAT, write)


def comparison_job(entries: list[RunEntry]) -> ExportJob:
    """The comparison of ``entries`` (the first the baseline) as its JSON document and a
    Markdown table."""
    stem = "warmscope-compare-" + "-".join(str(e.number) for e in entries)
    title = "the comparison of " + ", ".join(f"#{e.number}" for e in entries)

    def write(folder: Path) -> list[Path]:
        # The digest and the writers: loaded on the worker, when the comparison is written.
        from warmscope.core.output.comparison import comparison
        from warmscope.core.output.export import export_comparison

        runs = [e.snapshot() for e in entries]
        names = [e.record_name or f"run #{e.number}" for e in entries]
        doc = comparison(runs, names, [e.summary() for e in entries])
        return export_comparison(doc, folder, stem)

    return ExportJob(title, default_folder(), stem, ("json", "md"), COMPARISON_WHAT, write)


def default_folder() -> Path:
    """Where exports go by default: the folder the app was started in, where the user looks
    for them (the records' folder is warmscope's own, deep in the state folder)."""
    return Path.cwd()


def write_job(job: ExportJob, folder: Path) -> tuple[list[Path], str]:
    """On a worker thread: the paths written, or none and why not in one line."""
    try:
        return job.write(folder), ""
    except OSError as exc:
        return [], str(exc)
