"""When the terminal goes away (SIGHUP) or the process is told to end (SIGTERM): one
mechanism for the headless CLI and the TUI.

Both point descriptors 0, 1 and 2 at /dev/null on a hang-up (writes for a terminal that is gone
neither fail nor block) and then end their runs properly, so each record gets its last
iterations and its end line. The handler runs on the main thread between two bytecodes, even
while that thread waits on a lock, so it only does what is safe there: ``dup2``, setting a flag
or an event, raising ``KeyboardInterrupt``. How the runs are then ended is each front end's own:
the CLI unwinds like Ctrl-C; the TUI trips a watchdog thread and asks its event loop.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

END_SIGNALS = (signal.SIGHUP, signal.SIGTERM)


def detach_terminal() -> None:
    """Point descriptors 0, 1 and 2 at /dev/null: writes for a terminal that is gone neither
    fail nor block, and reads see an end of file."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        if null > 2:
            os.close(null)


class EndSignals:
    """``handler`` on SIGHUP and SIGTERM until ``restore``; on SIGHUP the terminal is detached
    first. Off the main thread no handler can be set: then none is."""

    def __init__(self, handler: Callable[[int], None]) -> None:
        self._handler = handler
        self._previous: dict[int, Any] = {}
        for sig in END_SIGNALS:
            with contextlib.suppress(ValueError, OSError):
                self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        if signum == signal.SIGHUP:
            detach_terminal()
        self._handler(signum)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)


class HangupGuard:
    """The headless commands: SIGHUP and SIGTERM stop the run like Ctrl-C, quickly.

    The record is then finished properly; the child would die with us anyway (parent-death
    signal), but this way its last iterations and the end line are written.
    """

    def __init__(self) -> None:
        self.fired = False
        self._signals = EndSignals(self._stop)

    def _stop(self, signum: int) -> None:
        self.fired = True
        raise KeyboardInterrupt

    def restore(self) -> None:
        self._signals.restore()
