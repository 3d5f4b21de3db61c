"""Tests for warmscope.core.data.stats: example cases plus hypothesis properties."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from warmscope.core.data import stats
from warmscope.core.output import verdicts

# Per-test settings (not a global profile) so other test modules keep their own.
deterministic = settings(derandomize=True, deadline=None, database=None)

latency = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
runs = st.lists(latency, min_size=0, max_size=60)
nonempty_runs = st.lists(latency, min_size=1, max_size=60)


def ref_percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    h = (len(s) - 1) * q / 100
    lo = int(h)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (h - lo)


def ref_steady_from(x: list[float]) -> int | None:
    """The documented rule, written out plainly."""
    n = len(x)
    if n < 2:
        return None
    tail = x[n // 2 :]
    m = statistics.median(tail)
    sigma = 1.4826 * statistics.median([abs(t - m) for t in tail])
    thr = m + max(5 * sigma, 0.25 * m)
    for i in range(n):
        k = min(3, n - i)
        if all(v <= thr for v in x[i : i + k]):
            return i
    return None


def noisy(rng: random.Random, n: int, mean: float, cv: float) -> list[float]:
    return [max(0.01, rng.gauss(mean, cv * mean)) for _ in range(n)]


# ---------------------------------------------------------------- percentile


def test_percentile_examples() -> None:
    assert stats.percentile([3.0], 0) == 3.0
    assert stats.percentile([3.0], 100) == 3.0
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert stats.percentile([4.0, 1.0, 3.0, 2.0], 25) == pytest.approx(1.75)
    assert stats.percentile([10.0, 20.0], 90) == pytest.approx(19.0)
    # numpy.percentile(np.arange(1, 11), 99) == 9.91
    assert stats.percentile([float(i) for i in range(1, 11)], 99) == pytest.approx(9.91)


@pytest.mark.parametrize("q", [-0.1, 100.1, math.nan])
def test_percentile_bad_q(q: float) -> None:
    with pytest.raises(ValueError):
        stats.percentile([1.0, 2.0], q)


def test_percentile_empty() -> None:
    with pytest.raises(ValueError):
        stats.percentile([], 50)


@deterministic
@given(nonempty_runs, st.floats(min_value=0, max_value=100))
def test_percentile_matches_reference(values: list[float], q: float) -> None:
    got = stats.percentile(values, q)
    assert math.isclose(got, ref_percentile(values, q), rel_tol=1e-9, abs_tol=1e-9)
    assert min(values) <= got <= max(values)


@deterministic
@given(nonempty_runs, st.floats(min_value=0, max_value=100), st.floats(min_value=0, max_value=100))
def test_percentile_monotone_in_q(values: list[float], q1: float, q2: float) -> None:
    lo, hi = sorted((q1, q2))
    assert stats.percentile(values, lo) <= stats.percentile(values, hi)


@deterministic
@given(nonempty_runs)
def test_percentile_extremes(values: list[float]) -> None:
    assert stats.percentile(values, 0) == min(values)
    assert stats.percentile(values, 100) == max(values)


# --------------------------------------------------------------- steady_from


def test_steady_from_short_runs() -> None:
    assert stats.steady_from([]) is None
    assert stats.steady_from([5.0]) is None
    assert stats.steady_from([100.0, 10.0]) == 1
    assert stats.steady_from([10.0, 10.0]) == 0
    assert stats.steady_from([12.0, 10.0]) == 0


def test_steady_from_simple_warmup() -> None:
    assert stats.steady_from([100.0, 60.0] + [10.0] * 20) == 2


def test_steady_from_libtorch_thread_shape() -> None:
    rng = random.Random(7)
    run = [190.0, 110.0, 70.0, 70.5, 69.8] + [rng.uniform(69.0, 71.5) for _ in range(40)]
    assert stats.steady_from(run) == 2


def test_slow_second_iteration_is_not_steady() -> None:
    # A fast first pass does not make the run steady while the second is slow.
    assert stats.steady_from([10.0, 100.0] + [10.0] * 20) == 2
    assert stats.steady_from([10.0, 100.0, 60.0] + [10.0] * 20) == 3
    assert stats.steady_from([10.0, 10.0, 100.0] + [10.0] * 20) == 3


def test_isolated_later_spike_is_not_warmup() -> None:
    run = [10.0] * 10 + [200.0] + [10.0] * 10
    assert stats.steady_from(run) == 0


def test_steady_from_flat() -> None:
    assert stats.steady_from([25.0] * 50) == 0


@pytest.mark.parametrize("seed", range(10))
def test_noisy_steady_run_starting_in_range(seed: int) -> None:
    rng = random.Random(seed)
    run = [50.0, *noisy(rng, 100, 50.0, 0.2)]
    assert stats.steady_from(run) == 0


@pytest.mark.parametrize("seed", range(50))
def test_two_slow_then_noise_cv20(seed: int) -> None:
    rng = random.Random(seed)
    run = [400.0, 250.0, *noisy(rng, 198, 50.0, 0.2)]
    assert len(run) == 200
    assert stats.steady_from(run) == 2


def test_no_steady_window() -> None:
    # Every window, down to the last single iteration, contains a slow one.
    assert stats.steady_from([1.0, 1.0, 100.0, 1.0, 1.0, 100.0]) is None


@deterministic
@given(runs)
def test_steady_from_matches_documented_rule(x: list[float]) -> None:
    assert stats.steady_from(x) == ref_steady_from(x)


@deterministic
@given(runs)
def test_steady_from_in_range(x: list[float]) -> None:
    sf = stats.steady_from(x)
    assert sf is None or 0 <= sf < len(x)


@deterministic
@given(runs, st.integers(min_value=-20, max_value=20))
def test_steady_from_scale_invariant_power_of_two(x: list[float], k: int) -> None:
    # Scaling by a power of two is exact in floating point, so the answer must not change.
    assert stats.steady_from([v * 2.0**k for v in x]) == stats.steady_from(x)


def _min_margin(x: list[float]) -> float:
    tail = x[len(x) // 2 :]
    m = statistics.median(tail)
    thr = m + max(5 * 1.4826 * statistics.median([abs(t - m) for t in tail]), 0.25 * m)
    return min(abs(v - thr) for v in x) / thr


@deterministic
@given(
    st.lists(st.floats(min_value=1.0, max_value=1e4), min_size=2, max_size=60),
    st.floats(min_value=1e-3, max_value=1e3),
)
def test_steady_from_scale_invariant(x: list[float], c: float) -> None:
    # Any c > 0, away from values that sit on the threshold to within rounding.
    assume(_min_margin(x) > 1e-9)
    assert stats.steady_from([v * c for v in x]) == stats.steady_from(x)


steady_runs = st.builds(
    lambda base, fracs: [base * (1.0 + 0.2 * f) for f in fracs],
    st.floats(min_value=0.01, max_value=1e4),
    st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=60),
)


@deterministic
@given(steady_runs)
def test_prepending_a_very_slow_iteration(x: list[float]) -> None:
    assert stats.steady_from(x) == 0 or len(x) == 1
    sf = stats.steady_from([100.0 * max(x), *x])
    assert sf is not None and sf >= 1
    assert sf == 1


# ----------------------------------------------------------------- summarize


def test_summarize_empty() -> None:
    s = stats.summarize([])
    assert s.count == 0
    assert s.steady_count == 0
    assert s.warmup_excess_ms == 0.0
    d = s.to_dict()
    for key, value in d.items():
        if key not in ("count", "steady_count", "warmup_excess_ms"):
            assert value is None, key


def test_summarize_single() -> None:
    s = stats.summarize([42.0])
    assert s.count == 1
    assert s.first_ms == 42.0
    assert s.steady_from is None
    assert s.p50_ms == s.min_ms == s.max_ms == s.mean_ms == 42.0
    assert s.std_ms == 0.0
    assert s.cv is None
    assert s.throughput_per_s == pytest.approx(1000 / 42)
    assert s.steady_count == 1


def test_summarize_example() -> None:
    s = stats.summarize([190.0, 110.0, 70.0, 70.0, 70.0, 70.0])
    assert s.count == 6
    assert s.first_ms == 190.0
    assert s.steady_from == 2
    assert s.warmup_excess_ms == pytest.approx(120.0 + 40.0)
    assert s.p50_ms == s.mean_ms == s.min_ms == s.max_ms == 70.0
    assert s.cv == 0.0
    assert s.throughput_per_s == pytest.approx(1000 / 70)
    assert s.steady_count == 4


def test_to_dict_keys_are_field_names() -> None:
    d = stats.summarize([3.0, 2.0, 1.0]).to_dict()
    assert list(d) == [
        "count",
        "first_ms",
        "steady_from",
        "warmup_excess_ms",
        "min_ms",
        "p50_ms",
        "p90_ms",
        "p99_ms",
        "mean_ms",
        "std_ms",
        "max_ms",
        "cv",
        "throughput_per_s",
        "steady_count",
    ]


@deterministic
@given(runs)
def test_summary_properties(x: list[float]) -> None:
    s = stats.summarize(x)
    assert s.count == len(x)
    assert s.warmup_excess_ms >= 0.0
    if s.steady_from in (None, 0):
        assert s.warmup_excess_ms == 0.0
    if x:
        assert s.first_ms == x[0]
        assert s.min_ms is not None and s.p50_ms is not None and s.p90_ms is not None
        assert s.p99_ms is not None and s.max_ms is not None and s.mean_ms is not None
        assert s.min_ms <= s.p50_ms <= s.p90_ms <= s.p99_ms <= s.max_ms
        assert s.min_ms <= s.mean_ms <= s.max_ms
        assert s.std_ms is not None and s.std_ms >= 0.0
        expected = len(x) - (s.steady_from or 0)
        assert s.steady_count == expected


@deterministic
@given(latency, st.integers(min_value=2, max_value=50))
def test_summarize_constant(v: float, n: int) -> None:
    s = stats.summarize([v] * n)
    assert s.steady_from == 0
    assert s.cv == 0.0
    assert s.std_ms == 0.0
    assert s.warmup_excess_ms == 0.0


# ------------------------------------------------------------------- exclude


def test_exclude_keeps_original_indexing() -> None:
    # Iteration 3 ran under a profiler and is very slow; without exclude it would hold
    # steady_from back to 4.
    run = [190.0, 110.0, 70.0, 900.0, 70.0, 70.0, 70.0, 70.0, 70.0, 70.0]
    assert stats.summarize(run).steady_from == 4
    s = stats.summarize(run, exclude={3})
    assert s.steady_from == 2
    assert s.count == len(run)
    assert s.steady_count == len(run) - 2 - 1
    assert s.max_ms == 70.0
    assert s.first_ms == 190.0


def test_exclude_warmup_index_maps_back() -> None:
    run = [500.0, 300.0, 200.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0]
    assert stats.summarize(run).steady_from == 3
    # Excluding index 2: the first kept steady iteration is still index 3.
    s = stats.summarize(run, exclude=[2])
    assert s.steady_from == 3
    assert s.warmup_excess_ms == pytest.approx(450.0 + 250.0)
    # Excluding the first iteration: first_ms is still latencies[0].
    s = stats.summarize(run, exclude=[0, 1, 2])
    assert s.first_ms == 500.0
    assert s.steady_from == 3
    assert s.warmup_excess_ms == 0.0


def test_exclude_everything() -> None:
    s = stats.summarize([5.0, 6.0], exclude=range(10))
    assert s.count == 2
    assert s.first_ms == 5.0
    assert s.steady_from is None
    assert s.p50_ms is None
    assert s.steady_count == 0


@deterministic
@given(runs, st.sets(st.integers(min_value=0, max_value=70)))
def test_exclude_equals_dropping(x: list[float], excl: set[int]) -> None:
    kept_idx = [i for i in range(len(x)) if i not in excl]
    kept = [x[i] for i in kept_idx]
    with_excl = stats.summarize(x, exclude=excl)
    dropped = stats.summarize(kept)
    if dropped.steady_from is None:
        assert with_excl.steady_from is None
    else:
        assert with_excl.steady_from == kept_idx[dropped.steady_from]
        assert with_excl.steady_from not in excl
    for key in ("p50_ms", "p99_ms", "mean_ms", "cv", "steady_count", "warmup_excess_ms"):
        assert getattr(with_excl, key) == getattr(dropped, key)


# ------------------------------------------------------------------- compare


def test_compare_rows() -> None:
    a = stats.summarize([190.0, 110.0, 70.0, 70.0, 70.0, 70.0])
    b = stats.summarize([70.0] * 6)
    rows = verdicts.compare(a, b).rows
    assert [r[0] for r in rows] == [
        "first_ms",
        "steady_from",
        "warmup_excess_ms",
        "p50_ms",
        "p90_ms",
        "p99_ms",
        "mean_ms",
        "cv",
        "throughput_per_s",
    ]
    by_name = {r[0]: r for r in rows}
    assert by_name["first_ms"] == ("first_ms", 190.0, 70.0, pytest.approx(70 / 190))
    assert by_name["steady_from"][1:] == (2, 0, 0.0)
    assert by_name["warmup_excess_ms"][1:] == (pytest.approx(160.0), 0.0, 0.0)
    assert by_name["p50_ms"][1:] == (70.0, 70.0, 1.0)
    assert by_name["cv"][1:] == (0.0, 0.0, None)  # a's cv is 0: no ratio


def test_compare_none_values() -> None:
    rows = verdicts.compare(stats.summarize([]), stats.summarize([1.0, 1.0])).rows
    assert len(rows) == 9
    for _name, a, _b, ratio in rows:
        if a is None:
            assert ratio is None


def test_known_warmup_iterations_never_start_the_steady_state() -> None:
    # A noisy run whose second iteration (an optimization, by its events) hides in the noise.
    rng = random.Random(7)
    noisy = [50.0, 6.0] + [3.0 * (1 + rng.uniform(-0.6, 0.6)) for _ in range(30)]
    assert stats.summarize(noisy).steady_from == 1  # the statistics alone cannot tell
    assert stats.summarize(noisy, known_warmup=[0, 1]).steady_from == 2
    # Known work later on (a recompile at iteration 20) is an outlier, not warm-up.
    assert stats.summarize(noisy, known_warmup=[0, 1, 20]).steady_from == 2
    # Every iteration known busy: never steady.
    assert stats.summarize([5.0, 4.0], known_warmup=[0, 1]).steady_from is None


def test_shapes_are_judged_each_on_its_own() -> None:
    from warmscope.core.data.stats import summarize_shapes

    # Two shapes in turn: A warm at 1.0 after a slow first call, B at 3.0 throughout.
    ms = [50.0, 3.0] + [1.0, 3.0] * 20
    overall, per_shape = summarize_shapes(ms, [0, 1] * 21, 2)
    (a_idx, a), (b_idx, b) = per_shape
    assert list(a_idx[:3]) == [0, 2, 4] and list(b_idx[:3]) == [1, 3, 5]
    assert a.steady_from == 2 and a.p50_ms == 1.0 and a.warmup_excess_ms == 49.0
    assert b.steady_from == 1 and b.p50_ms == 3.0 and b.cv == 0.0
    # Mixed, B's 3.0 would look slow against A's 1.0: judged per shape, the run is steady
    # just past A's slow first call.
    assert overall.steady_from == 1 and overall.warmup_excess_ms == 49.0
    # A ramp: a later block that starts steady adds no warm-up.
    ramp = [40.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]
    overall, _ = summarize_shapes(ramp, [0] * 5 + [1] * 4, 2)
    assert overall.steady_from == 1


# ------------------------------------------------------------------- integer nanoseconds

ns_runs = st.lists(
    st.one_of(
        st.integers(min_value=1, max_value=3_000),  # many ties, as real latencies have
        st.integers(min_value=1, max_value=10**13),
    ),
    min_size=0,
    max_size=60,
)


@deterministic
@given(ns_runs, st.sets(st.integers(min_value=0, max_value=70), max_size=4), st.booleans())
def test_nanoseconds_give_the_figures_of_their_milliseconds(
    ns: list[int], excl: set[int], busy_first: bool
) -> None:
    """Counting integer nanoseconds (``per_ms``) gives, to the bit, what the same latencies
    converted one by one to milliseconds give."""
    ms = [v / 1e6 for v in ns]
    busy = [0, 1] if busy_first else []
    by_ns = stats.steady_state(ns, excl, busy, per_ms=1e6)
    by_ms = stats.steady_state(ms, excl, busy)
    assert by_ns.summary == by_ms.summary
    assert list(by_ns.steady.items()) == list(by_ms.steady.items())
    assert by_ns.reference == by_ms.reference


@deterministic
@given(st.lists(st.integers(min_value=1, max_value=5_000), min_size=1, max_size=60))
def test_percentiles_from_nanoseconds_are_those_of_the_sorted_list(ns: list[int]) -> None:
    """The steady percentiles of a flat run are the sorted-list definition's, over the
    milliseconds (a run steady from its first iteration: its statistics cover them all)."""
    ms = [v / 1e6 for v in ns]
    state = stats.steady_state(ns, per_ms=1e6)
    s = state.summary
    assume(s.steady_from == 0)
    assert s.p50_ms == pytest.approx(ref_percentile(ms, 50), rel=1e-12)
    assert s.p90_ms == pytest.approx(ref_percentile(ms, 90), rel=1e-12)
    assert s.p99_ms == pytest.approx(ref_percentile(ms, 99), rel=1e-12)
    for q in (0, 25, 50, 75, 90, 99, 100):
        assert stats.percentile_sorted(state.steady, q) == stats.percentile(ms, q)
    assert s.min_ms == min(ms) and s.max_ms == max(ms)
    assert s.mean_ms == pytest.approx(statistics.fmean(ms), rel=1e-12)
    assert s.std_ms == pytest.approx(statistics.pstdev(ms), rel=1e-9, abs=1e-15)


def test_nanoseconds_by_shape_give_the_figures_of_their_milliseconds() -> None:
    rng = random.Random(3)
    ns = [50_000_000, 3_000_000] + [
        rng.choice((1_000_000, 1_000_001, 3_000_000)) for _ in range(80)
    ]
    shape_of = [0, 1] + [rng.randrange(2) for _ in range(80)]
    by_ns = stats.summarize_shapes(ns, shape_of, 2, [5], [0], per_ms=1e6)
    by_ms = stats.summarize_shapes([v / 1e6 for v in ns], shape_of, 2, [5], [0])
    assert by_ns[0] == by_ms[0]
    assert [(list(i), s) for i, s in by_ns[1]] == [(list(i), s) for i, s in by_ms[1]]


@deterministic
@given(
    st.floats(min_value=0, max_value=1e7, allow_nan=False),
    st.sampled_from([1e6, 1e3, 1.0, 1e9]),
)
def test_a_threshold_in_nanoseconds_says_what_the_division_says(thr: float, per_ms: float) -> None:
    at_most = stats._at_most(thr, per_ms)
    assert at_most / per_ms <= thr < (at_most + 1) / per_ms


def test_latencies_beyond_a_float_square_are_counted_without_overflow() -> None:
    """A latency whose square overflows a float: readers refuse one, and the statistics do
    not raise on it either."""
    s = stats.summarize([1.0, 2.0, 1.3e154])
    assert s.p50_ms == 2.0
    assert stats._exact_sum([(1e308, 5)]) == math.inf
    assert stats._exact_sum([(1.3e154, 3), (2.0, 1)]) == math.fsum([1.3e154] * 3 + [2.0])
