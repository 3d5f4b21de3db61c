"""``LatencySeries``: every iteration of a run, for drawing, in bounded memory.

The first ``head`` iterations are kept exactly (that is where warm-up happens). All
iterations are also folded into at most ``capacity`` buckets of equal span (min, max, sum,
count, strongest event mark); when the buckets fill up, neighbours merge pairwise and the span
doubles. A chart of any width can then be drawn from a run of any length, and the run's full
history stays in its record.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

HEAD = 4096
CAPACITY = 1024

# Event marks drawn over the chart, weakest first: (priority, letter, name).
MARKS: tuple[tuple[int, str, str], ...] = (
    (1, "•", "event"),
    (2, "W", "warning"),
    (3, "P", "profiling run"),
    (4, "O", "optimization"),
    (5, "C", "compile"),
    (6, "R", "recompile"),
)
MARK_LETTER = {p: letter for p, letter, _ in MARKS}
MARK_NAME = {p: name for p, _, name in MARKS}
_PRIORITY_BY_LABEL = {name: p for p, _, name in MARKS}


def mark_priority(kind: str, label: str | None) -> int:
    """How an event (its kind and its iteration's label) is marked; 0: not at all."""
    if kind == "stderr":
        return 0
    if label in _PRIORITY_BY_LABEL:
        return _PRIORITY_BY_LABEL[label]
    if kind == "warning":
        return 2
    return 1


@dataclass(frozen=True)
class Column:
    """One drawn column: iterations ``first`` to ``last`` (inclusive)."""

    first: int
    last: int
    lo: float
    hi: float
    mean: float
    mark: int


class LatencySeries:
    """Appends iteration latencies (ms) in batches; answers columns for a chart."""

    def __init__(self, capacity: int = CAPACITY, head: int = HEAD) -> None:
        if capacity < 2 or capacity % 2:
            raise ValueError("capacity must be an even number >= 2")
        self.capacity = capacity
        self.head_size = head
        self.count = 0
        self.span = 1
        self.head: array[float] = array("d")
        self.lo = math.inf
        self.hi = 0.0
        self._lo: array[float] = array("d")
        self._hi: array[float] = array("d")
        self._sum: array[float] = array("d")
        self._n: array[int] = array("q")
        self._mark = bytearray()
        self._head_marks: dict[int, int] = {}
        self._pending: dict[int, int] = {}

    # -- filling --------------------------------------------------------------------------

    def extend(self, values: Sequence[float]) -> None:
        n = len(values)
        if not n:
            return
        room = self.head_size - len(self.head)
        if room > 0:
            self.head.extend(values[:room])
        self.lo = min(self.lo, min(values))
        self.hi = max(self.hi, max(values))
        pos = 0
        while pos < n:
            if self._n and self._n[-1] < self.span:
                take = min(self.span - self._n[-1], n - pos)
                chunk = values[pos : pos + take]
                self._lo[-1] = min(self._lo[-1], min(chunk))
                self._hi[-1] = max(self._hi[-1], max(chunk))
                self._sum[-1] += math.fsum(chunk)
                self._n[-1] += take
            else:
                if len(self._n) >= self.capacity:
                    self._halve()
                    continue
                take = min(self.span, n - pos)
                chunk = values[pos : pos + take]
                self._lo.append(min(chunk))
                self._hi.append(max(chunk))
                self._sum.append(math.fsum(chunk))
                self._n.append(take)
                self._mark.append(0)
            pos += take
        self.count += n
        if self._pending:
            ready = [i for i in self._pending if i < self.count]
            for i in ready:
                self.mark(i, self._pending.pop(i))

    def mark(self, iteration: int, priority: int) -> None:
        """Mark ``iteration`` (it may not have arrived yet) with an event of ``priority``."""
        if priority <= 0 or iteration < 0:
            return
        if iteration >= self.count:
            self._pending[iteration] = max(priority, self._pending.get(iteration, 0))
            return
        if iteration < self.head_size:
            self._head_marks[iteration] = max(priority, self._head_marks.get(iteration, 0))
        b = iteration // self.span
        self._mark[b] = max(self._mark[b], priority)

    def _halve(self) -> None:
        lo, hi, sm, n, mk = self._lo, self._hi, self._sum, self._n, self._mark
        self._lo = array("d", (min(lo[i], lo[i + 1]) for i in range(0, len(lo) - 1, 2)))
        self._hi = array("d", (max(hi[i], hi[i + 1]) for i in range(0, len(hi) - 1, 2)))
        self._sum = array("d", (sm[i] + sm[i + 1] for i in range(0, len(sm) - 1, 2)))
        self._n = array("q", (n[i] + n[i + 1] for i in range(0, len(n) - 1, 2)))
        self._mark = bytearray(max(mk[i], mk[i + 1]) for i in range(0, len(mk) - 1, 2))
        if len(lo) % 2:
            self._lo.append(lo[-1])
            self._hi.append(hi[-1])
            self._sum.append(sm[-1])
            self._n.append(n[-1])
            self._mark.append(mk[-1])
        self.span *= 2

    # -- reading --------------------------------------------------------------------------

    def columns(self, width: int, stop: int | None = None) -> list[Column]:
        """Iterations ``[0, stop)`` spread over ``width`` columns (repeated when fewer)."""
        stop = self.count if stop is None else min(stop, self.count)
        if width <= 0 or stop <= 0:
            return []
        out = []
        exact = stop <= len(self.head)
        for c in range(width):
            a = c * stop // width
            b = max(a + 1, (c + 1) * stop // width)
            if exact:
                chunk = self.head[a:b]
                mark = max((self._head_marks.get(i, 0) for i in range(a, b)), default=0)
                out.append(
                    Column(a, b - 1, min(chunk), max(chunk), math.fsum(chunk) / (b - a), mark)
                )
                continue
            ba, bb = a // self.span, (b - 1) // self.span + 1
            n = sum(self._n[ba:bb])
            out.append(
                Column(
                    a,
                    b - 1,
                    min(self._lo[ba:bb]),
                    max(self._hi[ba:bb]),
                    sum(self._sum[ba:bb]) / n,
                    max(self._mark[ba:bb]),
                )
            )
        return out

    def marks_seen(self) -> set[int]:
        """The mark priorities present anywhere in the run (for a legend)."""
        return set(self._mark) - {0}

    def memory_items(self) -> int:
        """How many numbers are held: bounded whatever the run's length."""
        return len(self.head) + 4 * len(self._n) + len(self._head_marks) + len(self._pending)
