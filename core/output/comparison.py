"""Runs compared, as every view shows them: each statistic of two sides (one process each, or
several) with its ratio and the verdict the data carry (``verdicts``), and the
``warmscope-comparison`` document that ``compare`` exports, the report and the TUI read.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from warmscope.core.data import stats
from warmscope.core.data.intervals import WITHIN_NOISE, Interval, median_interval, upper_median
from warmscope.core.data.run import RunData
from warmscope.core.output import verdicts
from warmscope.core.output.settings_diff import (
    same_settings,
    settings_line,
    settings_table,
)

METRIC_NAMES = {
    "first_ms": "first iteration",
    "steady_from": "steady from",
    "warmup_excess_ms": "warm-up excess",
    "setup_ms": "set-up",
    "p50_ms": "p50",
    "p90_ms": "p90",
    "p99_ms": "p99",
    "mean_ms": "mean",
    "cv": "CV",
    "throughput_per_s": "throughput",
}


def ratio_text(ratio: float | None, verdict: str) -> str:
    """A ratio and its verdict: ``0.26× better``, ``1.00×``; empty where there is no ratio."""
    if ratio is None:
        return ""
    return f"{ratio:.2f}×" + (f" {verdict}" if verdict else "")


@dataclass(frozen=True)
class MetricRow:
    """One compared statistic: ``metric`` is its key (``p50_ms``), ``name`` how it reads."""

    metric: str
    a: float | None
    b: float | None
    ratio: float | None
    within_noise: bool = False
    """The difference is smaller than the runs' own spread: not a difference to call."""
    untold: str = ""
    """Why no verdict can be given (``verdicts.UNTOLD``: one process each, too few
    iterations or processes); empty where the data carry one."""
    a_iv: Interval | None = None
    b_iv: Interval | None = None
    """Each side's median and interval across its processes, where it has several."""

    @property
    def name(self) -> str:
        return METRIC_NAMES.get(self.metric, self.metric)

    @property
    def ratio_text(self) -> str:
        """B against A, in words that read without colour: ``0.26× better``, ``1.80× worse``,
        ``1.01× within noise``, ``4.67× 1 process each``, ``1.00×``; empty where there is
        no ratio."""
        return ratio_text(self.ratio, self.verdict)

    @property
    def better(self) -> bool | None:
        """Whether B is better than A here; ``None`` where there is no difference to call
        (within noise, untold, within ``SAME_WITHIN``, or a metric with no better side)."""
        r = self.ratio
        if r is None or self.within_noise or self.untold or self.metric in NO_BETTER_SIDE:
            return None
        if abs(r - 1.0) <= SAME_WITHIN:
            return None
        return r > 1 if self.metric in HIGHER_IS_BETTER else r < 1

    @property
    def verdict(self) -> str:
        """The difference in a word, so that it reads without colour: ``better``, ``worse``,
        ``within noise``, why none can be told, or nothing."""
        if self.within_noise:
            return "within noise"
        if self.untold:
            return self.untold
        return {True: "better", False: "worse", None: ""}[self.better]


HIGHER_IS_BETTER = ("throughput_per_s",)
"""Metrics where a larger value is better; for the others (CV aside) a smaller one is."""
NO_BETTER_SIDE = ("cv",)
"""A change of spread is neither better nor worse to call from one run each."""
SAME_WITHIN = 0.05
"""A ratio this close to 1 is no difference to call, noise or not."""

STEADY_METRICS = ("p50_ms", "p90_ms", "p99_ms", "mean_ms", "throughput_per_s")
"""Metrics of the steady state, whose noise each run measures itself (its CV)."""


def _apart(ratio: float) -> float:
    """How far apart two values are, the same both ways: 2.0 and 0.5 are both 1.0 apart."""
    return max(ratio, 1 / ratio) - 1.0


def setup_ms(data: RunData) -> float | None:
    """The time before the first iteration (every phase: import, load, script, …)."""
    return math.fsum(data.phases.values()) if data.phases else None


def _with_setup(
    rows: list[tuple[str, float | None, float | None, float | None]],
    setup: tuple[float | None, float | None] | None,
) -> list[tuple[str, float | None, float | None, float | None]]:
    if setup is None:
        return rows
    va, vb = setup
    ratio = vb / va if va and vb is not None else None
    at = next((n + 1 for n, r in enumerate(rows) if r[0] == "warmup_excess_ms"), len(rows))
    return [*rows[:at], ("setup_ms", va, vb, ratio), *rows[at:]]


