"""Starting a run, a sweep or a warm-up off the UI thread: ``Pending``, and the app's one slot.

Over ``--host`` a start asks the host: the target's path there (``remote_target``), then the
connection and the remote guardian's hello, each up to its timeout. So the slow part of a start
is done on a thread worker while the UI stays live (keys, redraws, Ctrl-C), and what it made is
handed to the UI thread, which records it (``RunController`` is not thread-safe). ``Pending`` is
that hand-off: a start that ends after the app began quitting finds itself abandoned and ends
what it made at once, so no child outlives the app. One start at a time: while one is pending,
another is refused with one line (``StartSlot``). The worker posts ``StartMade`` when it is done
and its handler (``RunControl``'s) hands over what it made. A child may be spawned from the
worker: where the UI keeps a launcher thread, every child is spawned there
(``core/run/launcher.py``). A local run starts at once on the UI thread: it waits for nothing
(the child is spawned, not waited for).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from textual.app import App

from warmscope.core.child.outcome import WarmscopeError
from warmscope.core.run.ending import one_line
from warmscope.tui.messages import ToApp

if TYPE_CHECKING:
    from warmscope.core.data.run import LiveRun

T = TypeVar("T")
KILL_WAIT_S = 2.0  # as the app gives a killed run on its way out


class Pending(Generic[T]):
    """One start in progress on a worker thread, and the hand-off of what it made.

    ``build`` (the worker) makes it; ``done(made, error)`` (the UI thread) takes it, ``made``
    ``None`` and ``error`` one line when it could not start; ``end`` ends what was made for an
    app that quit meanwhile.
    """

    def __init__(
        self,
        what: str,
        build: Callable[[], T],
        done: Callable[[T | None, str], None],
        end: Callable[[T], None] = lambda made: None,
    ) -> None:
        self.what = what
        """``a run``, ``a sweep``, ``a warm-up``: for the line that refuses a second start."""
        self._build, self._done, self._end = build, done, end
        self._lock = threading.Lock()
        self._made: T | None = None
        self._error = ""
        self._abandoned = False

    def make(self) -> None:
        """On the worker: build it, and keep it for the UI thread, or end it at once if the
        app began quitting meanwhile."""
        try:
            made = self._build()
        except (WarmscopeError, OSError) as exc:
            self._error = one_line(str(exc) or repr(exc))
            return
        except Exception as exc:  # a fault of warmscope's: said in one line, not a hang
            self._error = one_line(f"{type(exc).__name__}: {exc}")
            return
        with self._lock:
            if not self._abandoned:
                self._made = made
                return
        self._end(made)

    def finish(self) -> None:
        """On the UI thread, once ``make`` returned: hand over what it made, or why not."""
        with self._lock:
            if self._abandoned:
                return
            made, self._made = self._made, None
        self._done(made, self._error)

    def abandon(self) -> None:
        """The app is quitting: what was made and not yet handed over is ended now; what is
        made from now on, ``make`` ends at once."""
        with self._lock:
            self._abandoned = True
            made, self._made = self._made, None
        if made is not None:
            self._end(made)


class StartMade(ToApp):
    """A pending start's worker returned: the UI thread takes what it made."""

    def __init__(self, pending: Pending[Any]) -> None:
        super().__init__()
        self.pending = pending


class StartSlot:
    """The app's one start at a time: ``begin`` makes a ``Pending`` on a thread worker, whose
    ``StartMade`` the handler passes to ``made``; while one is pending, another is
    ``refused`` with one line; ``abandon`` on the way out."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self.pending: Pending[Any] | None = None
        """A run, sweep or warm-up being started on a worker thread."""

    def begin(self, pending: Pending[Any]) -> None:
        """Make ``pending`` on a thread worker; ``StartMade`` brings it back to the UI thread."""
        self.pending = pending
        app = self._app

        def work() -> None:
            try:
                pending.make()
            finally:
                app.post_message(StartMade(pending))  # any thread may post; dropped once closed

        app.run_worker(
            work,
            name="start",
            description=pending.what,
            group="start",
            thread=True,
            exit_on_error=False,
        )

    def made(self, message: StartMade) -> None:
        """What the handler of ``StartMade`` calls: the start is no longer pending; hand it over."""
        if self.pending is message.pending:
            self.pending = None
        message.pending.finish()

    def refused(self) -> bool:
        """Say so and ``True`` where another start is pending (one start at a time)."""
        if self.pending is None:
            return False
        self._app.notify(
            f"{self.pending.what} is starting: wait for it (q quits)", severity="warning"
        )
        return True

    def abandon(self) -> None:
        """The app is quitting: the pending start ends what it made, now or once made. Its
        ``ssh`` connections are cut now, so that its worker, waiting on them, ends at once
        rather than at their timeouts (a silent host: the connect timeout; a slow remote: the
        hello's)."""
        pending = self.pending
        if pending is None:
            return
        self.pending = None
        pending.abandon()
        # The ssh machinery: loaded only where a start is cut short.
        from warmscope.core.run.remote import cut_connecting

        cut_connecting()


def kill_and_wait(session: LiveRun, wait: float = KILL_WAIT_S) -> None:
    """Kill a run nobody will watch (its start ended after the app began quitting, or the app
    is on its way out), and give it ``wait`` seconds to end, so that its record says how it
    ended before the app is gone."""
    session.kill()
    deadline = time.monotonic() + wait
    while not session.is_finished() and time.monotonic() < deadline:
        time.sleep(0.02)
