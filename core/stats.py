"""Latency statistics: percentiles, where warm-up ends, and an A/B comparison.

All latencies are in milliseconds. Pure functions, standard library only.

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
slow second iteration inside its own noise band.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Collection, Sequence
from dataclasses import dataclass, fields

__all__ = [
    "Comparison",
    "Summary",
    "band",
    "compare",
    "percentile",
    "reference",
    "steady_from",
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
    return _percentile_sorted(sorted(values), q)


def _percentile_sorted(s: Sequence[float], q: float) -> float:
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


def _slow_threshold(x: Sequence[float]) -> float:
    """Return the latency above which an iteration counts as slow (needs len(x) >= 1)."""
    m, sigma = reference(x)
    return float(m + band(m, sigma))


def reference(x: Sequence[float]) -> tuple[float, float]:
    """Return the median and spread (1.4826 × MAD) of the run's last half: its normal speed.

    The threshold of a slow iteration is the median plus ``band(median, spread)``.
    Needs ``len(x) >= 1``.
    """
    tail = sorted(x[len(x) // 2 :])
    m = _median_sorted(tail)
    # Deviations from the median of a sorted list are two sorted runs (falling, then rising):
    # sorting them is a linear merge for timsort, not a full sort.
    below = [m - t for t in tail[: len(tail) // 2]]
    above = [t - m for t in tail[len(tail) // 2 :]]
    below.reverse()  # now rising too: two rising runs, merged by timsort in linear time
    sigma = _MAD_TO_SIGMA * _median_sorted(sorted(below + above))
    return m, sigma


def band(median: float, sigma: float) -> float:
    """How far above the median an iteration must be to count as slow: max(5σ, 0.25·median)."""
    return max(_SIGMA_MULT * sigma, _REL_MARGIN * median)


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
    n = len(latencies)
    if n < 2:
        return None
    thr = _slow_threshold(latencies)
    run = 0  # consecutive not-slow iterations so far; the scan stops at the answer
    for i, v in enumerate(latencies):
        run = run + 1 if v <= thr else 0
        if run == _WINDOW:
            return i - _WINDOW + 1
    # Near the end the window is cut short: a trailing run of not-slow iterations counts.
    return n - run if run else None


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
    lo, hi = min(v), max(v)
    if lo == hi:
        return float(lo), 0.0
    mean = min(max(math.fsum(v) / len(v), lo), hi)
    deviations = [x - mean for x in v]
    var = math.fsum(map(operator.mul, deviations, deviations)) / len(v)
    return mean, math.sqrt(var)


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
    n = len(latencies)
    first = float(latencies[0]) if n else None
    excluded = {i for i in exclude if 0 <= i < n}
    if excluded:
        kept_idx: Sequence[int] = [i for i in range(n) if i not in excluded]
        kept = [float(latencies[i]) for i in kept_idx]
    else:  # the usual case, and a long run's: no index bookkeeping
        kept_idx = range(n)
        kept = list(map(float, latencies))

    pos = steady_from(kept)
    if pos is not None and known_warmup:
        # The events say these iterations did warm-up work: steady state begins after them.
        busy = set(known_warmup)
        while pos < len(kept) and kept_idx[pos] in busy:
            pos += 1
        if pos == len(kept):
            pos = None
    sf = kept_idx[pos] if pos is not None else None
    steady = kept[pos:] if pos is not None else kept

    return _summary(n, first, sf, steady, kept[:pos] if pos else ())


def _summary(
    n: int,
    first: float | None,
    sf: int | None,
    steady: Sequence[float],
    warmup: Sequence[float] = (),
) -> Summary:
    """A ``Summary`` of ``n`` iterations whose steady ones are ``steady``; the warm-up excess
    is the time ``warmup`` spends above the steady p50."""
    if not steady:
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

    ordered = sorted(steady)
    p50 = _percentile_sorted(ordered, 50)
    mean, std = _mean_std(steady)
    excess = math.fsum(max(0.0, v - p50) for v in warmup)
    return Summary(
        count=n,
        first_ms=first,
        steady_from=sf,
        warmup_excess_ms=excess,
        min_ms=ordered[0],
        p50_ms=p50,
        p90_ms=_percentile_sorted(ordered, 90),
        p99_ms=_percentile_sorted(ordered, 99),
        mean_ms=mean,
        std_ms=std,
        max_ms=ordered[-1],
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
) -> tuple[Summary, list[tuple[list[int], Summary]]]:
    """A run whose input shapes vary: each shape judged on its own, then the run as a whole.

    Each shape's iterations (``shape_of[i]``, an index below ``shapes``; -1 unknown) get their
    own ``summarize``, its ``steady_from`` an index into ``latencies``. The run is steady from
    just past the last iteration any shape spent warming up (``None`` while a shape is not
    steady); its warm-up excess is the sum of
    each shape's excess over that shape's own p50; its steady statistics pool each shape's
    steady iterations.

    Returns:
        The run's Summary, and for each shape its iteration indices and its Summary.
    """
    n = len(latencies)
    members: list[list[int]] = [[] for _ in range(shapes)]
    for i, k in enumerate(shape_of[:n]):
        if 0 <= k < shapes:
            members[k].append(i)
    excluded = set(exclude)
    busy = set(known_warmup)
    per_shape: list[tuple[list[int], Summary]] = []
    steady: list[float] = []
    excess = 0.0
    run_from: int | None = 0
    for idx in members:
        local = {orig: j for j, orig in enumerate(idx)}
        sub = summarize(
            [latencies[i] for i in idx],
            exclude=[local[i] for i in excluded if i in local],
            known_warmup=[local[i] for i in busy if i in local],
        )
        sf = idx[sub.steady_from] if sub.steady_from is not None else None
        per_shape.append((idx, _remap(sub, sf)))
        if sub.steady_from is None:
            run_from = None
        elif run_from is not None and sub.steady_from > 0:
            # Just past this shape's last warm-up iteration: a shape that starts steady (a
            # later block of a ramp) adds no warm-up to the run.
            run_from = max(run_from, idx[sub.steady_from - 1] + 1)
        excess += sub.warmup_excess_ms
        start = sub.steady_from if sub.steady_from is not None else len(idx)
        steady += [latencies[i] for i in idx[start:] if i not in excluded]
    first = float(latencies[0]) if n else None
    overall = _summary(n, first, run_from if members and n else None, steady)
    return _remap(overall, overall.steady_from, excess), per_shape


def _remap(s: Summary, steady_from: int | None, excess: float | None = None) -> Summary:
    values = s.to_dict()
    values["steady_from"] = steady_from
    if excess is not None:
        values["warmup_excess_ms"] = excess
    return Summary(**values)  # type: ignore[arg-type]


COMPARED_METRICS = (
    "first_ms",
    "steady_from",
    "warmup_excess_ms",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "mean_ms",
    "cv",
    "throughput_per_s",
)


@dataclass(frozen=True)
class Comparison:
    """Run A vs run B: one ``(metric, a, b, b/a)`` row per metric; ratio None if undefined."""

    rows: list[tuple[str, float | None, float | None, float | None]]


def compare(a: Summary, b: Summary) -> Comparison:
    """Compare two summaries metric by metric (order: ``COMPARED_METRICS``).

    Args:
        a: The baseline run.
        b: The other run.

    Returns:
        A Comparison; a row's ratio is None when either value is None or ``a`` is 0.
    """
    rows: list[tuple[str, float | None, float | None, float | None]] = []
    for name in COMPARED_METRICS:
        va, vb = getattr(a, name), getattr(b, name)
        ratio = vb / va if va is not None and vb is not None and va != 0 else None
        rows.append((name, va, vb, ratio))
    return Comparison(rows)
