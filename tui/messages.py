"""What workers and screens tell the app: each a message for one of the app's parts.

The rule (Harlequin's): workers compute and post messages; handlers own UI state. A worker
thread never touches a widget or the app's runs, and never waits on the UI thread
(``call_from_thread`` would block it until the UI ran the call): it posts one of these and goes
on. Screens say what happened with messages too, declared here (``NextRun``, ``ViewRun``) or
on the screen that sends them (``SweepScreen.ProcessStarted``, ``CompareScreen.ExportAsked``);
a start's hand-off, ``StartMade``, is beside the ``Pending`` it carries (``run_start``). Those
for the app are each a ``ToApp``: the app hands it to the part of it that has a handler of its
name. The reading of long records tells the loading screen, which runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from warmscope.core.data.intervals import RunWarning
    from warmscope.core.data.record import RecordError
    from warmscope.core.data.run import RunData
    from warmscope.core.data.settings import RunSettings
    from warmscope.core.data.stats import Summary
    from warmscope.core.data.sweep_plan import SweepPlan
    from warmscope.tui.run_view import RunEntry


class ToApp(Message):
    """A message for one of the app's parts (``run_control``, ``viewer``…), not for a widget.

    The app hands it to the part with a handler of its name (``on_…``, named as Textual names
    handlers), so a new message changes the part that takes it, never the app.
    """


class NextRun(ToApp):
    """The next run's settings were chosen (the settings form, the profiled iterations, a
    preset): ``told`` says so, or with ``run_now`` the run starts at once, or the sweep of
    ``plan`` where it has more than one process."""

    def __init__(
        self,
        settings: RunSettings,
        told: str,
        *,
        run_now: bool = False,
        plan: SweepPlan | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.told = told
        self.run_now = run_now
        self.plan = plan


class ViewRun(ToApp):
    """Show ``entry`` on the main screen (picked in the history)."""

    def __init__(self, entry: RunEntry) -> None:
        super().__init__()
        self.entry = entry


class SummaryReady(ToApp):
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


class SummaryFailed(ToApp):
    """A worker's summary raised: shown in the summary pane; the next tick tries again."""

    def __init__(self, entry: RunEntry, error: BaseException) -> None:
        super().__init__()
        self.entry = entry
        self.error = error


class RecordsLoading(Message):
    """How far the worker reading long records has got: ``what`` it reads, a ``fraction``
    (to the loading screen, which runs it)."""

    def __init__(self, what: str, fraction: float) -> None:
        super().__init__()
        self.what = what
        self.fraction = fraction

    def can_replace(self, message: Message) -> bool:
        # The newest progress wins: a slow UI skips the ones it has not drawn yet.
        return isinstance(message, RecordsLoading)


class RecordsRead(Message):
    """The records the app was opened with, read: each a run, or what is wrong with it (to the
    loading screen, which hands them to the app as its result)."""

    def __init__(self, read: list[RunData | RecordError]) -> None:
        super().__init__()
        self.read = read


class Exported(ToApp):
    """An export's worker ended: the files it wrote, or why it could not (one line)."""

    def __init__(self, paths: list[Path], error: str) -> None:
        super().__init__()
        self.paths = paths
        self.error = error
