"""Reading the child's two pipes: complete lines to a consumer, until the child has exited.

The protocol arrives on stdout, logs and markers on stderr. ``PipeReader`` splits both into
lines, bounds what it holds (a newline-less flood on stderr is cut; a protocol line past its
limit is a fault), tells a protocol line torn by the child's death from a broken protocol, and
stops shortly after the child exits: helpers it started may hold the pipes open for ever.
What the lines mean is the consumer's business (``ReaderConsumer``).
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import selectors
import subprocess
import termios
import time
from typing import Protocol

READ_CHUNK = 1 << 16
IDLE_FLUSH_S = 0.1
READ_PAUSE_S = 0.005
MAX_STDERR_LINE = 1 << 20
MAX_PROTOCOL_LINE = 256 << 20  # a profile or graph dump is large; a line past this is a fault
DRAIN_S = 0.5
"""After the agent exits: how long to read what is left in the pipes. Helpers the model
started may hold them open for ever; the run does not wait for them."""


class ReaderConsumer(Protocol):
    """What the reader hands on, from its own thread."""

    def turn_begins(self) -> None:
        """Before a turn reads anything (and before the reader asks what stderr holds)."""

    def protocol_lines(self, lines: list[bytes]) -> None:
        """Complete lines from stdout (empty ones included), in order."""

    def stderr_lines(self, lines: list[bytes]) -> None:
        """Lines from stderr, in order; the last one of a stream may lack its newline."""

    def torn_message(self, tail: bytes) -> None:
        """stdout ended inside a line: the child died while writing it."""

    def message_too_long(self, limit: int) -> None:
        """A protocol line grew past ``limit`` bytes; what it held is dropped."""

    def turn_ends(self, *, idle: bool, stderr_caught_up: bool, now: float) -> None:
        """After a turn. ``idle``: nothing was ready to read. ``stderr_caught_up``: the turn
        read at least what the stderr pipe held as it began (always, unless measured)."""


class Gathered:
    """One stream's line in progress, gathered in time linear in what arrives: its pieces are
    kept apart and joined once, when its newline comes (copying the whole line on every read
    made an endless line quadratic)."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes (possibly none); the rest is kept."""
        if b"\n" not in chunk:
            self.pieces.append(chunk)
            self.size += len(chunk)
            return []
        lines = chunk.split(b"\n")
        if self.pieces:
            lines[0] = b"".join([*self.pieces, lines[0]])
        rest = lines.pop()
        self.pieces, self.size = ([rest], len(rest)) if rest else ([], 0)
        return lines

    def take(self) -> bytes:
        """What is kept, joined; the line starts again."""
        data = b"".join(self.pieces)
        self.pieces, self.size = [], 0
        return data

    def drop(self) -> None:
        self.pieces, self.size = [], 0


class PipeReader:
    """Reads ``proc``'s stdout and stderr for ``consumer`` until ``proc`` has exited.

    ``measure_stderr``: ask, each turn, how much the stderr pipe holds before reading it (one
    ``ioctl``), for ``turn_ends``'s ``stderr_caught_up``.
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        consumer: ReaderConsumer,
        *,
        measure_stderr: bool,
    ) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.consumer = consumer
        self.measure_stderr = measure_stderr
        self.out_fd = proc.stdout.fileno()
        self.err_fd = proc.stderr.fileno()

    def run(self) -> None:
        """Read until the child has exited and its pipes are drained (or held by others), then
        close them. The caller reaps the child."""
        proc, consumer = self.proc, self.consumer
        out_fd, err_fd = self.out_fd, self.err_fd
        selector = selectors.DefaultSelector()
        buffers = {out_fd: Gathered(), err_fd: Gathered()}
        for fd in (out_fd, err_fd):
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        exited_at: float | None = None
        while True:
            consumer.turn_begins()
            held = pipe_holds(err_fd) if self.measure_stderr else 0
            consumed = 0
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now  # the end of the run: the agent's exit, not EOF on its pipes
            if exited_at is not None and now - exited_at > DRAIN_S:
                break  # what is left belongs to helpers that still hold the pipes
            if not selector.get_map():
                if exited_at is not None:
                    break
                time.sleep(IDLE_FLUSH_S)  # a child that closed both pipes: wait for its exit
                ready = []
            else:
                # Once the agent has exited, read only while something is there to read.
                ready = selector.select(IDLE_FLUSH_S if exited_at is None else 0.05)
                if exited_at is not None and not ready:
                    break
            got = 0
            for key, _ in ready:
                fd = int(key.fd)
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                gathered = buffers[fd]
                if not chunk:
                    selector.unregister(fd)
                    if gathered.size and fd == out_fd:
                        consumer.torn_message(gathered.take())
                    elif gathered.size:
                        consumer.stderr_lines([gathered.take()])
                    continue
                got += len(chunk)
                if fd == err_fd:
                    consumed += len(chunk)
                lines = gathered.feed(chunk)
                if fd == err_fd:
                    if gathered.size > MAX_STDERR_LINE:
                        lines.append(gathered.take())  # a newline-less flood: cut it, bound memory
                    consumer.stderr_lines(lines)
                else:
                    if gathered.size > MAX_PROTOCOL_LINE:
                        gathered.drop()
                        consumer.message_too_long(MAX_PROTOCOL_LINE)
                    consumer.protocol_lines(lines)
            now = time.monotonic()
            consumer.turn_ends(idle=not ready, stderr_caught_up=consumed >= held, now=now)
            if ready and got < READ_CHUNK // 4 and exited_at is None:
                # Light traffic: let lines pile up in the pipe, so that a child writing a marker
                # every iteration rarely has to wake this thread (most of what a marker costs it).
                # Heavy traffic (a log flood) is read at full speed so the child never waits.
                time.sleep(READ_PAUSE_S)
        selector.close()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def pipe_holds(fd: int) -> int:
    """Bytes waiting in the pipe (FIONREAD); a huge number when it cannot tell."""
    n = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, n)
    except OSError:
        return 1 << 62
    return n[0]
