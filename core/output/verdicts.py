"""When a comparison may call a difference, and what else differs between the runs compared.

Every rule here answers one question: would runs of the *same* settings (an A/A test) be
called different? Whatever a rule calls must be rare under A/A, at most ``LEVEL`` of the time.

**One process a side.** A first iteration, a warm-up and a set-up are one value a process, and
they vary from process to process more than anything a single process shows (six identical
GPT-2 runs: first passes from 6.1 to 45.7 ms). One process each cannot tell them apart: no
verdict, only how to get one (``--repeat N``, ``warmscope sweep``). Steady figures have many
values a process: they keep the within-run rule (``comparison.metric_rows``), and a tail
percentile is called only where each run has ``TAIL_BEYOND`` iterations beyond it (p99 of 30
iterations is the slowest one: chance, not a figure).

**Several processes a side.** Each side's per-process values give a median with its
order-statistic interval (``intervals.median_interval``). A difference is called where the
intervals do not overlap *and* that could happen by chance under A/A at most ``LEVEL`` of the
time. The chance is exact under exchangeability (``apart_chance``): with 3 processes each,
two [min, max] ranges miss each other 10% of the time for identical settings, so 3 against
3 is not enough; 4 against 4 (2.9%) is.

**The same settings on both sides** (an A/A test by design): nothing is better or worse,
whatever the figures. A steady figure moves from process to process too (eight identical
processes of ``sample:trivial``: steady p50 from 10.7 to 23.4 µs, each with a CV near 6%),
which the within-run rule cannot see; where the settings are the same, any difference is that
noise, and the comparison says so (``SAME_SETTINGS``).

**Context.** What changes what is measured without being a setting: the compile cache's state,
load from other processes, the threads torch used, the torch version, the host. A comparison
shows the ones that differ beside its figures (``context_table``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from warmscope.core.data import intervals, stats
from warmscope.core.data.intervals import Interval
from warmscope.core.data.run import RunData

LEVEL = 0.05
"""The most often a rule may call runs of the same settings different."""

ONE_PROCESS_METRICS = ("first_ms", "steady_from", "warmup_excess_ms", "setup_ms")
"""One value a process: only repeated processes can tell them apart."""
TAIL_QUANTILES = {"p90_ms": 0.90, "p99_ms": 0.99}
TAIL_BEYOND = 10
"""Iterations beyond a tail percentile a run needs before that percentile is a figure."""

ONE_EACH = "1 process each"
ONE_SIDE = "1 process a side"
FEW_ITERATIONS = "too few iterations"
FEW_PROCESSES = "too few processes"
SAME_SETTINGS = "same settings"
UNTOLD = (ONE_EACH, ONE_SIDE, FEW_ITERATIONS, FEW_PROCESSES, SAME_SETTINGS)
"""What a comparison says in place of a verdict it cannot give."""

MORE_PROCESSES = (
    "run each setting with --repeat 5 (or `warmscope sweep TARGET --preset A,B`) and compare "
    "the folders: repeated processes give intervals"
)

LOAD_APART = 0.5
"""Load from other processes, in cores, by which two runs must differ to be shown."""


def tail_known(metric: str, steady_count: int) -> bool:
    """Whether a run's ``metric`` is a figure: a tail percentile needs ``TAIL_BEYOND``
    steady iterations beyond it; every other metric is one."""
    q = TAIL_QUANTILES.get(metric)
    return q is None or steady_count * (1 - q) >= TAIL_BEYOND


def _hypergeom_at_least(total: int, marked: int, drawn: int, least: int) -> float:
    """P(H ≥ least), H the marked items among ``drawn`` of ``total`` (``marked`` marked)."""
    if least <= 0:
        return 1.0
    top = min(marked, drawn)
    ways = sum(
        math.comb(marked, h) * math.comb(total - marked, drawn - h) for h in range(least, top + 1)
    )
    return ways / math.comb(total, drawn)


def apart_chance(m: int, j: int, n: int, k: int) -> float:
    """The chance that [x(j), x(m+1−j)] of m values and [y(k), y(n+1−k)] of n values do not
    overlap when all m + n values come from one distribution (exact: every assignment of the
    pooled ranks to the two sides is equally likely).

    x's upper bound falls below y's lower bound when at least m+1−j of the smallest
    (m+1−j) + (k−1) pooled values are x's; the other way round likewise.
    """
    below = _hypergeom_at_least(m + n, m, (m + 1 - j) + (k - 1), m + 1 - j)
    above = _hypergeom_at_least(m + n, n, (n + 1 - k) + (j - 1), n + 1 - k)
    return min(1.0, below + above)


def interval_verdict(a: Interval, b: Interval) -> str:
    """``lower``/``higher`` (b against a) beyond noise, ``within noise``, or
    ``FEW_PROCESSES`` where so few processes would miss each other by chance alone too often:
    they cannot tell, whether their intervals overlap or not (overlapping, that is not "within
    noise": no data from these processes could have been called)."""
    m, n = len(a.values), len(b.values)
    if m < 2 or n < 2:
        return intervals.WITHIN_NOISE if a.overlaps(b) else ONE_SIDE
    j, _ = intervals.median_ranks(m)
    k, _ = intervals.median_ranks(n)
    if apart_chance(m, j, n, k) > LEVEL:
        return FEW_PROCESSES
    if a.overlaps(b):
        return intervals.WITHIN_NOISE
    return intervals.HIGHER if b.lo > a.hi else intervals.LOWER


def fewest_each() -> int:
    """The fewest processes each side needs before two intervals that miss each other can be
    called a difference."""
    n = 2
    while apart_chance(n, intervals.median_ranks(n)[0], n, intervals.median_ranks(n)[0]) > LEVEL:
        n += 1
    return n


# -- context ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextRow:
    """One fact of the runs' context that differs between the sides: a value a side."""

    name: str
    values: list[str]
    why: str
    """Why it matters, in a few words."""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "values": self.values, "why": self.why}