def metric_rows(
    a: stats.Summary,
    b: stats.Summary,
    setup: tuple[float | None, float | None] | None = None,
) -> list[MetricRow]:
    """Each compared metric of one process each (``verdicts``' module docstring). First
    iteration, warm-up and set-up (``setup``: each run's, when known) are one value a
    process: untold. A steady-state difference smaller than the larger of the two runs' CVs
    is within noise; a tail percentile without ``TAIL_BEYOND`` iterations beyond it in each
    run is untold."""
    noise = max(a.cv or 0.0, b.cv or 0.0)
    counts = (a.steady_count, b.steady_count)
    return [
        _one_process_row(m, va, vb, r, noise, counts)
        for m, va, vb, r in _with_setup(verdicts.compare(a, b).rows, setup)
    ]


def _one_process_row(
    m: str,
    va: float | None,
    vb: float | None,
    r: float | None,
    noise: float,
    steady_counts: tuple[int, int],
) -> MetricRow:
    untold = ""
    within = False
    if r is None:
        pass
    elif m in verdicts.ONE_PROCESS_METRICS:
        untold = verdicts.ONE_EACH
    elif not all(verdicts.tail_known(m, n) for n in steady_counts):
        untold = verdicts.FEW_ITERATIONS
    elif m in STEADY_METRICS and r > 0 and _apart(r) <= noise:
        within = True
    return MetricRow(m, va, vb, r, within_noise=within, untold=untold)


def _value(metric: str, data: RunData, summary: stats.Summary) -> float | None:
    return setup_ms(data) if metric == "setup_ms" else getattr(summary, metric)


def _middle(metric: str, iv: Interval | None) -> float | None:
    """A side's median; for an iteration number, the upper median, one of its values."""
    if iv is None:
        return None
    return upper_median(iv.values) if metric in WHOLE_METRICS else iv.median


WHOLE_METRICS = ("steady_from",)
"""Metrics that count iterations: their medians are iteration numbers."""


def side_rows(
    a: Sequence[RunData],
    b: Sequence[RunData],
    sa: Sequence[stats.Summary],
    sb: Sequence[stats.Summary],
) -> list[MetricRow]:
    """Each compared metric of two sides, each one process or several. One process each:
    ``metric_rows``. Several each: medians, and verdicts from their intervals
    (``verdicts.interval_verdict``). One against several: one-process metrics are untold,
    steady ones keep the within-run rule on the medians. The same settings on both sides:
    nothing is better or worse (``verdicts.SAME_SETTINGS``)."""
    rows = _side_rows(a, b, sa, sb)
    if not same_settings(a[0], b[0]):
        return rows
    # The same settings twice: whatever differs is process-to-process noise, not an effect.
    return [replace(r, untold=verdicts.SAME_SETTINGS) if r.better is not None else r for r in rows]


def _side_rows(
    a: Sequence[RunData],
    b: Sequence[RunData],
    sa: Sequence[stats.Summary],
    sb: Sequence[stats.Summary],
) -> list[MetricRow]:
    if len(a) == 1 and len(b) == 1:
        return metric_rows(sa[0], sb[0], (setup_ms(a[0]), setup_ms(b[0])))
    names = [m for m, *_ in _with_setup(verdicts.compare(sa[0], sb[0]).rows, (None, None))]
    noise = max(s.cv or 0.0 for s in [*sa, *sb])
    counts = (min(s.steady_count for s in sa), min(s.steady_count for s in sb))
    rows = []
    for m in names:
        ia = median_interval([_value(m, d, s) for d, s in zip(a, sa, strict=True)])
        ib = median_interval([_value(m, d, s) for d, s in zip(b, sb, strict=True)])
        va, vb = (_middle(m, iv) for iv in (ia, ib))
        r = vb / va if va and vb is not None else None
        if len(a) == 1 or len(b) == 1:
            row = _one_process_row(m, va, vb, r, noise, counts)
            if row.untold == verdicts.ONE_EACH:
                row = replace(row, untold=verdicts.ONE_SIDE)
        else:
            row = MetricRow(m, va, vb, r)
            if r is None or ia is None or ib is None or m in NO_BETTER_SIDE:
                pass
            elif not all(verdicts.tail_known(m, n) for n in counts):
                row = replace(row, untold=verdicts.FEW_ITERATIONS)
            else:
                told = verdicts.interval_verdict(ia, ib)
                if told == WITHIN_NOISE:
                    row = replace(row, within_noise=True)
                elif told in verdicts.UNTOLD:
                    row = replace(row, untold=told)
        rows.append(replace(row, a_iv=ia if len(a) > 1 else None, b_iv=ib if len(b) > 1 else None))
    return rows


