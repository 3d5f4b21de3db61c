"""The agent's side of the protocol: batched sends, iteration markers, what the loop is doing.

Child side: loaded by the agent by path (standard library only at import).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from . import io_counters, outcome, protocol

FLUSH_EVERY_NS = 50_000_000  # batches go out at most every 50 ms...
BUSY_AFTER_NS = 500_000_000  # a single iteration running longer than this is reported live


class State:
    """What the loop is doing now; read by the warning/log hooks and the flusher thread."""

    iteration: int | None = None
    phase: str | None = "start"
    iteration_start_ns: int = 0
    activity: str = ""
    marked: int | None = None  # the iteration of the last marker written to fd 2
    stop_asked = False  # a SIGINT/SIGTERM came: a KeyboardInterrupt is a stop, not a failure
    stop_pending = False  # ... and waits for the end of a critical section to be raised
    critical = 0  # depth of ``no_interrupt`` sections on the main thread
    marker_fd = 2
    """The agent's own copy of the stderr pipe: a model that closes fd 2 cannot take it."""
    marker_prefix = protocol.MARKER
    """What starts a marker line: the run's secret is in it once the agent read its config."""
    watching = False  # a write into the stderr pipe leaves a SIGIO pending (watch_stderr)
    watch_fd: int | None = None  # the agent's read side of the stderr pipe, for the watch
    setup_end_ns: int = 0
    """When the last setup phase ended: the pause before the first call starts there."""
    first_call_ns: int = 0
    """When the loop's first call started."""


class Channel:
    """Batched protocol writer. Events queue up and go out with the next iteration batch."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.pending: list[bytes] = []
        self.last_flush_ns = time.perf_counter_ns()

    def send(self, message: dict[str, Any], *, now: bool = False) -> None:
        line = protocol.encode(message)
        with self.lock:
            self.pending.append(line)
            if now:
                self._flush_locked()

    def flush(self, extra: bytes = b"") -> None:
        with self.lock:
            if extra:
                self.pending.append(extra)
            self._flush_locked()

    def _flush_locked(self) -> None:
        with no_interrupt():  # a stop never tears a line: the parent would see garbage
            data = b"".join(self.pending)
            self.pending.clear()
            self.last_flush_ns = time.perf_counter_ns()
            view = memoryview(data)
            while view:
                try:
                    written = os.write(self.fd, view)
                except BrokenPipeError:
                    os._exit(outcome.EXIT_PARENT_GONE)
                view = view[written:]


def event(kind: str, title: str, text: str = "", **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"t": "event", "kind": kind, "title": title, "text": text}
    if State.iteration is not None:
        message["iteration"] = State.iteration
    else:
        message["phase"] = State.phase
    message.update(extra)
    return message


def start_flusher(channel: Channel) -> None:
    """Send queued events and a ``busy`` note while one iteration runs long (a compile)."""

    def run() -> None:
        while True:
            time.sleep(0.1)
            now = time.perf_counter_ns()
            if State.iteration is not None and State.iteration_start_ns:
                running = now - State.iteration_start_ns
                if running > BUSY_AFTER_NS:
                    channel.send(
                        {
                            "t": "busy",
                            "iteration": State.iteration,
                            "ms": running / 1e6,
                            "activity": State.activity,
                        }
                    )
            if channel.pending and now - channel.last_flush_ns > FLUSH_EVERY_NS * 2:
                channel.flush()

    threading.Thread(target=run, name="flusher", daemon=True).start()


F_SETOWN_EX = 15  # Linux: a signal for an open file goes to one thread (fcntl lacks the names)
F_OWNER_TID = 0
SIGIO_ONLY = (signal.SIGIO,) if hasattr(signal, "SIGIO") else ()


def _always() -> bool:
    return True


def _never() -> bool:
    return False


def _took_sigio() -> bool:
    """Whether the stderr pipe was written to since the last look (and forget it): one system
    call that takes the pending SIGIO, if there is one, without delivering it."""
    return signal.sigtimedwait(SIGIO_ONLY, 0) is not None


stderr_written: list[Callable[[], bool]] = [_always]
"""``stderr_written[0]()``: whether fd 2 may have been written to since the last look. Without
the watch, always yes: a marker after every iteration, just as exact, only dearer."""
no_markers: list[Callable[[], bool]] = [_never]
"""In place of ``stderr_written`` when no log capture is on: no markers at all."""


def _on_io(signum: int, frame: object) -> None:
    """Never runs while the watch holds (the signal is blocked); its presence tells the watch
    that the model has not taken SIGIO for itself."""


def _arm(fd: int, on: bool = True) -> None:
    """A SIGIO to the main thread on every write into the pipe whose read side ``fd`` is."""
    owner = struct.pack("ii", F_OWNER_TID, threading.get_native_id())
    fcntl.fcntl(fd, F_SETOWN_EX, owner)
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_ASYNC if on else flags & ~os.O_ASYNC)


def watch_stderr(fd: int) -> bool:
    """Have ``stderr_written[0]()`` tell whether anyone (C++ logs, Python, helper processes)
    wrote into the pipe behind ``fd`` (the stderr pipe); True when that holds here. Called on
    the main thread, the loop's.

    The agent opens its own read side of the pipe (it never reads from it) and asks the kernel
    for a SIGIO to the main thread on each write. The main thread blocks SIGIO, so the signal is
    never delivered: no thread of the model is interrupted (no EINTR, no short write), and the
    signal waits, pending, until the loop takes it with ``sigtimedwait``. The kernel raises it
    inside the writer's system call, so it is pending before the write returns: an iteration
    that wrote is never missed. Checked on a private pipe first, a write into a pipe that
    already holds data included (some kernels signalled only the first). False: the loop marks
    every iteration instead.
    """
    if not sys.platform.startswith("linux") or not SIGIO_ONLY:
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        signal.signal(signal.SIGIO, _on_io)
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGIO_ONLY)
        _took_sigio()  # nothing stale
        r, w = os.pipe()
        try:
            _arm(r)
            seen = []
            for _ in range(2):
                os.write(w, b"x")
                seen.append(_took_sigio())
            seen.append(not _took_sigio())  # taken means gone
        finally:
            os.close(r)
            os.close(w)
        if not all(seen):
            _give_way()
            return False
        # A new open file (not a dup): its O_ASYNC and owner are the agent's alone.
        State.watch_fd = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        _arm(State.watch_fd)
    except (OSError, ValueError):
        _give_way()  # closes the read side if it was opened
        return False
    stderr_written[0] = _took_sigio
    return True


def _give_way() -> None:
    """The loop marks every iteration from now on; SIGIO is the model's again."""
    State.watching = False
    stderr_written[0] = _always
    if State.watch_fd is not None:
        with contextlib.suppress(OSError):
            _arm(State.watch_fd, on=False)
            os.close(State.watch_fd)
        State.watch_fd = None
    with contextlib.suppress(OSError, ValueError):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGIO_ONLY)


