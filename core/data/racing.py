"""Sequential comparison of a sweep's cells: exact rank tests that stay valid however often
they look, racing (dropping a cell once it is beyond noise worse than the best), and the ratio
of two cells with its interval.

Pure functions, standard library only.

**The test.** Two cells are compared on one figure per process (the ranking objective: first
iteration, warm-up excess, steady p50, time to serve K calls) with the exact two-sided
Mann–Whitney (Wilcoxon rank-sum) test. Its null distribution is counted exactly (the
coefficients of a Gaussian binomial, integers throughout), so its p-value holds whatever the
distribution of the values: heavy tails and outliers move a value's rank by at most one.
Tied values count against a difference (a tie is never a win), which keeps the test
conservative on coarse clocks. Beyond ``EXACT_LIMIT`` pairs of values the normal approximation
with a continuity correction stands in.

**The error budget.** A sweep of k cells has k(k−1)/2 pairs; each pair gets α/pairs
(Bonferroni), α = 5%. A fixed sweep looks once, at the end. An adaptive sweep looks after every
round from ``MIN_PROCESSES`` on, and splits each pair's share over its looks (Bonferroni again):
the i-th look gets a share ∝ 1/i (earlier looks more: later ones have more processes and need
less), and looks where even a complete separation of the two cells could not reach their share
get none (they are skipped; 3 processes each give at best p = 10%). Every claim the sweep makes
(a cell dropped, a best named) is one of these tests, so under identical cells the probability
that any claim is made at all is at most α, however the rounds turn out: the answer is valid
under repeated looks. It is conservative (the looks overlap), which the simulation in the tests
measures.

**Racing** (as F-race and successive halving do): after each look a cell whose test against
the best live cell (the lowest, ``order``) is beyond noise, and whose ratio to it is above 1, is
dropped from further rounds. The sweep is *decided* when one live cell is left: it is beyond noise better
than every other. Cells all within noise of each other are not a decision: the sweep runs to
its cap and says so.

**The ratio.** How much two cells differ is the Hodges–Lehmann estimate on the log scale (the
median of all pairwise ratios b/a), with the distribution-free interval of Moses (the order
statistics of those ratios that the Mann–Whitney distribution gives). It is the interval of the
same test: it excludes 1 exactly where the test calls the difference beyond noise. Where a
figure can be zero or negative the shift (b − a) stands in for the ratio.

**The lowest** is decided by that same estimate (``order``), never by the medians: the median
of one cell and the ratio of two can disagree ("A is lowest (41.5 ms), B within noise of it
(0.70×)": A's median below B's, the pairwise ratios saying B is lower). A cell that no other is
lower than, pair by pair, is the lowest, and every ratio shown against it is at least 1. Where
the pairs go round in a circle (A below B below C below A, each within noise) no cell is; the
one lower than the most others leads, and ``order`` says so.
"""

from __future__ import annotations

import bisect
import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

ALPHA = 0.05
"""The chance, under identical cells, that a sweep makes any claim of a difference."""
MIN_PROCESSES = 3
"""Processes per cell before an adaptive sweep's first look."""
EXACT_LIMIT = 4096
"""Exact null distribution up to this many pairs of values (n·m); normal beyond."""
METHOD = "exact Mann–Whitney tests, α split by Bonferroni; ratios: Hodges–Lehmann, Moses' interval"


@functools.lru_cache(maxsize=512)
def _cumulative(n: int, m: int) -> tuple[tuple[int, ...], int]:
    """``P(U ≤ u)`` numerators for u = 0…n·m, and the denominator C(n+m, n).

    The counts of U are the coefficients of the Gaussian binomial [n+m choose n]_q,
    the product over i = 1…n of (1 − q^(m+i)) / (1 − q^i).
    """
    poly = [1]
    for i in range(1, n + 1):
        shift = m + i
        grown = poly + [0] * shift
        for j, c in enumerate(poly):
            grown[j + shift] -= c
        for j in range(i, len(grown)):
            grown[j] += grown[j - i]
        poly = grown[: i * m + 1]
    cum = []
    total = 0
    for c in poly:
        total += c
        cum.append(total)
    return tuple(cum), total


