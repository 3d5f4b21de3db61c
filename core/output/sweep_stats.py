"""The statistics a sweep's views share: a figure across processes as a median with its
interval, the objectives and their names, the level of a pairwise test, the processes a sweep
needs to tell, and a difference as words (the sweep's digest, its host factor, its tables)."""

from __future__ import annotations

from typing import Any

from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.data import racing
from warmscope.core.data.intervals import Interval, median_interval

OBJECTIVES = {
    "first": ("first_ms", "first iteration"),
    "warmup": ("warmup_excess_ms", "warm-up excess"),
    "steady": ("steady_p50_ms", "steady p50"),
    "total": ("total_ms", "time to serve {k} calls"),
}
NOUNS = {
    "first": "first call",
    "warmup": "warm-up excess",
    "steady": "steady p50",
    "total": "time to serve {k} calls",
}


def stat_json(values: list[Any]) -> dict[str, Any]:
    """``{"median", "lo", "hi", "values"}`` (and ``coverage``); ``values`` keeps every process's
    value in order, ``None`` where a process has none (never steady, too short)."""
    iv = median_interval(values)
    if iv is None:
        return {"median": None, "lo": None, "hi": None, "values": values, "coverage": None}
    out = iv.to_json()
    out["values"] = [None if v is None else round(float(v), 6) for v in values]
    return out


def interval_of(stat: dict[str, Any] | None) -> Interval | None:
    """A document's ``{"median", "lo", "hi", …}`` as an ``Interval`` (``None`` if empty)."""
    if not isinstance(stat, dict) or stat.get("median") is None:
        return None
    values = tuple(v for v in stat.get("values", []) if v is not None)
    return Interval(
        float(stat["median"]),
        float(stat["lo"]),
        float(stat["hi"]),
        values,
        float(stat.get("coverage") or 0.0),
    )


def objective_metric(objective: str) -> str:
    return OBJECTIVES[objective][0]


def objective_name(objective: str, k: int | None) -> str:
    return OBJECTIVES[objective][1].format(k=k)


def objective_noun(objective: str, k: int | None) -> str:
    return NOUNS[objective].format(k=k)


def figures(stat: dict[str, Any] | None) -> list[float]:
    """A document statistic's values (``None`` ones left out)."""
    if not isinstance(stat, dict):
        return []
    return [float(v) for v in stat.get("values", []) if v is not None]


def pair_level(cells: int) -> float:
    """One look's share of the error budget for each pair of ``cells`` (a fixed sweep)."""
    return racing.spending(cells, 1, adaptive=False)[1]


def fmt_ratio(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}" if x >= 1 else f"{x:.2f}"


def fmt_coverage(cov: float) -> str:
    """``98.4%``; never 100% short of certainty."""
    shown = round(cov * 100, 1)
    return f"{min(shown, 99.9) if cov < 1 else shown:.1f}%"


def ratio_text(cmp: dict[str, Any] | None) -> str:
    """``5.3×, 98.4%: 4.1–6.8×`` (a shift: ``12.3 ms, 95.2%: 4.10–20.5 ms``)."""
    if not isinstance(cmp, dict) or cmp.get("estimate") is None:
        return "-"
    est, lo, hi = (float(cmp[k]) for k in ("estimate", "lo", "hi"))
    cov = fmt_coverage(float(cmp.get("coverage") or 0.0))
    if cmp.get("ratio"):
        return f"{fmt_ratio(est)}×, {cov}: {fmt_ratio(lo)}–{fmt_ratio(hi)}×"
    return f"{fmt_ms(est)}, {cov}: {fmt_ms(lo)} to {fmt_ms(hi)}"


def size_text(cmp: dict[str, Any], word: str) -> str:
    """``4.6× lower (98.4%: 4.2–4.9×)``: a beyond-noise difference in plain words."""
    est, lo, hi = (float(cmp[k]) for k in ("estimate", "lo", "hi"))
    cov = fmt_coverage(float(cmp.get("coverage") or 0.0))
    if cmp.get("ratio"):
        return f"{fmt_ratio(est)}× {word} ({cov}: {fmt_ratio(lo)}–{fmt_ratio(hi)}×)"
    return f"{fmt_ms(abs(est))} {word} ({cov}: {fmt_ms(lo)} to {fmt_ms(hi)})"


def needed_processes(cells: int, level: float | None = None) -> int | None:
    """The fewest processes per cell that could tell two of ``cells`` apart at ``level``
    (by default a fixed sweep's share per pair)."""
    return racing.fewest_each(pair_level(cells) if level is None else level)


CANNOT_TELL = "cannot tell"
"""A comparison whose processes could not reach its level: not "within noise"."""


def untold_text(cmp: dict[str, Any]) -> str:
    """``3 processes cannot tell; 4 can`` (``3 against 5 processes …; 4 each can``): a
    comparison that these processes could not have called at its level, whatever the data."""
    n, m = (int(x) for x in cmp.get("n", [0, 0]))
    need = racing.fewest_each(float(cmp.get("level") or 0.0))
    few = f"{n}" if n == m else f"{n} against {m}"
    process = "process" if max(n, m) == 1 else "processes"
    can = "" if need is None else f"; {need}{'' if n == m else ' each'} can"
    return f"{few} {process} cannot tell{can}"
