"""What the parent can check of what the child says: a model runs in that child, and may lie.

The agent shares its protocol descriptor and its ring of timings with the model it runs, so
a model can forge a ``done``, write iterations into the ring, or send a batch of its own. The
parent cannot prevent that; it can refuse what no honest run produces: a ``done`` that
disagrees with what was asked and seen, timings no clock gives within the time the run has
lasted, starts out of order. Each check returns ``None`` or one line naming what failed;
the session records it as an event and ends the run ``failed`` with ``INTEGRITY`` in its
detail, never ``ok``.

Pure: numbers in, words out.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from warmscope.core.data.packing import has_negative

INTEGRITY = "integrity check failed"
"""What starts the detail of a run that failed one of these checks."""

CLOCK_SLACK_NS = 1_000_000_000
"""How far the child's timings may run past the parent's clock (both read the same monotonic
clock, at slightly different moments) before they are impossible."""

DONE_EXIT_S = 10.0
"""How long the agent may stay alive after its ``done``: it exits right after sending it."""


def check_timings(
    ns: Sequence[int], st: Sequence[int], elapsed_ns: int, after_ns: int, *, order: bool = True
) -> str | None:
    """A batch of durations and starts (ns from the loop's start), as no clock gives them:
    negative, longer than the run has lasted (``elapsed_ns`` since the child was spawned),
    starting before ``after_ns`` (where the last accepted iteration began), or (``order``)
    out of order. Without ``order`` it costs one pass over the durations in Python and one
    in C: a batch may hold a million iterations."""
    if not ns:
        return None
    if len(st) != len(ns):
        return "durations and starts differ in length"
    limit = elapsed_ns + CLOCK_SLACK_NS
    negative = has_negative(ns) if isinstance(ns, array) else min(ns) < 0
    if negative:
        return f"a negative latency ({min(ns)} ns)"
    high = max(ns)
    if high > limit:
        return f"a latency of {high / 1e9:.3g} s in a run {elapsed_ns / 1e9:.3g} s long"
    if st[0] < after_ns:
        return f"an iteration starts at {st[0]} ns, before the one before it ({after_ns} ns)"
    if order and any(b < a for a, b in pairwise(st)):
        return "iteration starts out of order"
    end = (max(st) if order else st[-1]) + high
    if end > limit:
        return f"an iteration ending {end / 1e9:.3g} s into a run {elapsed_ns / 1e9:.3g} s long"
    return None


def check_ring_count(completed: int, received: int, slots: int) -> str | None:
    """The ring's counter against what the child sent: it never runs more than a ring ahead
    (the agent sends well within it) and never more than one behind: a stop that lands after
    an iteration's timing is kept but before the counter moves on sends that iteration with
    the last batch, its count not yet written."""
    if completed < received - 1:
        return f"the ring counts {completed} iterations, {received} were sent"
    if completed - received > slots:
        return f"the ring counts {completed} iterations, {received} sent: beyond its {slots} slots"
    return None


def check_done(
    done: dict[str, Any],
    *,
    count: int,
    iters: int,
    duration: float | None,
    bounded_by_shapes: bool,
    last_end_ns: int | None,
    stop_requested: bool,
    extra: int = 0,
) -> str | None:
    """A ``done`` against what was asked (``--iters``, ``--duration``) and seen (``count``
    iterations, the last ending ``last_end_ns`` into the loop). ``bounded_by_shapes``: a
    schedule that may end the loop early (every shape once). ``extra``: iterations a run may
    add past ``--iters`` (the steady state's profiled one)."""
    said = done.get("iterations")
    if done.get("status") == "stopped":
        if not stop_requested:
            return "the child said it was stopped, and nobody stopped it"
        return None
    if said != count:
        return f"the child said it ran {said} iterations, {count} arrived"
    if stop_requested:
        return None
    if duration:
        short = last_end_ns is None or last_end_ns < duration * 1e9 - CLOCK_SLACK_NS
        if short and not bounded_by_shapes:
            ran = 0.0 if last_end_ns is None else last_end_ns / 1e9
            return f"done after {ran:.3g} s of --duration {duration:g}, unasked"
    elif count > iters + extra:
        return f"done after {count} iterations, beyond --iters {iters}"
    elif count < iters and not bounded_by_shapes:
        return f"done after {count} of --iters {iters}, unasked"
    return None


class Witness:
    """What the parent saw of the child, for these checks: the last iteration accepted, and
    the ``done`` with when it came. Each method returns ``None`` or the check that failed."""

    def __init__(self) -> None:
        self.done: dict[str, Any] | None = None
        self.done_at = 0.0
        self.last_start_ns = 0
        self.last_end_ns: int | None = None

    def batch(
        self, ns: Sequence[int], st: Sequence[int], elapsed_ns: int, *, order: bool = False
    ) -> str | None:
        """A batch of timings; accepted (and remembered) where a clock could give it."""
        problem = check_timings(ns, st, elapsed_ns, self.last_start_ns, order=order)
        if problem is None and ns:
            self.last_start_ns, self.last_end_ns = st[-1], st[-1] + ns[-1]
        return problem

    def said_done(self, message: dict[str, Any], now: float) -> str | None:
        second = self.done is not None
        self.done, self.done_at = message, now
        return "a second done" if second else None

    def lingering(self, now: float) -> str | None:
        """The child still running well after its ``done`` (called while it runs)."""
        if self.done_at and now - self.done_at > DONE_EXIT_S:
            return f"the child was still running {now - self.done_at:.0f} s after its done"
        return None

    def ending(self, count: int, settings: Any, stop_requested: bool) -> str | None:
        """The ``done``, if any, against ``settings`` (``RunSettings``) and ``count``."""
        if self.done is None:
            return None
        return check_done(
            self.done,
            count=count,
            iters=settings.iters,
            duration=settings.duration,
            bounded_by_shapes=settings.schedule == "once",
            last_end_ns=self.last_end_ns,
            stop_requested=stop_requested,
            extra=1 if settings.profile_plan()[1] else 0,
        )