def u_cdf(n: int, m: int, u: float) -> float:
    """P(U ≤ u) for the Mann–Whitney U of n against m values under the null."""
    if n <= 0 or m <= 0:
        return 1.0
    if u < 0:
        return 0.0
    if u >= n * m:
        return 1.0
    if n * m <= EXACT_LIMIT:
        cum, total = _cumulative(min(n, m), max(n, m))
        return cum[math.floor(u)] / total
    mean = n * m / 2
    sd = math.sqrt(n * m * (n + m + 1) / 12)
    z = (math.floor(u) + 0.5 - mean) / sd
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided p-value n against m values can give (complete separation)."""
    return min(1.0, 2 * u_cdf(n, m, 0))


def wins(a: Sequence[float], b: Sequence[float]) -> tuple[int, int]:
    """``(#a_i < b_j, #b_j < a_i)`` over all pairs, ties in neither."""
    sa, sb = sorted(a), sorted(b)
    a_lower = sum(len(sb) - bisect.bisect_right(sb, x) for x in sa)
    b_lower = sum(len(sa) - bisect.bisect_right(sa, y) for y in sb)
    return a_lower, b_lower


def p_value(a: Sequence[float], b: Sequence[float]) -> float:
    """The exact two-sided Mann–Whitney p-value of a against b (ties count against)."""
    n, m = len(a), len(b)
    if not n or not m:
        return 1.0
    a_lower, b_lower = wins(a, b)
    one_sided = u_cdf(n, m, n * m - max(a_lower, b_lower))
    return min(1.0, 2 * one_sided)


def fewest_each(level: float) -> int | None:
    """The fewest processes each side needs before a comparison can reach ``level``."""
    if level <= 0:
        return None
    for n in range(1, 200):
        if smallest_p(n, n) <= level:
            return n
    return None


def trimmed(n: int, m: int, level: float) -> int:
    """d: the interval drops the d−1 most extreme pairwise ratios at each end; the largest d
    with 2·P(U ≤ d−1) ≤ level, 0 when not even the full range reaches it."""
    d = 0
    while d < n * m and 2 * u_cdf(n, m, d) <= level:
        d += 1
    return d


@dataclass(frozen=True)
class Comparison:
    """Cell b against cell a on one figure: is it beyond noise, and by how much."""

    n: int
    m: int
    p: float
    level: float
    """The test's share of the error budget: beyond noise where ``p ≤ level``."""
    ratio: bool
    """``estimate``, ``lo`` and ``hi`` are b/a; otherwise b − a."""
    estimate: float
    lo: float
    hi: float
    coverage: float
    """The probability that [lo, hi] holds the true ratio (shift), as reached."""

    @property
    def beyond_noise(self) -> bool:
        return self.level > 0 and self.p <= self.level

    @property
    def reachable(self) -> bool:
        """Whether these processes could reach the level at all (a complete separation's
        p-value within it): where not, the comparison cannot tell, which is not "within
        noise" (3 against 3 give at best p = 10%)."""
        return self.level > 0 and smallest_p(self.n, self.m) <= self.level

    @property
    def b_higher(self) -> bool:
        return self.estimate > (1.0 if self.ratio else 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "n": [self.n, self.m],
            "p": round(self.p, 6),
            "level": round(self.level, 6),
            "beyond_noise": self.beyond_noise,
            "reachable": self.reachable,
            "ratio": self.ratio,
            "estimate": round(self.estimate, 6),
            "lo": round(self.lo, 6),
            "hi": round(self.hi, 6),
            "coverage": round(self.coverage, 4),
        }


def _kept(values: Sequence[float]) -> list[float]:
    return [float(x) for x in values if x is not None and math.isfinite(x)]


def estimate(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The Hodges–Lehmann estimate of b against a, on the scale ``compare`` says its ratio on:
    the median pairwise log ratio (or difference, where a value is not positive); above 0:
    b is higher. ``None`` where a side has no value."""
    a, b = _kept(a), _kept(b)
    if not a or not b:
        return None
    if min(a) > 0 and min(b) > 0:
        return statistics.median(math.log(y) - math.log(x) for x in a for y in b)
    return statistics.median(y - x for x in a for y in b)


@dataclass(frozen=True)
class Order:
    """Cells lowest first by the pairwise estimate; ``lowest``: whether the first is lower than
    (or level with) every other, pair by pair (false where the pairs go round in a circle)."""

    cells: list[int]
    lowest: bool


def order(cells: Sequence[int], values: Sequence[Sequence[float]]) -> Order:
    """``cells`` with values, lowest first: the first is the cell lower than the most others
    pair by pair (the Hodges–Lehmann estimate of each pair, the one a comparison's ratio shows),
    the median breaking ties; the others by their estimate against it, so every ratio shown
    against the first rises down the list."""
    measured = [c for c in cells if _kept(values[c])]
    if not measured:
        return Order([], False)
    pair = {
        (c, d): estimate(values[c], values[d]) or 0.0 for c in measured for d in measured if c != d
    }

    def score(c: int) -> float:
        # Each other cell above c counts one, one level with it a half.
        return sum(
            1.0 if pair[c, d] > 0 else 0.5 if pair[c, d] == 0 else 0.0 for d in measured if d != c
        )

    def median(c: int) -> float:
        return statistics.median(_kept(values[c]))

    first = min(measured, key=lambda c: (-score(c), median(c), c))
    rest = after(first, [c for c in measured if c != first], values)
    return Order([first, *rest], all(pair[first, d] >= 0 for d in rest))


def after(first: int, cells: Sequence[int], values: Sequence[Sequence[float]]) -> list[int]:
    """``cells`` with values by their estimate against ``first``, lowest first (the median,
    then the index, on a tie)."""

    def key(d: int) -> tuple[float, float, int]:
        return (estimate(values[first], values[d]) or 0.0, statistics.median(_kept(values[d])), d)

    return sorted((c for c in cells if _kept(values[c])), key=key)


def compare(a: Sequence[float], b: Sequence[float], level: float) -> Comparison | None:
    """b against a: the test at ``level`` and the ratio's interval at the same level
    (``None`` where a side has no value)."""
    a = [float(x) for x in a if x is not None and math.isfinite(x)]
    b = [float(x) for x in b if x is not None and math.isfinite(x)]
    n, m = len(a), len(b)
    if not n or not m:
        return None
    ratio = min(a) > 0 and min(b) > 0
    if ratio:
        diffs = sorted(math.log(y) - math.log(x) for x in a for y in b)
    else:
        diffs = sorted(y - x for x in a for y in b)
    d = trimmed(n, m, level)
    edge = max(d, 1)  # below the level: the full range, its coverage said
    lo, hi = diffs[edge - 1], diffs[n * m - edge]
    coverage = max(0.0, 1 - 2 * u_cdf(n, m, edge - 1))
    est = statistics.median(diffs)
    back = math.exp if ratio else float
    return Comparison(n, m, p_value(a, b), level, ratio, back(est), back(lo), back(hi), coverage)


def spending(
    cells: int,
    cap: int,
    *,
    adaptive: bool,
    first: int = MIN_PROCESSES,
    alpha: float = ALPHA,
) -> dict[int, float]:
    """Each look's share of a pair's error budget, by round (1-based processes per cell).

    A fixed sweep has one look, at the end: ``{cap: α/pairs}``. An adaptive one looks after
    rounds ``first``…``cap``, the i-th look getting a share ∝ 1/i; leading looks where a
    complete separation could not reach their share are given none.
    """
    pairs = max(1, cells * (cells - 1) // 2)
    per_pair = alpha / pairs
    if not adaptive:
        return {cap: per_pair}
    looks = list(range(max(1, first), cap + 1))
    while looks:
        weights = [1 / (i + 1) for i in range(len(looks))]
        total = math.fsum(weights)
        shares = {r: per_pair * w / total for r, w in zip(looks, weights, strict=True)}
        if smallest_p(looks[0], looks[0]) <= shares[looks[0]]:
            return shares
        looks.pop(0)
    return {}


def first_decisive_round(shares: dict[int, float]) -> int | None:
    """The first round at which a difference can be called."""
    return min(shares) if shares else None


@dataclass(frozen=True)
class Drop:
    """A cell left out of further rounds: beyond noise worse than the best at a look."""

    cell: int
    round: int
    best: int
    comparison: Comparison

    def to_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "round": self.round,
            "against": self.best,
            "comparison": self.comparison.to_json(),
        }


def lowest(live: Sequence[int], values: Sequence[Sequence[float]]) -> int | None:
    """The live cell that leads ``order``: lower than the most others, pair by pair."""
    found = order(live, values).cells
    return found[0] if found else None


@dataclass
class Race:
    """The adaptive sweep's state: the cells still running, the dropped ones, the looks."""

    cells: int
    cap: int
    adaptive: bool = True
    first: int = MIN_PROCESSES
    alpha: float = ALPHA
    live: list[int] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    looks: list[int] = field(default_factory=list)
    """The rounds after which a look was taken (with a share of the budget)."""

    def __post_init__(self) -> None:
        self.live = list(range(self.cells))
        self.shares = spending(
            self.cells, self.cap, adaptive=self.adaptive, first=self.first, alpha=self.alpha
        )

    def level(self, round_: int) -> float:
        """The share of the budget a test at ``round_`` has: a fixed sweep's one look
        whenever it ends; an adaptive sweep's look at that round (0: none)."""
        if not self.adaptive:
            return self.shares[self.cap]
        return self.shares.get(round_, 0.0)

    @property
    def decided(self) -> bool:
        return self.cells > 1 and len(self.live) == 1

    def look(self, round_: int, values: Sequence[Sequence[float]]) -> list[Drop]:
        """After ``round_`` (1-based): drop every live cell beyond noise worse than the best.
        ``values[c]``: cell c's figures so far (its finished processes)."""
        level = self.level(round_)
        if not self.adaptive or level <= 0 or len(self.live) < 2:
            return []
        self.looks.append(round_)
        best = lowest(self.live, values)
        if best is None:
            return []
        dropped = []
        for c in self.live:
            if c == best or not values[c]:
                continue
            cmp = compare(values[best], values[c], level)
            if cmp is not None and cmp.beyond_noise and cmp.b_higher:
                dropped.append(Drop(c, round_, best, cmp))
        gone = {d.cell for d in dropped}
        self.live = [c for c in self.live if c not in gone]
        self.drops += dropped
        return dropped

    def to_json(self) -> dict[str, Any]:
        return {
            "adaptive": self.adaptive,
            "alpha": self.alpha,
            "first_look": first_decisive_round(self.shares),
            "looks": list(self.looks),
            "live": list(self.live),
            "dropped": [d.to_json() for d in self.drops],
            "decided": self.decided,
        }