RunOrSide: TypeAlias = RunData | Sequence[RunData]
"""One run, or the several processes of one side (repeats of the same settings)."""


def _sides(runs: Sequence[RunOrSide]) -> list[list[RunData]]:
    return [[r] if isinstance(r, RunData) else list(r) for r in runs]


def _status_text(side: list[RunData]) -> str:
    if len(side) == 1:
        return side[0].status
    counts = {s: sum(r.status == s for r in side) for s in dict.fromkeys(r.status for r in side)}
    return ", ".join(f"{s} ×{n}" for s, n in counts.items())


def comparison_notes(rows: Sequence[MetricRow], repeated: bool) -> list[str]:
    """What the untold verdicts mean and how to get them, once each."""
    said = {r.untold for r in rows}
    notes = []
    if repeated:
        notes.append(
            "values are medians across each side's processes with their intervals (order "
            "statistics); a difference is called where the intervals do not overlap and "
            f"identical settings would do that at most {verdicts.LEVEL:.0%} of the time"
        )
    if verdicts.SAME_SETTINGS in said:
        notes.append(
            "same settings: the runs compared ran the same settings, so what differs between "
            "them is process-to-process noise (or the context above), not an effect: its size "
            "is what noise looks like here"
        )
    if verdicts.ONE_EACH in said:
        notes.append(
            "1 process each: a first iteration, warm-up and set-up vary from process to "
            "process, and one process each cannot tell them apart: " + verdicts.MORE_PROCESSES
        )
    if verdicts.ONE_SIDE in said:
        notes.append(
            "1 process a side: a side with one process gives its first iteration, warm-up and "
            "set-up no interval: repeat it too"
        )
    if verdicts.FEW_PROCESSES in said:
        notes.append(
            "too few processes: with so few, identical settings give intervals that miss each "
            f"other more than {verdicts.LEVEL:.0%} of the time; {verdicts.fewest_each()} "
            "processes a side suffice"
        )
    if verdicts.FEW_ITERATIONS in said:
        notes.append(
            f"too few iterations: a tail percentile needs {verdicts.TAIL_BEYOND} steady "
            "iterations beyond it in each run (p90: 100, p99: 1,000): run longer (--iters)"
        )
    return notes


def comparison(
    runs: Sequence[RunOrSide],
    names: list[str],
    summaries: Sequence[stats.Summary | Sequence[stats.Summary]] | None = None,
) -> dict[str, Any]:
    """Runs side by side, each against the first (the baseline): the ``warmscope-comparison``
    document that compare exports (JSON, and Markdown from it). Each entry of ``runs`` is one
    run or a side of several processes with the same settings (``side_rows``).
    ``summaries``: the runs' own (in the same shape) when the caller has them."""
    sides = _sides(runs)
    if summaries is None:
        sums = [[r.summary() for r in side] for side in sides]
    else:
        sums = [[s] if isinstance(s, stats.Summary) else list(s) for s in summaries]
    columns = [side_rows(sides[0], side, sums[0], s) for side, s in zip(sides, sums, strict=True)]
    repeated = any(len(side) > 1 for side in sides)
    metrics = []
    for n, row in enumerate(columns[0]):
        cells = [col[n] for col in columns]
        metric: dict[str, Any] = {
            "metric": row.metric,
            "name": row.name,
            "values": [row.a] + [c.b for c in cells[1:]],
            "ratios": [None] + [c.ratio for c in cells[1:]],
            "verdicts": [""] + [c.verdict for c in cells[1:]],
        }
        if repeated:
            ivs = [row.a_iv] + [c.b_iv for c in cells[1:]]
            metric["intervals"] = [iv.to_json() if iv else None for iv in ivs]
        metrics.append(metric)
    firsts = [side[0] for side in sides]
    return {
        "format": "warmscope-comparison",
        "version": 1,
        "baseline": 0,
        "runs": [
            {
                "name": name,
                "target": side[0].settings.target,
                "mode": side[0].mode,
                "settings": settings_line(side[0].settings),
                "status": _status_text(side),
                "iterations": int(statistics.median(r.count for r in side)),
                "processes": len(side),
                "records": [r.record_path for r in side],
                "record": side[0].record_path,
            }
            for side, name in zip(sides, names, strict=True)
        ],
        "metrics": metrics,
        "settings": [{"name": k, "values": v} for k, v in settings_table(firsts)],
        "context": [row.to_json() for row in verdicts.context_table(sides)],
        "notes": comparison_notes([c for col in columns[1:] for c in col], repeated),
    }
