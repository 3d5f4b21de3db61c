"""What the child says on its protocol pipe, taken in: each message decoded, its timings held
to what a clock gives (``integrity``), folded and recorded; the setup phase and the long
iteration in progress, for the live view; the iterations it measured but died before sending,
from the shared ring. A child that breaks the protocol, or claims what cannot be true, ends the
run failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from warmscope.core.child import outcome, protocol
from warmscope.core.child.ring import IterationRing
from warmscope.core.data.fold import iterations_entry, record_entry
from warmscope.core.data.run import Event
from warmscope.core.data.settings import RunSettings
from warmscope.core.run import integrity, remote
from warmscope.core.run.ending import not_a_python
from warmscope.core.run.integrity import INTEGRITY
from warmscope.core.run.live_record import LiveRecord
from warmscope.core.run.run_stop import RunStop


class ChildMessages:
    """The child's protocol messages into ``record``; a fault ends the run (``stopping``)."""

    def __init__(
        self,
        settings: RunSettings,
        record: LiveRecord,
        stopping: RunStop,
        elapsed: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.record = record
        self.stopping = stopping
        self.elapsed = elapsed
        self.ring: IterationRing | remote.RemoteRing | None = None
        """The run's ring of iteration timings, once it started (``remote.ring_for``)."""
        self.witness = integrity.Witness()
        """The child's ``done`` and last iteration, for the checks of what it says."""
        self.hello = False
        self.phase: str | None = None
        """The setup phase in progress (live only: the record keeps each phase's time)."""
        self.busy: dict[str, Any] | None = None
        """While one iteration runs long: ``{"iteration", "ms", "activity"}`` (live only)."""

    def take(self, line: bytes) -> None:
        """One protocol line: ``ValueError`` (or another error) where it is not a message."""
        try:
            msg = protocol.decode(line)
        except ValueError:
            raise ValueError("not a JSON protocol message") from None
        kind = msg["t"]
        if kind == "iters":
            self.busy = None
            ns, st, sh = protocol.iteration_columns(msg)
            if not self.timings_hold(ns, st):
                return
            entry, packed = iterations_entry(msg["i0"], ns, st, sh)
            self.record.commit(entry, native=True, packed=packed)
            return
        elif kind == "phase_start":
            self.phase = str(msg["name"])
        elif kind == "busy":
            self.busy = msg
        elif kind == "done":
            self.integrity_fault(self.witness.said_done(msg, time.monotonic()))
        elif kind == "remote_sample" and isinstance(self.ring, remote.RemoteRing):  # taken there
            self.ring.sampled(msg)
            return self.record.commit(
                remote.sample_line(msg, self.elapsed(), self.record.data.count)
            )
        elif kind in remote.LAST_WORDS and isinstance(self.ring, remote.RemoteRing):  # it ended
            note = self.ring.received(msg)
            if note is not None:  # made there, left there: the user sees its name
                self.record.add_event(Event("info", note))
            return None
        elif kind == "hello":
            self.hello = True
            if msg.get("v") != protocol.VERSION:
                self.record.add_event(
                    Event(
                        "info", f"agent speaks protocol {msg.get('v')}, expected {protocol.VERSION}"
                    )
                )
        folded, packed = record_entry(msg, self.elapsed())
        if folded is not None:
            self.record.commit(folded, native=True, packed=packed)  # decoded from the child's JSON
            if kind == "error":
                self.record.flush()

    def timings_hold(self, ns: Any, st: Any, where: str = "a batch") -> bool:
        """Whether a batch of timings is one a clock gives (``integrity``); else the run fails."""
        order = where != "a batch"  # the ring's few are checked in full; a batch by its extremes
        problem = self.witness.batch(ns, st, int(self.elapsed() * 1e9), order=order)
        self.integrity_fault(problem and f"{where}: {problem}")
        return problem is None

    def integrity_fault(self, reason: str | None) -> None:
        """What the child said cannot be true (``reason``): an event, and the run ends failed."""
        if reason is None or self.stopping.fault is not None:
            return
        self.record.add_event(Event("error", INTEGRITY, reason))
        self.stopping.end(outcome.FAILED, f"{INTEGRITY}: {reason}", outcome.EXIT_FAILED)

    def protocol_fault(self, reason: str) -> None:
        """The child broke the protocol (garbage, wrong shapes, out of order): say so, end it."""
        if self.stopping.fault is not None:
            return
        if not self.hello and self.settings.python is not None:
            # Not our agent speaking at all: the interpreter ran something else.
            self.stopping.end(
                *not_a_python(self.settings.python, "it printed something else instead")
            )
            return
        self.record.add_event(Event("error", "the child broke the protocol", reason))
        self.stopping.end(
            outcome.FAILED, f"the child broke the protocol: {reason[:200]}", outcome.EXIT_FAILED
        )

    def recover_unsent(self) -> None:
        """Iterations the child measured but died before sending, from the shared ring (over
        ``--host``, the guardian's, as it sent it back)."""
        ring, data = self.ring, self.record.data
        assert ring is not None
        first = data.count
        problem = integrity.check_ring_count(ring.completed(), first, ring.slots)
        ns, st = (
            ring.read_ns(first) if problem is None and self.stopping.fault is None else ([], [])
        )
        if problem is not None:
            self.integrity_fault(f"the shared ring: {problem}")
        elif ns and not self.timings_hold(ns, st, "the shared ring"):
            ns = []
        if ns:
            line, packed = iterations_entry(first, ns, st)
            self.record.commit(line, native=True, packed=packed)
            self.record.add_event(
                Event(
                    "info",
                    f"recovered {len(ns)} iteration(s) measured before the child died",
                    iteration=first,
                )
            )
        ring.close()
