"""One process's stream to ``warmscope exec``: a Unix-socket connection, batched.

Every process of the watched program's tree that runs Python connects on its own (a forked
child reconnects), so each has a stream of its own. Lines are protocol lines (JSON, one per
line): ``hello`` first, then tables (``module``, ``signature``, ``thread``), ``event`` and
``phase`` lines as they happen, and ``calls`` in batches. Nothing here may break the program:
a parent that is gone or stuck turns the stream off and the program runs on unwatched.

Child side: standard library only, and only the light part of it, since it loads at every
interpreter start of the program (``_socket``, not ``socket``, whose enums cost milliseconds;
``threading`` is not imported before the program imports torch).
"""

from __future__ import annotations

import _json
import _socket
import _thread
import atexit
import binascii
import os
import sys
import time
from array import array
from collections import deque

TYPE_CHECKING = False  # typing itself costs an interpreter start milliseconds
if TYPE_CHECKING:
    from typing import Any

SOCKET_ENV = "WARMSCOPE_EXEC_SOCKET"
"""The path of the Unix socket warmscope listens on: set, the program is watched."""
LOG_ENV = "WARMSCOPE_EXEC_LOG"
"""A file where a process that cannot reach the socket appends the one line saying why."""
WATCH_ENV = "WARMSCOPE_EXEC_WATCH"
"""``MODULE:ATTR;...``: the callables ``--watch`` names (read by the bootstrap)."""

FLUSH_EVERY_NS = 50_000_000  # the flusher sends what waits every 50 ms...
BUSY_AFTER_NS = 500_000_000  # ... and a call running longer than this is reported live
SEND_TIMEOUT_S = 2.0  # a parent that stops reading for this long ends the stream
MAX_PENDING = 1_000_000  # calls held for a slow parent; beyond, only counted as lost

CALL_COLUMNS = ("n", "m", "s", "th", "st", "ns")
"""The columns of a ``calls`` line, in the order of a call's record tuple: call number,
module id, signature id, thread id (native), start (``perf_counter_ns``), duration (ns)."""


def _column(values: tuple[int, ...]) -> bytes:
    col = array("q", values)
    if sys.byteorder == "big":
        col.byteswap()
    return binascii.b2a_base64(col, newline=False)


def encode_calls(records: list[tuple[int, ...]], raised: list[int], lost: int) -> bytes:
    """A ``calls`` line: each column base64 of little-endian int64, as ``iters`` has them;
    ``raised``: the numbers of the calls that raised, ``lost``: calls not kept (a parent too
    slow to read), where there are any."""
    body = [b'"t":"calls"']
    if records:
        columns = zip(*records, strict=True)
        body += [
            b'"%s":"%s"' % (name.encode(), _column(col))
            for name, col in zip(CALL_COLUMNS, columns, strict=True)
        ]
    if raised:
        body.append(b'"raised":[%s]' % b",".join(b"%d" % n for n in raised))
    if lost:
        body.append(b'"lost":%d' % lost)
    return b"{%s}\n" % b",".join(body)


