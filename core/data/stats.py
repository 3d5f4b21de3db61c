"""Latency statistics: percentiles, where warm-up ends, and an A/B comparison.

Latencies are in milliseconds, or integers of a finer unit (``per_ms``: nanoseconds as
recorded), which give the very figures of their milliseconds. Pure functions, standard
library only.

How warm-up is detected (``steady_from``): the last half of the run is taken as the
reference for "normal" speed, and from it we take the median and the spread (the median
absolute deviation, scaled by 1.4826 so that it matches a standard deviation for
normal-ish noise). An iteration counts as slow when it is above the median plus the larger
of five times that spread and a quarter of the median. The run is steady from the first
iteration where it and the two after it are all not slow (near the end of the run the
window is simply shorter). A run that is noisy but steady keeps its noise under that
threshold, because the threshold grows with the run's own spread, so it is not reported as
still warming up. A slow second iteration fails the three-in-a-row test, so it is never
called steady; single spikes after the run has settled (noise, a later recompile) are
outliers to report elsewhere, not warm-up. Where the run's events show warm-up work in an
iteration (a profiling run, an optimization, a compile), steady state never begins on it:
``summarize`` moves ``steady_from`` past such iterations, because a noisy run can hide a
slow second iteration inside its own noise band. A first call that ``first_call_slow`` calls
slow (five times the steady median, say) is warm-up too, even where a busy machine's noise
band is wider than its cost.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from itertools import accumulate, chain, compress, count, islice
from typing import overload

__all__ = [
    "Distribution",
    "SteadyState",
    "Summary",
    "band",
    "first_call_slow",
    "percentile",
    "percentile_sorted",
    "reference",
    "shape_states",
    "steady_from",
    "steady_state",
    "summarize",
    "summarize_shapes",
]

_MAD_TO_SIGMA = 1.4826
_SIGMA_MULT = 5.0
_REL_MARGIN = 0.25
_WINDOW = 3


def percentile(values: Sequence[float], q: float) -> float:
    """Return the q-th percentile, interpolating linearly between closest ranks.

    Same definition as numpy's default ``'linear'`` method.

    Args:
        values: The samples (any order).
        q: Percentile in [0, 100].

    Raises:
        ValueError: If ``values`` is empty or ``q`` is outside [0, 100] (or NaN).
    """
    if len(values) == 0:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q must be in [0, 100], got {q!r}")
    return percentile_sorted(sorted(values), q)


def percentile_sorted(s: Sequence[float], q: float) -> float:
    """``percentile`` over values already sorted (one sort serves several percentiles)."""
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    frac = pos - lo
    a, b = float(s[lo]), float(s[hi])
    if frac == 0.0 or a == b:
        return a
    # Clamp so that rounding can never step outside [a, b]; keeps the result monotone in q.
    return min(max(a + (b - a) * frac, a), b)


class Distribution(Sequence[float]):
    """Values held as their distinct values and how often each occurs, read as the sorted values.

    Order statistics, mean and spread come out exactly as over the sorted list, in memory that
    grows with the distinct values, not with their number: ten million latencies of a 25 µs
    model are a few thousand distinct nanosecond counts. Counting runs in C (``Counter``), with
    no Python object kept per value.
    """

    def __init__(self, counts: Counter[float]) -> None:
        self.keys = sorted(k for k, c in counts.items() if c > 0)
        self._counts = [counts[k] for k in self.keys]
        self._ends = list(accumulate(self._counts))

    @classmethod
    def of(cls, values: Iterable[float]) -> Distribution:
        counts: Counter[float] = Counter()
        counts.update(values)
        return cls(counts)

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[float]: ...

    def __getitem__(self, index: int | slice) -> float | Sequence[float]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = index + len(self) if index < 0 else index
        if not 0 <= i < len(self):
            raise IndexError("rank out of range")
        return self.keys[bisect_right(self._ends, i)]

    def __iter__(self) -> Iterator[float]:
        for k, c in zip(self.keys, self._counts, strict=True):
            for _ in range(c):
                yield k

    def items(self) -> Iterator[tuple[float, int]]:
        """Each distinct value, rising, with its count."""
        return zip(self.keys, self._counts, strict=True)

    def mean_std(self) -> tuple[float, float]:
        """The mean and population standard deviation, as ``_mean_std`` over the values."""
        lo, hi = self.keys[0], self.keys[-1]
        if lo == hi:
            return float(lo), 0.0
        n = len(self)
        mean = min(max(_exact_sum(self.items()) / n, lo), hi)
        squares = (((k - mean) * (k - mean), c) for k, c in self.items())
        return mean, math.sqrt(_exact_sum(squares) / n)


_HALF = 26  # bits: a float split in two halves of this many, times a count below 2**26, is exact


def _exact_sum(weighted: Iterable[tuple[float, int]]) -> float:
    """``math.fsum`` of each value repeated its count of times (correctly rounded, as fsum of
    the repeated values), from one product per half of each value."""
    terms: list[float] = []
    for x, c in weighted:
        if not math.isfinite(x):  # an infinite square, or an input no clock gives
            return math.fsum([x])
        m, e = math.frexp(x)
        hi = math.ldexp(math.trunc(math.ldexp(m, _HALF)), e - _HALF)
        lo = x - hi  # exact: hi is x with its low bits cut
        while c:
            take = min(c, (1 << _HALF) - 1)
            terms += (hi * take, lo * take)
            c -= take
    try:
        return math.fsum(terms)
    except OverflowError:  # a sum beyond the largest float
        return sum(terms)


class _Without(Sequence[float]):
    """The latencies less a few left-out iterations (profiled ones), read in place: position
    ``p`` here is iteration ``index(p)`` of the run."""

    def __init__(self, values: Sequence[float], left_out: list[int]) -> None:
        self.values, self.left_out = values, left_out  # sorted, each within the run

    def __len__(self) -> int:
        return len(self.values) - len(self.left_out)

    def index(self, pos: int) -> int:  # type: ignore[override]
        """The run's iteration at position ``pos`` here."""
        i = pos
        while True:  # few left out: each pass moves past those before i
            j = pos + bisect_right(self.left_out, i)
            if j == i:
                return i
            i = j

    @overload
    def __getitem__(self, pos: int) -> float: ...

    @overload
    def __getitem__(self, pos: slice) -> Sequence[float]: ...

    def __getitem__(self, pos: int | slice) -> float | Sequence[float]:
        if isinstance(pos, slice):
            return [self[p] for p in range(*pos.indices(len(self)))]
        p = pos + len(self) if pos < 0 else pos
        if not 0 <= p < len(self):
            raise IndexError("position out of range")
        return self.values[self.index(p)]

    def __iter__(self) -> Iterator[float]:
        return self.islice(0)

    def islice(self, start: int, stop: int | None = None) -> Iterator[float]:
        """Positions ``[start, stop)``, as an iterator over the run's own storage."""
        first = self.index(start) if start < len(self) else len(self.values)
        last = len(self.values) if stop is None or stop >= len(self) else self.index(stop)
        cuts = [i for i in self.left_out if first <= i < last]
        bounds = [first, *chain.from_iterable((i, i + 1) for i in cuts), last]
        return chain.from_iterable(
            islice(self.values, a, b) for a, b in zip(bounds[::2], bounds[1::2], strict=True)
        )


