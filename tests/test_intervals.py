"""Tests for warmscope.core.data.intervals: order-statistic intervals, within noise, shapes, noise."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warmscope.core.data import intervals
from warmscope.core.data.intervals import Interval, median_interval, verdict

deterministic = settings(derandomize=True, deadline=None, database=None)
value = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
samples = st.lists(value, min_size=1, max_size=40)


@deterministic
@given(samples)
def test_interval_holds_the_median_and_is_made_of_values(values: list[float]) -> None:
    iv = median_interval(values)
    assert iv is not None
    assert iv.lo <= iv.median <= iv.hi
    assert iv.median == pytest.approx(statistics.median(values))
    assert iv.lo in values and iv.hi in values
    assert list(iv.values) == values
    # Symmetric ranks: as many values at or below lo as at or above hi.
    s = sorted(values)
    j = s.index(iv.lo) + 1 if s.count(iv.lo) == 1 else None
    if j is not None and s.count(iv.hi) == 1:
        assert len(s) - s.index(iv.hi) == j


@deterministic
@given(samples, st.randoms(use_true_random=False))
def test_interval_ignores_order(values: list[float], rnd: random.Random) -> None:
    shuffled = values[:]
    rnd.shuffle(shuffled)
    a, b = median_interval(values), median_interval(shuffled)
    assert a is not None and b is not None
    assert (a.median, a.lo, a.hi, a.coverage) == (b.median, b.lo, b.hi, b.coverage)


@pytest.mark.parametrize("n", range(1, 60))
def test_ranks_reach_95_percent_from_six_values(n: int) -> None:
    j, coverage = intervals.median_ranks(n)
    expected = 1 - 2 * sum(math.comb(n, i) for i in range(j)) / 2**n
    assert coverage == pytest.approx(expected)
    if n >= 6:
        assert coverage >= 0.95
        # The narrowest such interval: one rank further in falls short.
        if j + 1 <= (n + 1) // 2:
            nxt = 1 - 2 * sum(math.comb(n, i) for i in range(j + 1)) / 2**n
            assert nxt < 0.95
    else:
        assert j == 1  # [min, max], and the coverage says what it reaches
    assert {5: 0.9375, 3: 0.75, 1: 0.0}.get(n, coverage) == pytest.approx(coverage)


@pytest.mark.parametrize("n", [6, 9, 15, 30])
def test_coverage_holds_on_synthetic_samples(n: int) -> None:
    """Skewed samples (lognormal, like latencies) with a known median: the interval holds it
    in at least 95% of draws (less sampling slack)."""
    rnd = random.Random(n)
    true_median = 1.0  # exp(0): the median of lognormal(0, 1)
    trials = 2000
    hits = 0
    for _ in range(trials):
        iv = median_interval([rnd.lognormvariate(0, 1) for _ in range(n)])
        assert iv is not None
        hits += iv.lo <= true_median <= iv.hi
    assert hits / trials >= 0.95 - 0.015


def _iv(lo: float, hi: float) -> Interval:
    return Interval((lo + hi) / 2, lo, hi, (lo, hi), 0.95)


bounds = st.tuples(value, value).map(lambda t: (min(t), max(t)))


@deterministic
@given(bounds, bounds)
def test_within_noise_is_symmetric(a: tuple[float, float], b: tuple[float, float]) -> None:
    x, y = _iv(*a), _iv(*b)
    assert x.overlaps(y) == y.overlaps(x)
    opposite = {"lower": "higher", "higher": "lower", "within noise": "within noise"}
    assert verdict(y, x) == opposite[verdict(x, y)]
    assert verdict(x, x) == "within noise"
    if verdict(x, y) == "lower":
        assert x.hi < y.lo
    if verdict(x, y) == "within noise":
        assert max(x.lo, y.lo) <= min(x.hi, y.hi)


@deterministic
@given(samples, st.floats(min_value=1e-2, max_value=1e2))
def test_scaling_scales_the_interval(values: list[float], k: float) -> None:
    a, b = median_interval(values), median_interval([v * k for v in values])
    assert a is not None and b is not None
    assert b.lo == pytest.approx(a.lo * k) and b.hi == pytest.approx(a.hi * k)
    assert b.coverage == a.coverage


def test_empty_and_missing_values() -> None:
    assert median_interval([]) is None
    assert median_interval([None, None]) is None
    iv = median_interval([3.0, None, 1.0, 2.0])
    assert iv is not None and iv.median == 2.0 and iv.values == (3.0, 1.0, 2.0)


def test_identical_samples_are_within_noise() -> None:
    a = median_interval([5.0, 5.1, 4.9, 5.0, 5.2])
    b = median_interval([5.05, 4.95, 5.1, 5.0, 5.15])
    c = median_interval([2.0, 2.1, 1.9, 2.0, 2.05])
    assert a is not None and b is not None and c is not None
    assert verdict(a, b) == "within noise"
    assert verdict(c, a) == "lower" and verdict(a, c) == "higher"


# -- shapes -----------------------------------------------------------------------------------

STEADY = [2.0, 2.02, 1.98, 2.01, 1.99] * 8


def test_shapes() -> None:
    from warmscope.core.data.stats import steady_from

    def shape(x: list[float]) -> str:
        return intervals.shape(x, steady_from(x))

    assert shape(STEADY) == "flat"
    assert shape([40.0, 6.0, *STEADY]) == "warm-up"
    assert shape([1.0, 1.01, 0.99, 1.0, *STEADY]) == "slowdown"
    assert intervals.shape(STEADY, None) == "no steady state"
    assert intervals.shape([1.0], 0) == "no steady state"


@deterministic
@given(st.lists(st.floats(min_value=1.0, max_value=1.05), min_size=10, max_size=60))
def test_a_quiet_run_is_flat_and_a_slow_start_is_warmup(x: list[float]) -> None:
    from warmscope.core.data.stats import steady_from

    assert intervals.shape(x, steady_from(x)) == "flat"
    slow = [50.0, 50.0, *x]
    assert intervals.shape(slow, steady_from(slow)) == "warm-up"


def test_shape_counts_name_inconsistent_processes() -> None:
    assert intervals.shape_counts(["warm-up"] * 3) == "warm-up ×3"
    assert intervals.shape_counts(["warm-up", "flat", "warm-up"]) == (
        "inconsistent: flat ×1, warm-up ×2"
    )


# -- noise ------------------------------------------------------------------------------------


def test_quiet_run_has_no_warning() -> None:
    assert intervals.run_warnings([40.0, *STEADY], 1) == []


def test_noisy_run_is_flagged() -> None:
    rnd = random.Random(1)
    noisy = [rnd.choice([1.0, 1.0, 2.5, 0.8, 3.0]) for _ in range(60)]
    codes = {w.code for w in intervals.run_warnings(noisy, 0)}
    assert {"cv", "iqr"} <= codes
    assert all(w.noisy for w in intervals.run_warnings(noisy, 0) if w.code != "not_steady")


def test_warmup_hidden_in_noise_is_flagged() -> None:
    rnd = random.Random(2)
    # Steady around 10 with a wide spread: 5σ is well over a quarter of the median.
    x = [10 + rnd.gauss(0, 2) for _ in range(80)]
    assert "band" in {w.code for w in intervals.run_warnings(x, 0)}


def test_no_steady_state_is_said() -> None:
    assert next(w.code for w in intervals.run_warnings(STEADY, None)) == "not_steady"


def test_profiled_iterations_do_not_make_a_run_noisy() -> None:
    x = [*STEADY]
    x[20] = 500.0  # the profiler's slow pass
    x[21] = 400.0
    assert intervals.run_warnings(x, 0, exclude=[20, 21]) == []


def test_one_value_never_differs() -> None:
    a, b = median_interval([1.0]), median_interval([100.0])
    assert a is not None and b is not None and a.coverage == 0
    assert verdict(a, b) == verdict(b, a) == "within noise"
