"""Many processes, one answer: median intervals, "within noise", and each process's shape.

Pure functions, standard library only.

**Intervals are distribution-free order statistics, not a bootstrap.** For n values sorted
x(1) ≤ … ≤ x(n), the true median lies in [x(j), x(n+1−j)] with probability
1 − 2·P(B ≤ j−1), B ~ Binomial(n, ½), whatever the distribution of the values (continuous
ones). The interval is the narrowest such one that reaches 95%. Fewer than 6 values cannot
reach 95%: the interval is then [min, max] and ``coverage`` says what it does reach
(5 values: 93.8%, 4: 87.5%, 3: 75%). A bootstrap would give a narrower interval at these
sizes, and a falsely confident one: with 3 to 10 processes it resamples the same few values.

**Within noise.** Two cells differ only where their intervals do not overlap; otherwise the
difference is "within noise". The test is symmetric. A single value has no interval, so it
never differs from anything.

**A process's shape**, after Barrett et al., *Virtual Machine Warmup Blows Hot and Cold*
(OOPSLA 2017), built on ``stats.steady_from``: *flat* (steady from the first iteration),
*warm-up* (slow iterations, then steady), *slowdown* (fast iterations, then a slower steady
state), *no steady state* (never steady within the run).

**A noisy run** is flagged, as ``torch.utils.benchmark`` warns when IQR/median exceeds 10%:
a steady CV or IQR/median above 10%, or a noise band so wide that a warm-up smaller than it
could not be told from noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from warmscope.core.data import stats

CONFIDENCE = 0.95
METHOD = "order statistics (distribution-free)"
"""How every interval is computed, said in the output."""

FLAT = "flat"
WARMUP = "warm-up"
SLOWDOWN = "slowdown"
NO_STEADY = "no steady state"
SHAPES = (FLAT, WARMUP, SLOWDOWN, NO_STEADY)

NOISY_CV = 0.10
NOISY_IQR = 0.10
"""IQR/median above which a run is noisy (``torch.utils.benchmark``'s threshold)."""
MIN_STEADY_FOR_NOISE = 5
"""Fewer steady iterations say nothing about noise."""

LOWER = "lower"
HIGHER = "higher"
WITHIN_NOISE = "within noise"


@dataclass(frozen=True)
class Interval:
    """The median of some values with an interval around it and all the values."""

    median: float
    lo: float
    hi: float
    values: tuple[float, ...]
    coverage: float
    """The probability that [lo, hi] holds the true median (≥ 0.95 from 6 values on)."""

    def overlaps(self, other: Interval) -> bool:
        return self.lo <= other.hi and other.lo <= self.hi

    def to_json(self, digits: int = 6) -> dict[str, Any]:
        return {
            "median": round(self.median, digits),
            "lo": round(self.lo, digits),
            "hi": round(self.hi, digits),
            "values": [round(v, digits) for v in self.values],
            "coverage": round(self.coverage, 4),
        }


def binomial_cdf_half(n: int, k: int) -> float:
    """P(B ≤ k) for B ~ Binomial(n, ½), exactly (integers until the last division)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, float]:
    """The 1-based rank j of the interval [x(j), x(n+1−j)] and its coverage.

    The largest j whose coverage reaches ``confidence``; j = 1 ([min, max]) when even that
    falls short (fewer than 6 values at 95%). ``n`` must be at least 1.
    """
    if n < 1:
        raise ValueError("median_ranks needs at least one value")
    j = 1
    while j + 1 <= (n + 1) // 2 and 1 - 2 * binomial_cdf_half(n, j) >= confidence:
        j += 1
    return j, max(0.0, 1 - 2 * binomial_cdf_half(n, j - 1))


def median(values: Sequence[float]) -> float:
    s = values if isinstance(values, stats.Distribution) else sorted(values)
    half = len(s) // 2
    return float(s[half]) if len(s) % 2 else (s[half - 1] + s[half]) / 2


def upper_median(values: Sequence[float]) -> float:
    """The upper median: one of the values, so a count's median is a count (iteration #4 of
    ``2, 3, 4, 7``, never #3.5)."""
    s = sorted(values)
    return float(s[len(s) // 2])


def median_interval(
    values: Sequence[float | None], confidence: float = CONFIDENCE
) -> Interval | None:
    """The median of ``values`` (``None`` ones left out) with its order-statistic interval;
    ``None`` when no value is left."""
    kept = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not kept:
        return None
    s = sorted(kept)
    j, coverage = median_ranks(len(s), confidence)
    return Interval(median(s), s[j - 1], s[len(s) - j], tuple(kept), coverage)


def verdict(a: Interval, b: Interval) -> str:
    """``lower`` if a is below b beyond noise, ``higher`` if above, else ``within noise``.

    One value has no interval (coverage 0): nothing can be told from noise with it.
    """
    if a.overlaps(b) or a.coverage <= 0 or b.coverage <= 0:
        return WITHIN_NOISE
    return LOWER if a.hi < b.lo else HIGHER


def shape(latencies: Sequence[float], steady_from: int | None) -> str:
    """The shape of one process's latency series (module docstring), given its
    ``steady_from`` (the run summary's, which knows the run's events)."""
    n = len(latencies)
    if steady_from is None or n < 2 or steady_from >= n:
        return NO_STEADY
    if steady_from > 0:
        return WARMUP
    m, sigma = stats.reference(latencies)
    fast = m - stats.band(m, sigma)
    streak = 0
    for v in latencies[: n // 2]:
        streak = streak + 1 if v < fast else 0
        if streak == 3:
            return SLOWDOWN
    return FLAT


def shape_counts(shapes: Sequence[str]) -> str:
    """``warm-up ×5``, or ``inconsistent: warm-up ×3, flat ×2`` (Barrett's term)."""
    counts = {s: shapes.count(s) for s in SHAPES if s in shapes}
    text = ", ".join(f"{s} ×{n}" for s, n in counts.items())
    return text if len(counts) <= 1 else f"inconsistent: {text}"


@dataclass(frozen=True)
class RunWarning:
    """One reason to distrust a run's figures: ``code`` for programs, ``text`` for people."""

    code: str
    """``cv``, ``iqr``, ``band`` (noise hides warm-up), ``not_steady``; ``contention`` and
    ``threads`` (``contention.run_warnings``)."""
    text: str
    brief: str = ""
    """A few words for a narrow panel, where ``code`` alone does not say it."""

    @property
    def noisy(self) -> bool:
        return self.code in ("cv", "iqr", "band")


def run_warnings(
    latencies: Sequence[float],
    steady_from: int | None,
    exclude: Sequence[int] = (),
    state: stats.SteadyState | None = None,
) -> list[RunWarning]:
    """Why one run's figures may mislead: noise in its steady state, a noise band wide enough
    to hide a warm-up, or no steady state at all. ``exclude``: iterations left out of the
    statistics (profiled ones). ``state``: the run's ``stats.steady_state`` where it is known
    (its steady iterations are the ones from ``steady_from`` on), so a long run's latencies
    are not counted twice."""
    kept = stats.without(latencies, exclude)
    if len(kept) < 2:
        return []
    out: list[RunWarning] = []
    if steady_from is None:
        out.append(
            RunWarning(
                "not_steady", "not steady within the run: its statistics cover every iteration"
            )
        )
    if state is not None:
        steady, ref = state.steady, state.reference
    else:
        start = steady_from or 0
        left_out = set(exclude)
        steady = stats.Distribution.of(
            v for i, v in enumerate(latencies) if i >= start and i not in left_out
        )
        ref = None
    if len(steady) >= MIN_STEADY_FOR_NOISE:
        mid = median(steady)
        mean, sd = steady.mean_std()
        if mean > 0 and sd / mean > NOISY_CV:
            out.append(RunWarning("cv", f"noisy: steady CV {sd / mean:.0%} (above {NOISY_CV:.0%})"))
        iqr = stats.percentile_sorted(steady, 75) - stats.percentile_sorted(steady, 25)
        if mid > 0 and iqr / mid > NOISY_IQR:
            out.append(
                RunWarning(
                    "iqr",
                    f"noisy: steady IQR is {iqr / mid:.0%} of the median "
                    f"(torch.utils.benchmark warns above {NOISY_IQR:.0%})",
                )
            )
        m, sigma = ref or stats.reference(kept)
        if m > 0 and 5 * sigma > 0.25 * m:
            out.append(
                RunWarning(
                    "band",
                    f"noisy: the noise band (5σ) is {5 * sigma / m:.0%} of the median: a "
                    "warm-up iteration less slow than that cannot be told from noise",
                )
            )
    return out
