"""The child's waits for a core (``waits`` lines), and which calls they show contended.

Kept apart from ``contention`` (which names them) so that ``RunData`` can leave contended
calls out of its statistics without importing what reads the whole run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import NamedTuple

CONTENDED = 0.5
"""A window is contended where its threads waited for a core at least this share of its
calls' time; a call is named for contention where the wait is this share of its excess."""
MOST_LEFT_OUT = 0.5
"""Contended calls are left out of the statistics while they are under this share of the
calls: a run contended throughout has no other state to measure, and its warning says so."""


class CpuWait(NamedTuple):
    """One reading of the child's run-queue delay over the calls ``since`` to ``iteration``:
    the wait for a core of the thread that calls the model (``wait_ns``, the calls' critical
    path), the other threads' summed (``threads_ns``: torch's workers), and the process's
    involuntary context switches."""

    since: int
    iteration: int
    wait_ns: int
    switches: int
    threads_ns: int = 0


def calls(w: CpuWait, count: int) -> range:
    """The calls a reading covers, of the ``count`` the run holds."""
    return range(w.since, min(w.iteration, count - 1) + 1)


def window_ms(w: CpuWait, latency: Callable[[int], float], count: int) -> float:
    """The time of the calls a reading covers (ms)."""
    return sum(latency(i) for i in calls(w, count))


def share(w: CpuWait, latency: Callable[[int], float], count: int) -> float:
    """The wait of a window against its calls' time."""
    window = window_ms(w, latency, count)
    return w.wait_ns / 1e6 / window if window > 0 else 0.0


def contended(w: CpuWait, latency: Callable[[int], float], count: int) -> bool:
    return share(w, latency, count) >= CONTENDED


def left_out(
    waits: list[CpuWait],
    latency: Callable[[int], float],
    count: int,
    keep: Collection[int] = (),
) -> list[int]:
    """The calls of contended windows, to leave out of the statistics (``keep``: calls that
    stay whatever their wait, each shape's first call): windows whose wait is ``CONTENDED``
    of their time and that much above the run's typical window (a machine busy throughout
    waits in every call: its steady state is that, and only a stretch worse than it is left
    out); none where they would be most of the run (``MOST_LEFT_OUT``)."""
    shares = [(w, share(w, latency, count)) for w in waits]
    if not shares:
        return []
    typical = _median_call_share(shares, count)
    out = [
        i
        for w, part in shares
        if part >= CONTENDED and part >= typical + CONTENDED
        for i in calls(w, count)
        if i not in keep
    ]
    return out if len(out) < MOST_LEFT_OUT * count else []


def _median_call_share(shares: list[tuple[CpuWait, float]], count: int) -> float:
    """The wait share of the run's median call: a call no reading covers waited for nothing
    (a reading with no wait is not sent), so the typical call is not the typical reading."""
    by_share = sorted(shares, key=lambda pair: pair[1], reverse=True)
    seen = 0
    for w, part in by_share:
        seen += len(calls(w, count))
        if seen >= count / 2:
            return part
    return 0.0
