"""``Summaries``: a run's summary computed on a thread worker, kept, and the main screen told.

A summary sorts every latency, so it is never computed on the UI thread; ``RunController``
says when one is due (a live run's at most as often as its cost allows) and keeps it.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from textual.app import App

from warmscope.tui.messages import SummaryFailed, SummaryReady
from warmscope.tui.screens.main_screen import main_of

if TYPE_CHECKING:
    from warmscope.tui.controller import RunController, SummaryJob
    from warmscope.tui.run_view import RunEntry


class Summaries:
    """The app's summary workers, and the handlers of what they post."""

    def __init__(self, app: App[Any], controller: RunController) -> None:
        self.app = app
        self.controller = controller

    def want(self, entry: RunEntry, *, force: bool = False) -> None:
        """Summarize ``entry`` on a worker if a summary is due (``force``: whatever its cost)."""
        job = self.controller.summary_job(entry, force=force)
        if job is None:
            return
        self.app.run_worker(
            partial(self._summarize, entry, job),
            name="summary",  # the default name and description would repr every latency
            description="summary",
            thread=True,
            group="summary",
            exit_on_error=False,
        )

    def _summarize(self, entry: RunEntry, job: SummaryJob) -> None:
        """In a worker thread: run ``job`` and post what came of it."""
        try:
            summary, count, cost, warnings = job()
        except Exception as exc:  # shown in the pane; the run goes on
            self.app.post_message(SummaryFailed(entry, exc))
            return
        self.app.post_message(SummaryReady(entry, summary, count, cost, warnings))

    def on_summary_ready(self, message: SummaryReady) -> None:
        entry = message.entry
        again = self.controller.summary_done(
            entry, message.summary, message.count, message.cost, message.warnings
        )
        if not self.app.screen_stack:  # it came back as the app closed: nothing left to draw on
            return
        main_of(self.app).summary_changed(entry)
        if again:
            self.want(entry, force=True)

    def on_summary_failed(self, message: SummaryFailed) -> None:
        self.controller.summary_failed(message.entry, message.error)
        if self.app.screen_stack:
            main_of(self.app).summary_changed(message.entry)