def cache_text(data: RunData) -> str:
    """``cold (empty)``, ``warm (had entries)``, ``user (empty)``; ``-`` for no compile run."""
    info = data.env.get("compile_cache")
    if not isinstance(info, dict):
        return "-"
    state = "had entries" if info.get("had_entries") else "empty"
    return f"{info.get('mode', '?')} ({state})"


def other_load(data: RunData) -> float | None:
    """Cores busy with other processes while the run ran (the median of the samples): the
    whole machine's CPU use less the run's own."""
    cores = data.env.get("cpu_logical")
    if not isinstance(cores, int) or cores < 1:
        return None
    busy = [
        max(0.0, float(s["sys_cpu"]) / 100 * cores - float(s["cpu"]) / 100)
        for s in data.samples
        if isinstance(s, dict)
        and isinstance(s.get("sys_cpu"), (int, float))
        and isinstance(s.get("cpu"), (int, float))
    ]
    return statistics.median(busy) if busy else None


def _threads(data: RunData) -> str:
    intra, inter = data.env.get("intra_op_threads"), data.env.get("inter_op_threads")
    if intra is None and inter is None:
        return "-"
    return f"{intra if intra is not None else '?'} intra-op, {inter if inter is not None else '?'} inter-op"


def _host(data: RunData) -> str:
    name = data.env.get("hostname")
    cpu = data.env.get("cpu_model")
    if not name and not cpu:
        return "-"
    return f"{name or '?'}" + (f" ({cpu})" if cpu else "")


TEXT_FACTS = (
    ("compile cache", cache_text, "a warm cache skips compiling"),
    ("threads", _threads, "threads change every figure"),
    ("torch", lambda d: str(d.env.get("torch") or "-"), "another torch, another program"),
    ("host", _host, "another machine"),
)


def _side_text(values: Sequence[str]) -> str:
    seen = list(dict.fromkeys(values))
    return ", ".join(seen)


def context_table(sides: Sequence[Sequence[RunData]]) -> list[ContextRow]:
    """The context facts that differ between the sides (each side one run or several)."""
    rows = []
    for name, fact, why in TEXT_FACTS:
        texts = [_side_text([fact(r) for r in side]) for side in sides]
        if len(set(texts)) > 1:
            rows.append(ContextRow(name, texts, why))
    loads = [[x for x in (other_load(r) for r in side) if x is not None] for side in sides]
    medians = [statistics.median(x) if x else None for x in loads]
    known = [m for m in medians if m is not None]
    if len(known) > 1 and max(known) - min(known) >= LOAD_APART:
        rows.append(
            ContextRow(
                "load elsewhere",
                ["-" if m is None else f"{m:.1f} cores" for m in medians],
                "other processes took CPU time",
            )
        )
    return rows


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


def compare(a: stats.Summary, b: stats.Summary) -> Comparison:
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
