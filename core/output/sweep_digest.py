"""The digest of a sweep: statistics across processes, the ranking and the one-line answer.

Computed once, into the sweep document (``format: warmscope-sweep``); the CLI, ``compare``,
``report`` and ``open`` lay out that document and never compute a figure of their own.

Every cell statistic is the median over the cell's finished processes (status ``ok``) with a
distribution-free 95% interval (``intervals``: order statistics, not a bootstrap) and all the
values, in the order of ``runs``. A difference is called only where intervals do not overlap.

The break-even compares a cell that starts sooner with one that runs faster. A process's
*start* is what its settings add before steady state: the setup phases after ``import torch``
(load, script, freeze, compile…) plus its warm-up excess. ``import torch`` is left out: no
knob changes it, and its noise (tens of ms) would hide the rest. Serving n calls then costs
about start + n × steady p50, so the faster-running cell pays off after
(start_B − start_A) / (p50_A − p50_B) calls.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from warmscope.core.child import outcome
from warmscope.core.data import intervals
from warmscope.core.data.intervals import Interval, median_interval
from warmscope.core.data.run import RunData
from warmscope.core.output import units
from warmscope.core.output.units import ms as fmt_ms

if TYPE_CHECKING:
    from warmscope.core.run.sweep import Sweep

CELL_METRICS = (
    "first_ms",
    "warmup_excess_ms",
    "steady_from",
    "steady_p50_ms",
    "setup_ms",
    "start_ms",
)
OBJECTIVES = {
    "first": ("first_ms", "first iteration"),
    "warmup": ("warmup_excess_ms", "warm-up excess"),
    "steady": ("steady_p50_ms", "steady p50"),
    "total": ("total_ms", "time to serve {k} calls"),
}
IMPORT_PHASE = "import torch"


def process_facts(data: RunData, k: int | None = None) -> dict[str, Any]:
    """One process's figures, as a sweep cell gathers them."""
    s = data.summary()
    exclude, _ = data.stats_inputs()
    phases = dict(data.phases)
    setup = math.fsum(phases.values()) if phases else None
    after_import = math.fsum(v for name, v in phases.items() if name != IMPORT_PHASE)
    facts: dict[str, Any] = {
        "record": data.record_path,
        "status": data.status,
        "detail": data.status_detail,
        "iterations": data.count,
        "first_ms": s.first_ms,
        "warmup_excess_ms": s.warmup_excess_ms if s.count else None,
        "steady_from": s.steady_from,
        "steady_p50_ms": s.p50_ms,
        "setup_ms": setup,
        "start_ms": after_import + s.warmup_excess_ms if s.count else None,
        "shape": intervals.shape(list(data.ms), s.steady_from),
        "warnings": [w.text for w in intervals.run_warnings(data.ms, s.steady_from, exclude)],
    }
    if k is not None:
        facts["total_ms"] = (setup or 0.0) + math.fsum(data.ms[:k]) if data.count >= k else None
    for key, value in facts.items():
        if isinstance(value, float):
            facts[key] = round(value, 6)
    if "compile_cache" in data.env:
        facts["compile_cache"] = data.env["compile_cache"]
    return facts


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


def cell_json(
    index: int, label: str, settings: dict[str, Any], facts: list[dict[str, Any]], k: int | None
) -> dict[str, Any]:
    ok = [f for f in facts if f["status"] == outcome.OK]
    cell: dict[str, Any] = {
        "index": index,
        "label": label,
        "settings": settings,
        "runs": [f["record"] for f in ok],
        "processes": facts,
    }
    for metric in CELL_METRICS:
        cell[metric] = stat_json([f[metric] for f in ok])
    if k is not None:
        cell["total_ms"] = stat_json([f.get("total_ms") for f in ok])
        cell["total_calls"] = k
    cell["shapes"] = intervals.shape_counts([f["shape"] for f in ok]) if ok else "-"
    return cell


def by_iteration(runs: list[RunData], limit: int) -> list[dict[str, Any]]:
    """Iteration i's latency across processes, for the first ``limit`` iterations."""
    longest = max((r.count for r in runs), default=0)
    out = []
    for i in range(min(limit, longest)):
        iv = median_interval([r.ms[i] for r in runs if r.count > i])
        assert iv is not None
        out.append(
            {
                "median": round(iv.median, 6),
                "lo": round(iv.lo, 6),
                "hi": round(iv.hi, 6),
                "n": len(iv.values),
            }
        )
    return out


def phase_stats(runs: list[RunData]) -> dict[str, dict[str, Any]]:
    names: list[str] = []
    for r in runs:
        names += [n for n in r.phases if n not in names]
    return {n: stat_json([r.phases.get(n) for r in runs]) for n in names}