def without(values: Sequence[float], left_out: Collection[int]) -> Sequence[float]:
    """``values`` less the positions ``left_out``, read in place (a view, not a copy)."""
    cut = sorted({i for i in left_out if 0 <= i < len(values)})
    return _Without(values, cut) if cut else values


def _islice(x: Sequence[float], start: int, stop: int | None = None) -> Iterator[float]:
    return x.islice(start, stop) if isinstance(x, _Without) else islice(x, start, stop)


def reference(x: Sequence[float]) -> tuple[float, float]:
    """Return the median and spread (1.4826 × MAD) of the run's last half: its normal speed.

    The threshold of a slow iteration is the median plus ``band(median, spread)``.
    Needs ``len(x) >= 1``.
    """
    return _reference(Distribution.of(_islice(x, len(x) // 2)))


def _reference(tail: Distribution) -> tuple[float, float]:
    m = _median_sorted(tail)
    # |t - m| is what the sorted tail's lower half gives as m - t and its upper half as t - m.
    deviations: Counter[float] = Counter()
    for k, c in tail.items():
        deviations[abs(k - m)] += c
    sigma = _MAD_TO_SIGMA * _median_sorted(Distribution(deviations))
    return m, sigma


def band(median: float, sigma: float) -> float:
    """How far above the median an iteration must be to count as slow: max(5σ, 0.25·median)."""
    return max(_SIGMA_MULT * sigma, _REL_MARGIN * median)


FIRST_CALL_SLOW = 2.0
"""A first call is slow at this many times its steady p50 where that is beyond the noise band,"""
FIRST_CALL_SLOW_ANYWAY = 5.0
"""and at this many times whatever the noise band: a busy machine's band can be wider than a
first call's whole cost, and then the band alone would call nothing slow."""


def first_call_slow(first_ms: float | None, p50_ms: float | None, sigma: float = 0.0) -> bool:
    """Whether a first call cost more than steady state can explain: ``FIRST_CALL_SLOW`` ×
    the steady p50 and above it by more than the noise band (``band``: a call within it
    could be noise), or ``FIRST_CALL_SLOW_ANYWAY`` × the p50. ``sigma``: the spread of the
    reference it is judged against (its shape's, where shapes vary)."""
    if first_ms is None or not p50_ms or p50_ms <= 0:
        return False
    if first_ms >= FIRST_CALL_SLOW_ANYWAY * p50_ms:
        return True
    return first_ms >= FIRST_CALL_SLOW * p50_ms and first_ms > p50_ms + band(p50_ms, sigma)


def _median_sorted(s: Sequence[float]) -> float:
    half = len(s) // 2
    return float(s[half]) if len(s) % 2 else (s[half - 1] + s[half]) / 2


def steady_from(latencies: Sequence[float]) -> int | None:
    """Return the index of the first steady iteration (rule in the module docstring).

    Args:
        latencies: Per-iteration latencies in run order.

    Returns:
        The index, or None for fewer than 2 iterations or when no iteration qualifies.
    """
    return _steady(latencies)[0]


def _in_ms(counts: Counter[float], per_ms: float | None) -> Distribution:
    """The counted values as a ``Distribution`` in milliseconds: each distinct count of
    ``1/per_ms`` ms divided once (``v / per_ms``, as a reader converts each value)."""
    if per_ms is None:
        return Distribution(counts)
    ms: Counter[float] = Counter()
    for k, c in counts.items():
        ms[k / per_ms] += c
    return Distribution(ms)


def _to_ms(value: float, per_ms: float | None) -> float:
    return float(value if per_ms is None else value / per_ms)


def _at_most(thr: float, per_ms: float | None) -> float:
    """The largest value ``v`` in the latencies' own unit with ``v / per_ms <= thr``:
    ``v <= that`` says exactly what ``v / per_ms <= thr`` says, with no division per value."""
    if per_ms is None:
        return thr
    v = math.floor(thr * per_ms)
    while (v + 1) / per_ms <= thr:  # rounding of the product: a step or two at most
        v += 1
    while v / per_ms > thr:
        v -= 1
    return v


def _steady(
    x: Sequence[float], per_ms: float | None = None
) -> tuple[int | None, Counter[float], tuple[float, float] | None]:
    """``steady_from``, the counts of the last half it judged by (``len(x) // 2`` on, in the
    values' own unit) and that half's ``reference``. ``per_ms``: see ``steady_state``."""
    n = len(x)
    tail: Counter[float] = Counter()
    tail.update(_islice(x, n // 2))
    if n < 2:
        return None, tail, _reference(_in_ms(tail, per_ms)) if n else None
    ref = m, sigma = _reference(_in_ms(tail, per_ms))
    thr = _at_most(float(m + band(m, sigma)), per_ms)
    run = 0  # consecutive not-slow iterations so far; the scan stops at the answer
    # A long run stuck slow (never steady) is skipped in C to its next fast iteration.
    fast = compress(count(), map(thr.__ge__, _islice(x, 0)))
    last = -2
    for i in fast:
        run = run + 1 if i == last + 1 else 1
        last = i
        if run == _WINDOW:
            return i - _WINDOW + 1, tail, ref
    # Near the end the window is cut short: a trailing run of not-slow iterations counts.
    return (n - run if run and last == n - 1 else None), tail, ref


@dataclass(frozen=True)
class Summary:
    """Summary of one run; the ``*_ms`` statistics, cv and throughput cover steady iterations."""

    count: int
    first_ms: float | None
    steady_from: int | None
    warmup_excess_ms: float
    min_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    mean_ms: float | None
    std_ms: float | None
    max_ms: float | None
    cv: float | None
    throughput_per_s: float | None
    steady_count: int

    def to_dict(self) -> dict[str, float | int | None]:
        """Return the fields as a flat dict keyed by field name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _mean_std(v: Sequence[float]) -> tuple[float, float]:
    """Return the mean and population standard deviation of a non-empty sequence."""
    return Distribution.of(v).mean_std()


def summarize(
    latencies: Sequence[float], exclude: Collection[int] = (), known_warmup: Collection[int] = ()
) -> Summary:
    """Summarize a run: warm-up length and excess, then steady-state statistics.

    Args:
        latencies: Per-iteration latencies in run order.
        exclude: Indices (original numbering) to leave out, e.g. profiled iterations. They
            are skipped for ``steady_from`` detection, the warm-up excess and all steady
            statistics; indices outside the run are ignored.
        known_warmup: Iterations whose events show warm-up work (a profiling run, an
            optimization, a compile). Steady state never begins on one: a ``steady_from``
            that lands on it moves past it. One later on (a recompile at iteration 50)
            changes nothing.

    Returns:
        A Summary. ``steady_from`` is an index into ``latencies``. When it is None, the
        statistics cover all kept iterations; ``steady_count`` is how many they cover.
    """
    return steady_state(latencies, exclude, known_warmup).summary


@dataclass(frozen=True)
class SteadyState:
    """``summarize``'s Summary with what it was computed from, for more figures without
    counting ten million latencies again (``intervals.run_warnings``)."""

    summary: Summary
    steady: Distribution
    """The iterations the statistics cover."""
    reference: tuple[float, float] | None
    """``reference`` of the kept iterations (``None`` for none)."""


def steady_state(
    latencies: Sequence[float],
    exclude: Collection[int] = (),
    known_warmup: Collection[int] = (),
    per_ms: float | None = None,
) -> SteadyState:
    """``summarize`` (same arguments), with the steady distribution and reference.

    ``per_ms``: the latencies are integers of ``1/per_ms`` ms (nanoseconds: ``1e6``). Every
    figure is then what the same call gives over ``[v / per_ms for v in latencies]``, to the
    bit, while only distinct values are ever divided: integers count faster than floats, and
    ten million latencies need not be converted first.
    """
    n = len(latencies)
    first = _to_ms(latencies[0], per_ms) if n else None
    left_out = sorted({i for i in exclude if 0 <= i < n})
    # The usual case, and a long run's, reads the latencies in place, with no index bookkeeping.
    kept = _Without(latencies, left_out) if left_out else latencies
    index = kept.index if isinstance(kept, _Without) else int

    pos, tail, ref = _steady(kept, per_ms)
    if pos == 0 and ref is not None and first_call_slow(_to_ms(kept[0], per_ms), *ref):
        # A first call many times the steady speed is warm-up, however wide the noise band.
        pos = 1 if len(kept) > 1 else None
    if pos is not None and known_warmup:
        # The events say these iterations did warm-up work: steady state begins after them.
        busy = set(known_warmup)
        while pos < len(kept) and index(pos) in busy:
            pos += 1
        if pos == len(kept):
            pos = None
    sf = index(pos) if pos is not None else None
    start = pos or 0
    half = len(kept) // 2
    if start <= half:  # the last half is counted already: count only what comes before it
        tail.update(_islice(kept, start, half))
    else:
        tail = Counter()
        tail.update(_islice(kept, start))
    steady = _in_ms(tail, per_ms)
    warmup = (_to_ms(v, per_ms) for v in _islice(kept, 0, pos)) if pos else ()
    summary = _summary(n, first, sf, steady, warmup)
    return SteadyState(summary, steady, ref)


def _summary(
    n: int,
    first: float | None,
    sf: int | None,
    steady: Distribution,
    warmup: Iterable[float] = (),
) -> Summary:
    """A ``Summary`` of ``n`` iterations whose steady ones are ``steady``; the warm-up excess
    is the time ``warmup`` spends above the steady p50."""
    if not len(steady):
        return Summary(
            count=n,
            first_ms=first,
            steady_from=sf,
            warmup_excess_ms=0.0,
            min_ms=None,
            p50_ms=None,
            p90_ms=None,
            p99_ms=None,
            mean_ms=None,
            std_ms=None,
            max_ms=None,
            cv=None,
            throughput_per_s=None,
            steady_count=0,
        )

    p50 = percentile_sorted(steady, 50)
    mean, std = steady.mean_std()
    excess = math.fsum(max(0.0, v - p50) for v in warmup)
    return Summary(
        count=n,
        first_ms=first,
        steady_from=sf,
        warmup_excess_ms=excess,
        min_ms=steady.keys[0],
        p50_ms=p50,
        p90_ms=percentile_sorted(steady, 90),
        p99_ms=percentile_sorted(steady, 99),
        mean_ms=mean,
        std_ms=std,
        max_ms=steady.keys[-1],
        cv=std / mean if len(steady) >= 2 and mean != 0 else None,
        throughput_per_s=1000.0 / mean if mean > 0 else None,
        steady_count=len(steady),
    )


def summarize_shapes(
    latencies: Sequence[float],
    shape_of: Sequence[int],
    shapes: int,
    exclude: Collection[int] = (),
    known_warmup: Collection[int] = (),
    per_ms: float | None = None,
) -> tuple[Summary, list[tuple[Sequence[int], Summary]]]:
    """``shape_states``' Summaries: the run's, and each shape's iterations with its own."""
    overall, states = shape_states(latencies, shape_of, shapes, exclude, known_warmup, per_ms)
    return overall, [(idx, state.summary) for idx, state in states]


def shape_states(
    latencies: Sequence[float],
    shape_of: Sequence[int],
    shapes: int,
    exclude: Collection[int] = (),
    known_warmup: Collection[int] = (),
    per_ms: float | None = None,
) -> tuple[Summary, list[tuple[Sequence[int], SteadyState]]]:
    """A run whose input shapes vary: each shape judged against its own speed, then the run.

    ``shape_of[i]`` is iteration ``i``'s shape, an index below ``shapes`` (-1: not known).
    Each iteration is slow or not against its own shape's reference (the last half of that
    shape's iterations, as ``reference``). The run is steady from the first three iterations
    in a row, in run order, that are not slow and did no known warm-up work: where shapes
    take turns that window holds calls of several shapes, so one noisy call of one shape
    does not push the start a whole turn of every shape later. A shape whose first call
    comes after that point (a later block of a ramp) is then judged on its own calls
    (``steady_state``), and the run is steady only past its warm-up too: warm-up is the
    calls before every shape is steady. A shape seen before that point is steady from just
    past its last slow call before it. ``None`` while any shape is not steady.

    The run's warm-up excess is the sum of each shape's excess over that shape's own p50;
    its steady statistics pool each shape's steady iterations (pooled: a mix of shapes).
    ``per_ms``: as for ``steady_state``.

    Returns:
        The run's Summary, and for each shape its iteration indices and its ``SteadyState``
        (``steady_from`` an index into ``latencies``).
    """
    n = len(latencies)
    members, values = _by_shape(latencies, shape_of, n, shapes, per_ms)
    excluded = {i for i in exclude if 0 <= i < n}
    busy = set(known_warmup)
    kept = [_without(idx, vals, excluded) for idx, vals in zip(members, values, strict=True)]
    refs = [_reference(_in_ms(_tail_counts(v), per_ms)) if len(v) else None for _, v in kept]
    thresholds = [
        _at_most(float(r[0] + band(*r)), per_ms) if r is not None else math.inf for r in refs
    ]
    # A shape's first call many times its speed is warm-up, however wide its noise band.
    slow_first = {
        int(km[0])
        for (km, kv), r in zip(kept, refs, strict=True)
        if r is not None and len(km) and first_call_slow(_to_ms(kv[0], per_ms), *r)
    }
    start = _run_steady_from(latencies, shape_of, n, thresholds, excluded, busy | slow_first)

    states: list[tuple[Sequence[int], SteadyState]] = []
    pooled: Counter[float] = Counter()
    excess = 0.0
    run_from = start
    for k, (idx, (km, kv)) in enumerate(zip(members, kept, strict=True)):
        if start is not None and len(km) and km[0] < start:
            pos = _steady_before(km, kv, start, thresholds[k], busy | slow_first)
        else:
            local_busy = [p for p, i in enumerate(km) if i in busy] if busy else []
            pos = steady_state(kv, (), local_busy, per_ms).summary.steady_from
            if run_from is not None and pos:
                # Just past this shape's last warm-up call: one that starts steady adds none.
                run_from = max(run_from, km[pos - 1] + 1)
        if pos is None:
            run_from = None
        tail: Counter[float] = Counter()
        tail.update(islice(kv, pos or 0, None))
        steady = _in_ms(tail, per_ms) if pos is not None else _in_ms(_all(kv), per_ms)
        warmup = (_to_ms(v, per_ms) for v in islice(kv, 0, pos)) if pos else ()
        first = _to_ms(values[k][0], per_ms) if len(values[k]) else None
        sf = km[pos] if pos is not None else None
        summary = _summary(len(idx), first, sf, steady, warmup)
        states.append((idx, SteadyState(summary, steady, refs[k])))
        if pos is not None:
            pooled.update(dict(steady.items()))
        excess += summary.warmup_excess_ms
    first_all = _to_ms(latencies[0], per_ms) if n else None
    steady_from_run = run_from if members and n else None
    overall = _summary(n, first_all, steady_from_run, Distribution(pooled))
    return _remap(overall, overall.steady_from, excess), states


def _by_shape(
    latencies: Sequence[float], shape_of: Sequence[int], n: int, shapes: int, per_ms: float | None
) -> tuple[list[array], list[array]]:
    """Each shape's iteration indices and latencies, in run order: one pass in C per shape,
    no Python object kept per iteration."""
    typecode = "d" if per_ms is None else "q"
    members = [
        array("q", compress(count(), map(k.__eq__, islice(shape_of, n)))) for k in range(shapes)
    ]
    values = [
        array(typecode, compress(latencies, map(k.__eq__, islice(shape_of, n))))
        for k in range(shapes)
    ]
    return members, values


def _without(idx: array, vals: array, excluded: set[int]) -> tuple[array, array]:
    """A shape's iterations and latencies less the excluded ones (profiled): the few left out
    found by bisection, the rest copied in slices (in C)."""
    cut = sorted(bisect_left(idx, i) for i in excluded if _member(idx, i))
    if not cut:
        return idx, vals
    bounds = [0, *chain.from_iterable((p, p + 1) for p in cut), len(idx)]
    spans = list(zip(bounds[::2], bounds[1::2], strict=True))
    return (
        array("q", chain.from_iterable(idx[a:b] for a, b in spans)),
        array(vals.typecode, chain.from_iterable(vals[a:b] for a, b in spans)),
    )


def _steady_before(
    km: Sequence[int], kv: Sequence[float], start: int, threshold: float, warm: set[int]
) -> int | None:
    """A shape seen before the run settled (at ``start``): steady from just past its last slow
    call before then (``None`` where that was its last call: it ended slow)."""
    before = bisect_left(km, start)
    slow = [p for p in range(before) if km[p] in warm or kv[p] > threshold]
    pos = slow[-1] + 1 if slow else 0
    return pos if pos < len(km) else None


def _tail_counts(v: Sequence[float]) -> Counter[float]:
    tail: Counter[float] = Counter()
    tail.update(islice(v, len(v) // 2, None))
    return tail


def _all(v: Sequence[float]) -> Counter[float]:
    counts: Counter[float] = Counter()
    counts.update(v)
    return counts


def _run_steady_from(
    latencies: Sequence[float],
    shape_of: Sequence[int],
    n: int,
    thresholds: list[float],
    excluded: set[int],
    busy: set[int],
) -> int | None:
    """The first of ``_WINDOW`` kept iterations in a row, in run order, none slow against its
    own shape's threshold and none busy; near the end a trailing run of them counts. The scan
    stops at the answer: a settled run reads only its first few iterations."""
    run = 0
    last = -1
    begin = 0
    for i in range(n):
        if i in excluded:
            continue
        k = shape_of[i]
        if k < 0 or k >= len(thresholds):
            continue  # a shape not known (recovered after a crash): neither slow nor fast
        if i in busy or latencies[i] > thresholds[k]:
            run = 0
        else:
            if run == 0:
                begin = i
            run += 1
            if run == _WINDOW:
                return begin
        last = i
    return begin if run and last >= 0 else None


def _member(idx: Sequence[int], i: int) -> bool:
    at = bisect_left(idx, i)
    return at < len(idx) and idx[at] == i


def _remap(s: Summary, steady_from: int | None, excess: float | None = None) -> Summary:
    values = s.to_dict()
    values["steady_from"] = steady_from
    if excess is not None:
        values["warmup_excess_ms"] = excess
    return Summary(**values)  # type: ignore[arg-type]
