"""A run's summary computed in a thread worker (sorting every latency) and posted back to the
app as a message: ``SummaryReady``, or ``SummaryFailed`` when the job raised."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.message import Message
from textual.message_pump import MessagePump

from warmscope.tui.run_view import RunEntry

if TYPE_CHECKING:
    from warmscope.core.data.intervals import RunWarning
    from warmscope.core.data.stats import Summary

SummaryJob = Callable[[], "tuple[Summary, int, float, tuple[RunWarning, ...]]"]


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


def summarize(target: MessagePump, entry: RunEntry, job: SummaryJob) -> None:
    """In a worker thread: run ``job`` and post what came of it to ``target``."""
    try:
        summary, count, cost, warnings = job()
    except Exception as exc:  # shown in the pane; the run goes on
        target.post_message(SummaryFailed(entry, exc))
        return
    target.post_message(SummaryReady(entry, summary, count, cost, warnings))