def encode(message: dict[str, Any]) -> bytes:
    """One protocol line. JSON written here, with the C escaper of ``json``: importing
    ``json`` itself (and with it ``re``) would cost every interpreter start milliseconds."""
    return _json_text(message).encode() + b"\n"


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return str(_json.encode_basestring_ascii(value))
    if value is None or isinstance(value, bool):
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else "null"
    if isinstance(value, dict):
        items = ",".join(f"{_json_text(str(k))}:{_json_text(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    return _json_text(str(value))


def tell_log(why: str) -> None:
    """The one line saying why this process runs unwatched, where the parent can read it
    without a socket (``LOG_ENV``); nothing when that is not set or not writable."""
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {why}\n")
    except OSError:
        pass


class Stream:
    """The batched connection. ``calls`` holds call records, ``notes`` the other lines in
    order, ``raised`` the numbers of calls that raised: ``deque``s, which any thread may append
    to at once. The flusher thread sends them; the program's own threads send only at start
    (``hello``) and at exit."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.on = False
        self.sock: Any = None
        self.lock = _thread.allocate_lock()
        self.calls: deque[tuple[int, ...]] = deque()
        self.notes: deque[bytes] = deque()
        self.raised: deque[int] = deque()
        self.lost = 0
        self.flusher: int | None = None
        self.running: dict[int, tuple[int, int, int, int]] = {}
        """The outermost call in progress on each thread, by ident: (call number, module id,
        native thread id, start). Kept by the timer; read here for ``busy``."""
        self.busy_told: set[int] = set()
        self.multiprocessing_told = False
        self.device: deque[tuple[int, Any, Any]] = deque()
        """Calls timed on a GPU: (call number, CUDA event before, after); the flusher reads
        each pair once the device has passed its second event."""

    def connect(self) -> None:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(SEND_TIMEOUT_S)
            sock.connect(self.path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.on = True

    def hello(self) -> None:
        self.send_now(
            {
                "t": "hello",
                "v": 1,
                "source": "exec",
                "pid": os.getpid(),
                "ppid": os.getppid(),
                "argv": list(getattr(sys, "orig_argv", sys.argv)),
                "executable": sys.executable,
                "python": sys.version.split()[0],
                "clock_ns": time.perf_counter_ns(),
                "wall_ns": time.time_ns(),
            }
        )

    # -- sending -----------------------------------------------------------------------------

    def note(self, message: dict[str, Any]) -> None:
        """A line that goes out with the next batch, before its calls."""
        if self.on:
            self.notes.append(encode(message))

    def send_now(self, message: dict[str, Any]) -> None:
        self.note(message)
        self.flush(wait=True)

    def flush(self, *, wait: bool) -> None:
        if not self.on:
            return
        if not self.lock.acquire(wait, SEND_TIMEOUT_S if wait else -1):  # a stuck flush
            return
        try:
            self._flush_locked()
        finally:
            self.lock.release()

    def _flush_locked(self) -> None:
        # Calls first, then notes: a call's tables were noted before the call was recorded,
        # so they are in this batch's notes, sent before its calls.
        batch = _drain(self.calls)
        notes = _drain(self.notes)
        raised = _drain(self.raised)
        lost, self.lost = self.lost, 0
        data = b"".join(notes)
        if batch or raised or lost:
            data += encode_calls(batch, raised, lost)
        if not data:
            return
        try:
            self.sock.sendall(data, _socket.MSG_NOSIGNAL)
        except OSError:
            self.end()

    def end(self) -> None:
        """The parent is gone or stuck: the program goes on unwatched."""
        self.on = False
        self.calls.clear()
        self.notes.clear()
        if self.sock is not None:
            try:  # noqa: SIM105 (contextlib costs an interpreter start milliseconds)
                self.sock.close()
            except OSError:
                pass

    def close(self) -> None:
        """At exit: what is left goes out (device times the GPU has passed by now too)."""
        if self.device:
            try:  # noqa: SIM105
                self._device_times()
            except Exception:
                pass
        self.flush(wait=True)

    # -- the flusher thread ------------------------------------------------------------------

    def start_flusher(self) -> None:
        """A thread of warmscope's own (``_thread``: not in ``threading.enumerate()``) sends
        what waits and tells of calls that run long. Started once calls can happen."""
        if self.flusher is None and self.on:
            self.flusher = _thread.start_new_thread(self._flush_loop, (os.getpid(),))

    def _flush_loop(self, pid: int) -> None:
        while self.on and os.getpid() == pid:
            time.sleep(FLUSH_EVERY_NS / 1e9)
            try:
                self._tell_busy()
                if self.device:
                    self._device_times()
                if self.calls or self.notes or self.raised or self.lost:
                    self.flush(wait=True)
            except Exception as exc:  # the stream's own fault: stop watching, say why
                self.note({"t": "unwatched", "why": f"stream: {type(exc).__name__}: {exc}"})
                self.flush(wait=True)
                self.end()

    def _device_times(self) -> None:
        """The device time of each call whose events the GPU has passed, in order, as a
        ``device_ns`` line (call numbers, ns); a pair that cannot be read is -1."""
        numbers: list[int] = []
        times: list[int] = []
        while self.device:
            number, before, after = self.device[0]
            if before is None or after is None:
                times.append(-1)
            elif not after.query():
                break
            else:
                try:
                    times.append(int(before.elapsed_time(after) * 1e6))
                except Exception:
                    times.append(-1)
            numbers.append(number)
            self.device.popleft()
        if numbers:
            self.note({"t": "device_ns", "n": numbers, "dv": times})

    def _tell_busy(self) -> None:
        now = time.perf_counter_ns()
        for number, module, tid, start in list(self.running.values()):
            if now - start > BUSY_AFTER_NS and number not in self.busy_told:
                self.busy_told.add(number)
                self.note(
                    {"t": "busy", "call": number, "m": module, "th": tid, "ms": (now - start) / 1e6}
                )

    # -- a forked child ----------------------------------------------------------------------

    def reborn(self) -> None:
        """In a forked child: the parent's pending lines are the parent's to send; this
        process gets a connection and a stream of its own."""
        self.lock = _thread.allocate_lock()
        self.calls.clear()  # cleared, not replaced: the timers hold these
        self.notes.clear()
        self.raised.clear()
        self.lost = 0
        self.running.clear()
        self.device.clear()
        self.busy_told = set()
        self.flusher = None
        inherited, self.sock, self.on = self.sock, None, False
        if inherited is not None:
            try:  # noqa: SIM105
                inherited.close()  # this process's reference only: the parent's stays open
            except OSError:
                pass
        try:
            self.connect()
            self.hello()
        except OSError as exc:
            tell_log(f"unwatched: cannot reach warmscope at {self.path}: {exc}")


def _drain(queue: deque[Any]) -> list[Any]:
    """What ``queue`` holds now, taken out: appends from other threads while it runs stay for
    the next batch (a ``deque``'s ``append`` and ``popleft`` are atomic; swapping a list for a
    new one would lose an append made to the old one)."""
    return [queue.popleft() for _ in range(len(queue))]


STREAM: list[Stream] = []
"""This process's stream, once ``start`` connected it."""


def start(path: str) -> Stream:
    """Connect, say hello, and keep the stream across exit and fork. Raises ``OSError``
    when the socket cannot be reached."""
    stream = Stream(path)
    stream.connect()
    stream.hello()
    STREAM[:] = [stream]
    atexit.register(stream.close)
    os.register_at_fork(before=_before_fork, after_in_child=stream.reborn)
    return stream


def _before_fork() -> None:
    """A ``multiprocessing`` worker made by fork ends with ``os._exit``, past ``atexit``, after
    running its finalizers: so that its last calls go out, it gets one (registered in the
    worker itself, since the worker clears the ones it inherits)."""
    util = sys.modules.get("multiprocessing.util")
    if util is not None and STREAM and not STREAM[0].multiprocessing_told:
        STREAM[0].multiprocessing_told = True
        util.register_after_fork(STREAM[0], _finalize_in_worker)


def _finalize_in_worker(stream: Stream) -> None:
    util = sys.modules["multiprocessing.util"]
    util.Finalize(None, stream.close, exitpriority=-100)  # the last finalizer to run
