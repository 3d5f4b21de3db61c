"""The sequential statistics of adaptive sweeps: exact rank tests, the error budget over looks,
racing, and the proof by simulation that identical cells are not called different."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Callable

import pytest

from warmscope.core.data import racing
from warmscope.core.data.racing import Race, compare, p_value, spending, u_cdf
from warmscope.core.output.sweep_digest import is_decided, rank
from warmscope.core.output.sweep_stats import stat_json

Draw = Callable[[random.Random], float]


def brute_cdf(n: int, m: int, u: int) -> float:
    """P(U ≤ u) by listing every split of n + m ranks."""
    hits = total = 0
    for a in itertools.combinations(range(n + m), n):
        b = [x for x in range(n + m) if x not in a]
        total += 1
        hits += sum(x < y for x in a for y in b) <= u
    return hits / total


@pytest.mark.parametrize(("n", "m"), [(1, 1), (2, 3), (3, 3), (4, 2), (5, 5)])
def test_the_null_distribution_is_counted_exactly(n: int, m: int) -> None:
    for u in range(-1, n * m + 1):
        assert u_cdf(n, m, u) == pytest.approx(brute_cdf(n, m, u), abs=1e-12)
    assert racing.smallest_p(3, 3) == pytest.approx(0.1)
    assert racing.smallest_p(5, 5) == pytest.approx(2 / 252)


def test_the_normal_tail_takes_over_closely_for_large_cells() -> None:
    assert racing.EXACT_LIMIT < 65 * 65  # u_cdf(65, 65, …) is the normal approximation
    cum, total = racing._cumulative(65, 65)
    for u in (1600, 1800, 2000):
        assert u_cdf(65, 65, u) == pytest.approx(cum[u] / total, abs=2e-3)


def test_ties_count_against_a_difference() -> None:
    assert p_value([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]) == 1.0
    separated = p_value([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0])
    touching = p_value([1.0, 2.0, 3.0, 5.0], [5.0, 6.0, 7.0, 8.0])
    assert separated == pytest.approx(2 / 70) and touching > separated


def test_the_ratio_interval_excludes_one_exactly_where_the_test_calls_a_difference() -> None:
    rng = random.Random(7)
    seen = {True: 0, False: 0}
    for _ in range(400):
        n, m = rng.randint(3, 9), rng.randint(3, 9)
        scale = rng.choice([1.0, 1.5, 3.0])
        a = [rng.lognormvariate(0, 0.5) for _ in range(n)]
        b = [scale * rng.lognormvariate(0, 0.5) for _ in range(m)]
        level = rng.choice([0.05, 0.01, 0.0083])
        cmp = compare(a, b, level)
        assert cmp is not None and cmp.lo <= cmp.estimate <= cmp.hi
        excludes = cmp.lo > 1 or cmp.hi < 1
        if cmp.coverage >= 1 - level:
            assert excludes == cmp.beyond_noise, (a, b, level, cmp)
        else:  # too few values to reach the level: the full range, and no difference called
            assert not cmp.beyond_noise
            assert cmp.lo == pytest.approx(min(y / x for x in a for y in b))
        seen[cmp.beyond_noise] += 1
    assert seen[True] > 20 and seen[False] > 20  # both sides were exercised


def test_the_budget_over_looks_never_exceeds_alpha() -> None:
    for cells, cap in [(2, 3), (2, 5), (2, 10), (3, 10), (4, 5), (4, 10), (8, 20), (64, 30)]:
        pairs = cells * (cells - 1) // 2
        shares = spending(cells, cap, adaptive=True)
        assert math.fsum(shares.values()) <= racing.ALPHA / pairs + 1e-12
        assert all(racing.MIN_PROCESSES <= r <= cap for r in shares)
        for r, share in shares.items():  # no share is spent where no result could use it
            assert racing.smallest_p(r, r) <= share or r != min(shares)
        assert spending(cells, cap, adaptive=False) == {cap: racing.ALPHA / pairs}
    assert spending(2, 3, adaptive=True) == {}  # 3 processes each can never reach 5%
    assert min(spending(2, 10, adaptive=True)) == 5


# -- simulation --------------------------------------------------------------------------------


def lognormal_outliers(rng: random.Random, sigma: float = 0.5) -> float:
    """A first call: lognormal, and one time in twenty a process on a busy machine, 3–20× it."""
    x = 40.0 * rng.lognormvariate(0, sigma)
    return x * rng.uniform(3, 20) if rng.random() < 0.05 else x


def measured_spread(rng: random.Random) -> float:
    """As spread as the first calls measured on this project's busy 2-core machine (five
    scripted processes: 39.6–68.1 ms), with the same busy-machine outliers."""
    return lognormal_outliers(rng, sigma=0.25)


def pareto(rng: random.Random) -> float:
    return 30.0 * rng.paretovariate(1.2)  # infinite variance


def student_t(rng: random.Random) -> float:
    """|t| with 2 degrees of freedom, shifted: heavy tails on both sides of the bulk."""
    t = rng.gauss(0, 1) / math.sqrt((rng.gauss(0, 1) ** 2 + rng.gauss(0, 1) ** 2) / 2)
    return max(0.1, 50.0 + 8.0 * t)


NOISES = (lognormal_outliers, pareto, student_t)


def race(rng: random.Random, draws: list[Draw], cap: int) -> tuple[Race, int, list[list[float]]]:
    """One adaptive sweep as ``Sweep.run`` drives it: rounds over the live cells, a look after
    each. Returns the race, the processes used and the values."""
    r = Race(len(draws), cap)
    values: list[list[float]] = [[] for _ in draws]
    used = 0
    for round_ in range(1, cap + 1):
        for c in r.live:
            values[c].append(draws[c](rng))
            used += 1
        r.look(round_, values)
        if r.decided:
            break
    return r, used, values


def test_identical_cells_are_not_called_different_in_adaptive_sweeps() -> None:
    """≥ 1,000 A/A sweeps of 2 and of 4 identical cells, cap 10, heavy-tailed noise: the share
    that called any difference (a cell dropped, a best named) stays within 5%."""
    rng = random.Random(20)
    for cells in (2, 4):
        sweeps = 1000
        false = 0
        for s in range(sweeps):
            noise = NOISES[s % len(NOISES)]
            r, used, _ = race(rng, [noise] * cells, cap=10)
            false += bool(r.drops)
            assert used == cells * 10 or r.drops
        rate = false / sweeps
        print(
            f"\nA/A adaptive, {cells} cells × cap 10, {sweeps} sweeps: false differences {rate:.2%}"
        )
        assert rate <= racing.ALPHA


def test_identical_cells_are_not_called_different_in_fixed_sweeps() -> None:
    """The fixed design's verdicts (the document's ranking) on A/A sweeps of 5 and 10
    processes: no best named, no cell called worse, but within 5% of the sweeps."""
    rng = random.Random(21)
    for cells, repeat in ((2, 5), (4, 10)):
        sweeps = 1000
        false = named = 0
        for s in range(sweeps):
            noise = NOISES[s % len(NOISES)]
            docs = [
                {
                    "index": c,
                    "label": f"cell{c}",
                    "first_ms": stat_json([noise(rng) for _ in range(repeat)]),
                }
                for c in range(cells)
            ]
            ranking = rank(docs, "first")
            false += any(r["vs_best"] == "worse" for r in ranking)
            named += is_decided(ranking)
        rate = false / sweeps
        print(
            f"\nA/A fixed, {cells} cells × {repeat}, {sweeps} sweeps: false differences "
            f"{rate:.2%}, a best named {named / sweeps:.2%}"
        )
        assert rate <= racing.ALPHA


def test_a_clear_difference_is_decided_well_under_the_cap() -> None:
    """One cell's first call 2× the other's (lognormal noise with busy-machine outliers):
    decided for the right cell, most often after round 5 or 6 of 10."""
    rng = random.Random(22)
    sweeps, cap = 300, 10
    decided = right = 0
    used: list[int] = []
    for _ in range(sweeps):
        r, n, _ = race(rng, [lambda g: 2 * measured_spread(g), measured_spread], cap)
        decided += r.decided
        right += r.live == [1]
        used.append(n)
    share = sum(used) / (sweeps * 2 * cap)
    print(
        f"\n2× first call, cap {cap}: decided {decided / sweeps:.0%} (right cell "
        f"{right / sweeps:.0%}), processes used {share:.0%} of the fixed design's "
        f"(median {statistics.median(used):g} of {2 * cap})"
    )
    assert right == decided and decided / sweeps >= 0.8
    assert statistics.median(used) <= 12 and share <= 0.7


def test_racing_drops_the_clearly_worse_cells_early() -> None:
    """Four cells, two of them 3× slower: those two are dropped before the cap (most often),
    and the two alike are left running, undecided."""
    rng = random.Random(23)
    slow: Draw = lambda g: 3 * measured_spread(g)  # noqa: E731
    drops_before_cap = undecided = 0
    for _ in range(100):
        r, _, _ = race(rng, [measured_spread, slow, measured_spread, slow], cap=12)
        dropped = {d.cell for d in r.drops}
        drops_before_cap += dropped == {1, 3} and all(d.round < 12 for d in r.drops)
        undecided += not r.decided
    assert drops_before_cap >= 50
    assert undecided >= 90