def sweep_document(sweep: Sweep) -> dict[str, Any]:
    """The sweep as it stands: every cell's statistics, the ranking, the answer."""
    from warmscope.core.run.sweep import FORMAT, MAX_BY_ITERATION, VERSION

    cells = []
    for c, cell in enumerate(sweep.cells):
        mine = [p.data for p in sweep.processes if p.cell == c]
        facts = [process_facts(d, sweep.k) for d in mine]
        for f, p in zip(facts, (p for p in sweep.processes if p.cell == c), strict=True):
            f["repeat"] = p.repeat
        one = cell_json(c, cell.label, cell.settings.to_json(), facts, sweep.k)
        ok = [d for d in mine if d.status == outcome.OK]
        one["phases"] = phase_stats(ok)
        one["by_iteration"] = by_iteration(ok, min(cell.settings.iters, MAX_BY_ITERATION))
        cells.append(one)
    done = len(sweep.processes)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "target": sweep.target,
        "command": sweep.command,
        "started": sweep.started,
        "repeat": sweep.repeat,
        "iters": sweep.cells[0].settings.iters if sweep.cells else None,
        "rank_by": sweep.rank_by,
        "interval": intervals.METHOD,
        "stopped": sweep.stopped,
        "planned": len(sweep.plan),
        "finished": done,
        "wall_s": round(sweep.wall_s, 3),
        "warming_s": round(sweep.warming_s, 3),
        "per_process_s": round((sweep.wall_s - sweep.warming_s) / done, 3) if done else None,
        "schedule": [[p.cell, p.repeat] for p in sweep.processes],
        "folder": str(sweep.folder) if sweep.folder else None,
    }
    ranking = rank(cells, sweep.objective)
    doc["ranking"] = ranking
    doc["answer"] = answer(doc, cells, ranking, sweep.objective, sweep.k)
    doc["warnings"] = sweep_warnings(doc, cells)
    doc["cells"] = cells
    return doc


def objective_metric(objective: str) -> str:
    return OBJECTIVES[objective][0]


def objective_name(objective: str, k: int | None) -> str:
    return OBJECTIVES[objective][1].format(k=k)


def rank(cells: list[dict[str, Any]], objective: str) -> list[dict[str, Any]]:
    """Cells by the objective's median, lowest first; each against the best: ``best``,
    ``within noise`` (intervals overlap) or ``worse`` (they do not)."""
    metric = objective_metric(objective)
    measured = [(c, interval_of(c.get(metric))) for c in cells]
    order = sorted(
        measured, key=lambda ci: (ci[1] is None, ci[1].median if ci[1] else 0.0, ci[0]["index"])
    )
    best = order[0][1] if order else None
    out = []
    for n, (c, iv) in enumerate(order, 1):
        entry: dict[str, Any] = {"rank": n, "cell": c["index"], "label": c["label"]}
        if iv is None:
            entry.update(median=None, lo=None, hi=None, vs_best="not measured")
        else:
            assert best is not None
            entry.update(median=iv.median, lo=iv.lo, hi=iv.hi)
            if n == 1:
                entry["vs_best"] = "best"
            else:
                entry["vs_best"] = (
                    intervals.WITHIN_NOISE
                    if intervals.verdict(iv, best) == intervals.WITHIN_NOISE
                    else "worse"
                )
                entry["delta"] = round(iv.median - best.median, 6)
        out.append(entry)
    return out


def answer(
    doc: dict[str, Any],
    cells: list[dict[str, Any]],
    ranking: list[dict[str, Any]],
    objective: str,
    k: int | None,
) -> str:
    """The sweep in one line: what is best by the objective, what is within noise, the
    break-even where one cell starts sooner and another runs faster."""
    short = short_of_plan(doc)
    prefix = f"{short}; " if short else ""
    measured = [r for r in ranking if r["median"] is not None]
    if not measured:
        return prefix + "no process finished: nothing to compare"
    name = objective_name(objective, k)
    if len(cells) == 1:
        c = cells[0]
        n = len(c["runs"])
        return prefix + (
            f"{c['label']} over {n} process{'es' if n != 1 else ''}: first {iv_text(c['first_ms'])}, "
            f"warm-up excess {iv_text(c['warmup_excess_ms'])}, steady p50 {iv_text(c['steady_p50_ms'])}; "
            f"{c['shapes']}"
        )
    best = measured[0]
    parts = [f"by {name}, {best['label']} is best ({fmt_ms(best['median'])})"]
    tied = [r["label"] for r in measured[1:] if r["vs_best"] == intervals.WITHIN_NOISE]
    worse = [r for r in measured[1:] if r["vs_best"] == "worse"]
    if tied:
        parts.append(f"{', '.join(tied)} within noise of it")
    if worse:
        parts.append(
            ", ".join(f"{r['label']} {fmt_ms(r['delta'])} {_more(objective)}" for r in worse)
        )
    unmeasured = [r["label"] for r in ranking if r["median"] is None]
    if unmeasured:
        parts.append(f"{', '.join(unmeasured)} not measured")
    text = prefix + "; ".join(parts)
    tradeoff = break_even(cells)
    return text + (f". {tradeoff}" if tradeoff else "")


