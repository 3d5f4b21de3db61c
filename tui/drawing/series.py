"""``LatencySeries``: every iteration of a run, for drawing, in bounded memory.

The first ``head`` iterations are kept exactly (that is where warm-up happens). All
iterations are also folded into at most ``capacity`` buckets of equal span (min, max, sum,
count, the set of event marks); when the buckets fill up, neighbours merge pairwise and the
span doubles: a mark is never lost in a merge. A chart of any width can then be drawn from a
run of any length, and the run's full history stays in its record.
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


def mark_bits(marks: int) -> list[int]:
    """The mark priorities in a set of marks (bit ``p - 1`` for priority ``p``), strongest first."""
    return [p for p in range(len(MARKS), 0, -1) if marks >> (p - 1) & 1]


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
    marks: int
    """The set of marks of its iterations (bit ``p - 1`` for priority ``p``)."""

    @property
    def mark(self) -> int:
        """The strongest mark (0: none)."""
        return self.marks.bit_length()


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
        self._pending: dict[int, set[int]] = {}

    # -- filling --------------------------------------------------------------------------

    def extend(self, values: Sequence[float], per_ms: float = 1.0) -> None:
        """Append latencies; ``per_ms``: how many of the values' unit make a millisecond (a
        record's integer nanoseconds are bucketed as they are, only the buckets converted)."""
        n = len(values)
        if not n:
            return
        room = self.head_size - len(self.head)
        if room > 0:
            self.head.extend([v / per_ms for v in values[:room]])
        if not self._n:
            # A whole run at once (a record): its final span straight away, no merges. The
            # buckets are the ones growing by halves would have made.
            while n > self.capacity * self.span:
                self.span *= 2
        lo, hi = self.lo, self.hi  # from each chunk's: one pass over the values, not three
        pos = 0
        while pos < n:
            if self._n and self._n[-1] < self.span:
                take = min(self.span - self._n[-1], n - pos)
                chunk = values[pos : pos + take]
                c_lo, c_hi = min(chunk) / per_ms, max(chunk) / per_ms
                self._lo[-1] = min(self._lo[-1], c_lo)
                self._hi[-1] = max(self._hi[-1], c_hi)
                self._sum[-1] += sum(chunk) / per_ms
                self._n[-1] += take
            else:
                if len(self._n) >= self.capacity:
                    self._halve()
                    continue
                take = min(self.span, n - pos)
                chunk = values[pos : pos + take]
                c_lo, c_hi = min(chunk) / per_ms, max(chunk) / per_ms
                self._lo.append(c_lo)
                self._hi.append(c_hi)
                self._sum.append(sum(chunk) / per_ms)
                self._n.append(take)
                self._mark.append(0)
            lo, hi = min(lo, c_lo), max(hi, c_hi)
            pos += take
        self.lo, self.hi = lo, hi
        self.count += n
        if self._pending:
            ready = [i for i in self._pending if i < self.count]
            for i in ready:
                for priority in self._pending.pop(i):
                    self.mark(i, priority)

    def mark(self, iteration: int, priority: int) -> None:
        """Mark ``iteration`` (it may not have arrived yet) with an event of ``priority``."""
        if priority <= 0 or iteration < 0:
            return
        if iteration >= self.count:
            self._pending.setdefault(iteration, set()).add(priority)
            return
        bit = 1 << (priority - 1)
        if iteration < self.head_size:
            self._head_marks[iteration] = self._head_marks.get(iteration, 0) | bit
        b = iteration // self.span
        self._mark[b] |= bit

    def _halve(self) -> None:
        lo, hi, sm, n, mk = self._lo, self._hi, self._sum, self._n, self._mark
        self._lo = array("d", (min(lo[i], lo[i + 1]) for i in range(0, len(lo) - 1, 2)))
        self._hi = array("d", (max(hi[i], hi[i + 1]) for i in range(0, len(hi) - 1, 2)))
        self._sum = array("d", (sm[i] + sm[i + 1] for i in range(0, len(sm) - 1, 2)))
        self._n = array("q", (n[i] + n[i + 1] for i in range(0, len(n) - 1, 2)))
        self._mark = bytearray(mk[i] | mk[i + 1] for i in range(0, len(mk) - 1, 2))
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
        exact = stop <= len(self.head)
        out = []
        for c in range(width):
            a = c * stop // width
            out.append(self._column(a, max(a + 1, (c + 1) * stop // width), exact))
        return out

    def bucket_size(self, width: int, stop: int | None = None) -> int:
        """Iterations a column holds so that ``[0, stop)`` fits in ``width`` columns: a power
        of two, so that it only ever doubles as the run grows."""
        stop = self.count if stop is None else min(stop, self.count)
        size = 1
        while size * max(width, 1) < stop:
            size *= 2
        return size

    def buckets(self, width: int, stop: int | None = None) -> tuple[int, list[Column]]:
        """(iterations a column, the columns): column ``c`` holds iterations ``[c*k, (c+1)*k)``
        whatever the run's length, so that a completed column never changes; only the newest,
        partly filled one does, until the run outgrows ``width`` and ``k`` doubles."""
        stop = self.count if stop is None else min(stop, self.count)
        size = self.bucket_size(width, stop)
        if width <= 0 or stop <= 0:
            return size, []
        exact = stop <= len(self.head)
        return size, [self._column(a, min(a + size, stop), exact) for a in range(0, stop, size)]

    def _column(self, a: int, b: int, exact: bool) -> Column:
        """Iterations ``[a, b)``: exact from the head, or from the whole buckets around them."""
        if exact:
            chunk = self.head[a:b]
            marks = 0
            for i in range(a, b) if self._head_marks else ():
                marks |= self._head_marks.get(i, 0)
            return Column(a, b - 1, min(chunk), max(chunk), math.fsum(chunk) / (b - a), marks)
        ba, bb = a // self.span, (b - 1) // self.span + 1
        marks = 0
        for m in self._mark[ba:bb]:
            marks |= m
        n = sum(self._n[ba:bb])
        return Column(
            a,
            b - 1,
            min(self._lo[ba:bb]),
            max(self._hi[ba:bb]),
            sum(self._sum[ba:bb]) / n,
            marks,
        )

    def marks_seen(self) -> set[int]:
        """The mark priorities present anywhere in the run (for a legend)."""
        seen = 0
        for m in self._mark:
            seen |= m
        return set(mark_bits(seen))
