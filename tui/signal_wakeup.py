"""Signals that wake the event loop, so their Python handlers run when they arrive.

A Python signal handler runs only when the main thread runs Python. With the event loop asleep
in ``epoll_wait`` and no wakeup descriptor set (asyncio sets one only for
``loop.add_signal_handler``), a signal that arrives just before the loop goes back to sleep
waits there until something else wakes it. So it went for SIGCONT after an outside SIGTSTP:
Textual's resume (its SIGCONT handler) did not run, and ``fg`` showed a dead screen until
another signal came. A wakeup descriptor the loop reads makes every signal wake it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading


class SignalWakeup:
    """Set while the app runs: every signal wakes ``loop``. Nothing is set off the main thread
    (signals are the main thread's) or where something already wakes the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._read: socket.socket | None = None
        self._write: socket.socket | None = None
        if threading.current_thread() is not threading.main_thread():
            return
        read, write = socket.socketpair()
        read.setblocking(False)
        write.setblocking(False)
        previous = signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
        if previous != -1:  # already woken (asyncio's own signal handlers): leave theirs
            signal.set_wakeup_fd(previous)
            read.close()
            write.close()
            return
        self._read, self._write = read, write
        loop.add_reader(read.fileno(), self._drain)

    def _drain(self) -> None:
        """Waking was the point; what the signals wrote is dropped."""
        assert self._read is not None
        with contextlib.suppress(OSError):
            self._read.recv(4096)

    def close(self) -> None:
        if self._read is None or self._write is None:
            return
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(-1)
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self._read.fileno())
        self._read.close()
        self._write.close()
        self._read = self._write = None