def check_watch() -> None:
    """A model that installs its own SIGIO handler ends the watch, so that its signals reach it
    (checked on the main thread, with each batch, off the loop's path)."""
    if State.watching and signal.getsignal(signal.SIGIO) is not _on_io:
        _give_way()


def marker(kind: str, value: object) -> None:
    State.marked = State.iteration if kind == "it" else None
    os.write(State.marker_fd, State.marker_prefix + f"{kind} {value}\n".encode())


def ask_stop(signum: int, frame: object) -> None:
    """SIGINT/SIGTERM from warmscope: stop the loop (``KeyboardInterrupt``), marked as asked.

    Once: a second signal (the escalation reaches the agent through its process group too)
    must not interrupt the stop itself; SIGKILL is the next step if the model hangs. Inside a
    ``no_interrupt`` section (a protocol line half written) it waits for the section's end.
    """
    if State.stop_asked:
        return
    State.stop_asked = True
    if State.critical:
        State.stop_pending = True
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def no_interrupt() -> Iterator[None]:
    """A section a stop must not cut in half (a protocol line, an iteration batch). Signal
    handlers run on the main thread only, so only the main thread's sections count."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    State.critical += 1
    try:
        yield
    finally:
        State.critical -= 1
        if not State.critical and State.stop_pending:
            State.stop_pending = False
            raise KeyboardInterrupt


class MarkedStream:
    """``sys.stdout``/``sys.stderr`` that mark the iteration before the first write in it.

    Python-level prints are thus pinned exactly even when per-iteration markers are off (no
    log capture), and cost nothing in iterations that print nothing.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if State.iteration is not None and State.marked != State.iteration:
            self._stream.flush()
            marker("it", State.iteration)
        return int(self._stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class Phases:
    """Times setup phases and tells the parent as each starts and ends."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    @contextlib.contextmanager
    def __call__(self, name: str):  # type: ignore[no-untyped-def]
        State.phase = name
        sys.stderr.flush()
        marker("phase", name)
        self.channel.send({"t": "phase_start", "name": name}, now=True)
        reads = io_counters.start()
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            State.setup_end_ns = time.perf_counter_ns()
            ms = (State.setup_end_ns - start) / 1e6
            message: dict[str, Any] = {"t": "phase", "name": name, "ms": ms}
            read, faults = reads.since_last() if reads is not None else (0, 0)
            if read or faults:  # what the phase waited on the disk for
                message.update(read_bytes=read, majflt=faults)
            self.channel.send(message, now=True)
