"""What workers tell the app: each a message, each handled by the app (``on_<name>``).

The rule (Harlequin's): workers compute and post messages; handlers own UI state. A worker
thread never touches a widget or the app's runs, and never waits on the UI thread
(``call_from_thread`` would block it until the UI ran the call): it posts one of these and goes
on. Screens and widgets say what happened with messages of their own, declared on them
(``SweepScreen.ProcessStarted``, ``CompareScreen.ExportAsked``, ``MainScreen.Ready``); a
start's hand-off, ``StartMade``, is beside the ``Pending`` it carries (``run_start``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from warmscope.core.data.intervals import RunWarning
    from warmscope.core.data.record import RecordError
    from warmscope.core.data.run import RunData
    from warmscope.core.data.stats import Summary
    from warmscope.tui.run_view import RunEntry


class SummaryReady(Message):
    """A worker summarized ``count`` latencies of a run."""

    def __init__(
        self,
        entry: RunEntry,
        summary: Summary,
        count: int,
        cost: float,
        warnings: tuple[RunWarning, ...] = (),
    ) -> None:
        super().__init__()
        self.entry = entry
        self.summary = summary
        self.count = count
        self.cost = cost
        self.warnings = warnings


class SummaryFailed(Message):
    """A worker's summary raised: shown in the summary pane; the next tick tries again."""

    def __init__(self, entry: RunEntry, error: BaseException) -> None:
        super().__init__()
        self.entry = entry
        self.error = error


class RecordsLoading(Message):
    """How far the worker reading long records has got: ``what`` it reads, a ``fraction``."""

    def __init__(self, what: str, fraction: float) -> None:
        super().__init__()
        self.what = what
        self.fraction = fraction

    def can_replace(self, message: Message) -> bool:
        # The newest progress wins: a slow UI skips the ones it has not drawn yet.
        return isinstance(message, RecordsLoading)


class RecordsRead(Message):
    """The records the app was opened with, read: each a run, or what is wrong with it."""

    def __init__(self, read: list[RunData | RecordError]) -> None:
        super().__init__()
        self.read = read


class Exported(Message):
    """An export's worker ended: the files it wrote, or why it could not (one line)."""

    def __init__(self, paths: list[Path], error: str) -> None:
        super().__init__()
        self.paths = paths
        self.error = error