def _more(objective: str) -> str:
    return "more" if objective in ("warmup", "total") else "slower"


def break_even(cells: list[dict[str, Any]]) -> str:
    """``A starts 34 ms sooner; B's steady p50 is 0.2 ms lower; B pays off after ~170 calls``,
    where the cell that starts soonest is not the one that runs fastest and both differences
    are beyond noise; a plainer sentence otherwise; empty with fewer than two measured cells."""
    measured: list[tuple[dict[str, Any], Interval, Interval]] = []
    for c in cells:
        start, p50 = interval_of(c["start_ms"]), interval_of(c["steady_p50_ms"])
        if start is not None and p50 is not None:
            measured.append((c, start, p50))
    if len(measured) < 2:
        return ""
    a, a_start, a_p50 = min(measured, key=lambda m: m[1].median)
    b, b_start, b_p50 = min(measured, key=lambda m: m[2].median)
    if a is b:
        others = [m for m in measured if m[0] is not a]
        clear = all(
            intervals.verdict(a_start, s) == intervals.LOWER
            and intervals.verdict(a_p50, p) == intervals.LOWER
            for _, s, p in others
        )
        return f"{a['label']} both starts soonest and runs fastest" + (
            "" if clear else " (some differences within noise)"
        )
    sooner = b_start.median - a_start.median
    lower = a_p50.median - b_p50.median
    start_clear = intervals.verdict(a_start, b_start) == intervals.LOWER
    p50_clear = intervals.verdict(b_p50, a_p50) == intervals.LOWER
    la, lb = a["label"], b["label"]
    if start_clear and p50_clear and lower > 0:
        calls = math.ceil(sooner / lower)
        return (
            f"{la} starts {fmt_ms(sooner)} sooner; {lb}'s steady p50 is {fmt_ms(lower)} lower; "
            f"{lb} pays off after ~{calls:,} calls"
        )
    if p50_clear:
        return (
            f"{lb} runs fastest (steady p50 {fmt_ms(lower)} below {la}'s) and starts within "
            f"noise of the soonest, {la}"
        )
    if start_clear:
        return f"{la} starts {fmt_ms(sooner)} sooner than {lb}; their steady p50s are within noise"
    return f"{la} starts soonest and {lb} runs fastest, both within noise"


def short_of_plan(doc: dict[str, Any]) -> str | None:
    """How many of the planned processes ran, where not all did: stopped, or a document
    written after each process by a sweep that ended (killed) or is still running."""
    finished, planned = doc.get("finished"), doc.get("planned")
    if doc.get("stopped"):
        return f"stopped after {finished} of {planned} processes"
    if isinstance(finished, int) and isinstance(planned, int) and finished < planned:
        return f"{finished} of {planned} planned processes ran (the sweep ended early or runs on)"
    return None


def sweep_warnings(doc: dict[str, Any], cells: list[dict[str, Any]]) -> list[str]:
    out = []
    short = short_of_plan(doc)
    if short:
        out.append(f"{short}: the statistics cover the finished ones")
    for c in cells:
        for p in c["processes"]:
            if p["status"] != outcome.OK:
                out.append(
                    f"{c['label']} repeat {p['repeat']}: {p['status']} ({p['detail']}); left out"
                )
        n = len(c["runs"])
        cov = c["first_ms"].get("coverage")
        if n == 1:
            out.append(
                f"{c['label']}: one process gives no interval: no difference is called "
                "(--repeat 3 or more; 6 reach 95%)"
            )
            break
        if n and cov is not None and cov < intervals.CONFIDENCE:
            out.append(
                f"{c['label']}: {n} process{'es' if n != 1 else ''} give intervals of "
                f"{cov:.1%} coverage, not 95% (6 or more reach 95%)"
            )
            break  # said once: every cell has the same count unless some failed
    return out


# -- text -------------------------------------------------------------------------------------


def iv_text(stat: dict[str, Any] | None, *, unit: bool = True) -> str:
    """``43.1 ms (40.7–60.0)``: the median and its interval, in the median's unit."""
    iv = interval_of(stat)
    if iv is None:
        return "-"
    in_median = units.select_unit(iv.median)
    text = units.in_unit(iv.median, in_median, suffix=unit)
    lo, hi = (units.in_unit(v, in_median, suffix=False) for v in (iv.lo, iv.hi))
    return f"{text} ({lo}–{hi})"


def count_text(stat: dict[str, Any] | None) -> str:
    """A count's median and interval: ``#2 (2–3)``."""
    iv = interval_of(stat)
    if iv is None:
        return "-"
    return f"#{iv.median:g} ({iv.lo:g}–{iv.hi:g})"
