"""When the terminal goes away: the runs stopped, a last resort (``core/run/hangup.py`` points the
descriptors at /dev/null).

After a hang-up Textual's last writes (mouse support off, the screen restored) go to a terminal
that is gone. Its writer thread dies on the first failed write, and from then on every write
waits on a full queue: the UI would stay alive, blocked, long after its terminal. So the signal
handler points descriptors 0, 1 and 2 at /dev/null, and a watchdog thread, started with the app
and idle until then, stops the runs and, if the process is still here a moment later, kills
them and leaves with ``os._exit``. The handler runs on the main thread between two bytecodes,
even while that thread waits on a lock, so it only does what is safe there: ``dup2`` and setting
an event that nothing else waits on.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

from warmscope.core.data.run import LiveRun


class HangupWatchdog(threading.Thread):
    """Idle until ``trip``; then stops the unfinished runs gracefully and, ``deadline`` seconds
    later, kills what is left of them and ends the process, whatever the app is doing."""

    def __init__(
        self, sessions: Callable[[], list[LiveRun]], *, grace: float, deadline: float
    ) -> None:
        super().__init__(name="warmscope-hangup", daemon=True)
        self._sessions = sessions
        self._grace = grace
        self._deadline = deadline
        self._tripped = threading.Event()
        self._closed = False
        self.code = 129

    def trip(self, code: int) -> None:
        """The terminal is gone or the process was told to end (from a signal handler)."""
        self.code = code
        self._tripped.set()

    def close(self) -> None:
        """The app ended with no hang-up: the thread returns."""
        self._closed = True
        self._tripped.set()

    def run(self) -> None:
        self._tripped.wait()
        if self._closed:
            return
        t0 = time.monotonic()
        sessions = self._sessions()
        for session in sessions:
            with contextlib.suppress(Exception):
                session.stop(grace=self._grace)
        time.sleep(max(0.0, t0 + self._deadline - time.monotonic()))
        for session in sessions:  # still here: the app's way out is stuck
            if not session.is_finished():
                with contextlib.suppress(Exception):
                    session.kill()
        os._exit(self.code)
