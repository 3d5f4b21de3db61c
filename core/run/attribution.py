"""Which iteration (or setup phase) each line the child printed on fd 2 belongs to.

The agent writes a marker line to fd 2 as a phase starts, as its loop starts and after each
iteration that wrote there (``channel.marker``); C++ JIT logs, warnings and prints sit between
them. ``Attribution`` turns the lines read from the pipe into events pinned to where they were
printed. It is pure: no pipes, no threads, no clock; what it needs of the run (the count of
completed iterations, the shared counter) comes with each call.

A line read before its iteration's marker waits (``Awaiting.MARKER``) until the marker names
it, or until the shared counter proves it (``settle``). Without markers (no log capture on) a
line in the loop goes to the iteration running as it is read, marked approximate. Repeated
blocks of output (the same text but for its numbers) are counted, not kept again.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from warmscope.core.child import protocol
from warmscope.core.data.run import Event
from warmscope.core.run.jitlog import ParsedEvent, StderrParser

MAX_PENDING_CHARS = 1 << 20
"""Log text waiting for its iteration's marker; past it (a flood within one long iteration) the
lines go on as the iteration then running, marked approximate, so memory stays bounded."""
MAX_STDERR_EVENTS = 2000
"""Stderr events a run keeps; past it (a model printing every pass) lines go to the side file
and are counted, so memory stays bounded however long the run."""
DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Phase:
    """Printed during a setup phase (or by another thread, between the loop and a phase)."""

    name: str


@dataclass(frozen=True)
class Iteration:
    """Printed in iteration ``index``; ``approx``: the one running as the line was read."""

    index: int
    approx: bool = False


class Awaiting(enum.Enum):
    """Lines whose place is not known yet as they are read."""

    MARKER = "marker"
    """Markers are on: the next marker (or the shared counter) names the iteration."""
    COUNTER = "counter"
    """No markers in the loop: the iteration running as the line is read, approximately."""


Where = Phase | Iteration
State = Phase | Iteration | Awaiting


@dataclass(frozen=True)
class BadMarker:
    """A marker that names no iteration: the child broke the protocol."""

    reason: str


@dataclass
class Fed:
    """What one batch of lines gave: events and faults in order, and the lines that were not
    markers (the side file keeps them all)."""

    out: list[Event | BadMarker] = field(default_factory=list)
    plain: list[bytes] = field(default_factory=list)


@dataclass
class _Repeat:
    """A block of output that may repeat: its shape (digits aside), the first and last time."""

    key: str
    first: Event
    count: int = 0
    last: Event = field(init=False)

    def __post_init__(self) -> None:
        self.last = self.first


class Attribution:
    """Feed it the child's stderr lines; get back events pinned to iterations and phases.

    ``markers``: whether the agent marks the loop's iterations (a log capture is on).
    ``side_file``: where every line is kept, named in the events that stand for many.
    ``marker``: the prefix that makes a line a marker; any other line is the child's output.
    """

    def __init__(self, *, markers: bool, side_file: str, marker: bytes = protocol.MARKER) -> None:
        self.markers = markers
        self.side_file = side_file
        self.marker = marker
        self._done_marker = marker + b"done "
        self.state: State = Phase("start")
        self.iteration_markers = 0
        """Iteration markers read: with the agent's SIGIO watch, one per iteration that
        printed, not one per iteration."""
        self._parser: StderrParser = StderrParser()
        self._pending: list[str] = []
        self._pending_chars = 0
        self._repeat: _Repeat | None = None
        self._stderr_events = 0
        self._dropped = 0
        self._out: list[Event | BadMarker] = []

    @property
    def pending(self) -> bool:
        """Whether lines wait for their iteration."""
        return bool(self._pending)

    def feed(self, lines: list[bytes], running: int) -> Fed:
        """``lines`` as read from the pipe (no newline); ``running``: the iteration in progress
        as they are read (the larger of the shared counter and the iterations received)."""
        plain: list[bytes] = []
        skip = len(self._done_marker)
        for line in lines:
            if line.startswith(self._done_marker) and line[skip:].isdigit():
                # The lines since the last marker were printed in this iteration, which is over:
                # its blocks (a graph dump) reach the screen now, not when the next line comes.
                self.iteration_markers += 1
                self._resolve(Iteration(int(line[skip:])), running)
                self._emit(self._parser.flush())
                self.state = Awaiting.MARKER
                continue
            mark = protocol.parse_marker(line, self.marker)
            if mark is not None:
                self._marker(*mark, line=line, running=running)
                continue
            plain.append(line)
            text = line.decode(errors="replace").rstrip("\r")
            state = self.state
            if state is Awaiting.MARKER:
                self._pending.append(text)
                self._pending_chars += len(text)
                if self._pending_chars > MAX_PENDING_CHARS:
                    self._resolve(None, running)
                continue
            if state is Awaiting.COUNTER:
                # No marker (a C++ write with no log capture on): the iteration in progress as
                # this line is read, from the child's shared counter.
                state = Iteration(running, approx=True)
            self._emit(self._parser.feed(text, state))
        return Fed(self._take(), plain)

    def _marker(self, kind: str, value: str, *, line: bytes, running: int) -> None:
        if kind in ("it", "done") and not (value.isascii() and value.isdigit()):
            self._out.append(BadMarker(f"a marker with a bad iteration: {line[:80]!r}"))
            return
        # Lines still pending were printed in the iteration a Python print marks (earlier ones
        # would have had their own marker); before a phase, they are another thread's, printed
        # after the loop's last look.
        self._resolve(Iteration(int(value)) if kind == "it" else None, running)
        self._emit(self._parser.flush())
        self.iteration_markers += kind in ("it", "done")
        if kind == "it":
            self.state = Iteration(int(value))
        elif kind == "done":
            self.state = Awaiting.MARKER
        elif kind == "loop":
            self.state = Awaiting.MARKER if self.markers else Awaiting.COUNTER
        else:
            self.state = Phase(value)

    def idle(self) -> list[Event]:
        """The pipe is idle: the open block is complete as far as anyone can tell."""
        self._emit(self._parser.flush())
        return self._events()

    def settle(self, count0: int, completed: int) -> list[Event]:
        """Pending lines whose iteration the shared counter proves, so that a long iteration's
        log (a flood, too) shows while it runs, not only at its marker.

        Call it after a turn of the reader that read at least what the stderr pipe held as the
        turn began. ``count0`` iterations were complete before that turn began (``completed``
        now), and the agent writes an iteration's marker before it counts the iteration: every
        marker of those iterations was in the pipe then, within what it held, so it has been
        read: a line still pending was printed in iteration ``count0`` or later. If the counter
        still reads ``count0``, no later iteration has begun: it is exactly ``count0``.
        """
        if self._pending and completed == count0:
            self._resolve(Iteration(count0), count0)
        return self._events()

    def end(self, completed: int) -> list[Event]:
        """The agent is gone: what it printed after its last marker, it printed in the
        iteration it did not finish, the one the shared counter (``completed``) names."""
        self._resolve(Iteration(completed), completed)
        self._emit(self._parser.flush())
        self._close_repeat()
        if self._dropped:
            self._add(
                Event(
                    "info",
                    f"{self._dropped:,} more blocks of the child's output are only in "
                    f"{self.side_file}",
                )
            )
        return self._events()

    def _resolve(self, where: Where | None, running: int) -> None:
        """Hand the pending lines to the parser as printed ``where`` (None: approximately, the
        iteration running)."""
        if not self._pending:
            return
        pending, self._pending, self._pending_chars = self._pending, [], 0
        where = where or Iteration(running, approx=True)
        for text in pending:
            self._emit(self._parser.feed(text, where))

    def _emit(self, parsed: list[ParsedEvent]) -> None:
        for p in parsed:
            where = p.context
            data = dict(p.data)
            if isinstance(where, Iteration):
                if where.approx:
                    data["approx_iteration"] = True
                ev = Event(p.kind, p.title, p.text, iteration=where.index, data=data)
            else:
                assert isinstance(where, Phase)
                ev = Event(p.kind, p.title, p.text, phase=where.name, data=data)
            if p.kind == "stderr":
                self._stderr_event(ev)
            else:
                self._add(ev)

    def _stderr_event(self, ev: Event) -> None:
        """A block of the child's output. One that repeats (the same text but for its numbers:
        a model printing every pass) is counted, not kept again; past ``MAX_STDERR_EVENTS``
        blocks only the side file has them."""
        key = DIGITS.sub("#", ev.text)
        repeat = self._repeat
        if repeat is not None and repeat.key == key:
            repeat.count += 1
            repeat.last = ev
            return
        self._close_repeat()
        if self._stderr_events >= MAX_STDERR_EVENTS:
            self._dropped += 1
            return
        self._stderr_events += 1
        self._add(ev)
        self._repeat = _Repeat(key, ev)

    def _close_repeat(self) -> None:
        repeat, self._repeat = self._repeat, None
        if repeat is None or not repeat.count:
            return
        first, last = repeat.first, repeat.last
        where = (
            f"through iteration {last.iteration}"
            if last.iteration is not None
            else f"in {last.phase or 'setup'}"
        )
        title = f"… the output above repeated {repeat.count:,} more times, {where}"
        text = f"{title}; the last time:\n{last.text}\n(every line is in {self.side_file})"
        self._add(
            Event(
                "stderr",
                title,
                text,
                iteration=last.iteration,
                phase=last.phase,
                data={"repeats": repeat.count, "first_iteration": first.iteration},
            )
        )

    def _add(self, ev: Event) -> None:
        self._out.append(ev)

    def _take(self) -> list[Event | BadMarker]:
        out, self._out = self._out, []
        return out

    def _events(self) -> list[Event]:
        out = self._take()
        assert not any(isinstance(e, BadMarker) for e in out)  # only ``feed`` reads markers
        return [e for e in out if isinstance(e, Event)]
