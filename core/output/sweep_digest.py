"""The digest of a sweep: statistics across processes, the ranking and the one-line answer.

Computed once, into the sweep document (``format: warmscope-sweep``); the CLI, ``compare``,
``report`` and ``open`` lay out that document and never compute a figure of their own.

Every cell statistic is the median over the cell's finished processes (status ``ok``) with a
distribution-free interval (``intervals``: order statistics, not a bootstrap; its coverage as
reached, 75% with 3 processes, 95% from 6) and all the values, in the order of ``runs``.

A difference is called only by an exact rank test (``racing``): on the ranking objective with
α = 5% split over the pairs of cells (and, in an adaptive sweep, over its looks); the start and
steady p50 of the break-even each the same way. A best is named only where it is beyond noise
better than every other cell, so a sweep of identical cells names none (but with a chance
below 5%). Each difference is said as a ratio (Hodges–Lehmann) with the interval of the same
test, at the coverage that test reached.

The break-even compares a cell that starts sooner with one that runs faster. A process's
*start* is what its settings add before steady state: the setup phases after ``import torch``
(load, script, freeze, compile…) plus its warm-up excess. ``import torch`` is left out: no
knob changes it, and its noise (tens of ms) would hide the rest. Serving n calls then costs
about start + n × steady p50, so the faster-running cell pays off after
(start_B − start_A) / (p50_A − p50_B) calls.
"""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING, Any

from warmscope.core.base import units
from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.child import outcome
from warmscope.core.data import intervals, racing
from warmscope.core.data.intervals import median_interval
from warmscope.core.data.run import RunData
from warmscope.core.data.sweep_document import FORMAT, MAX_BY_ITERATION, VERSION
from warmscope.core.output.sweep_hosts import host_factor
from warmscope.core.output.sweep_stats import (
    CANNOT_TELL,
    figures,
    fmt_coverage,
    interval_of,
    needed_processes,
    objective_metric,
    objective_name,
    objective_noun,
    pair_level,
    ratio_text,
    size_text,
    stat_json,
    untold_text,
)

if TYPE_CHECKING:
    from warmscope.core.data.sweep_state import SweepState

CELL_METRICS = (
    "first_ms",
    "warmup_excess_ms",
    "steady_from",
    "steady_p50_ms",
    "setup_ms",
    "start_ms",
)
IMPORT_PHASES = ("import torch", "start to main")
"""Loading torch itself: the Python agent's import, the C++ agent's start (libtorch loading)."""


def process_facts(data: RunData, k: int | None = None) -> dict[str, Any]:
    """One process's figures, as a sweep cell gathers them."""
    s = data.summary()
    exclude, _ = data.stats_inputs()
    phases = dict(data.phases)
    setup = math.fsum(phases.values()) if phases else None
    after_import = math.fsum(v for name, v in phases.items() if name not in IMPORT_PHASES)
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


def sweep_document(sweep: SweepState) -> dict[str, Any]:
    """The sweep as it stands: every cell's statistics, the ranking, the answer."""
    cells = []
    for c, cell in enumerate(sweep.cells):
        mine = [p.data for p in sweep.processes if p.cell == c]
        facts = [process_facts(d, sweep.k) for d in mine]
        for f, p in zip(facts, (p for p in sweep.processes if p.cell == c), strict=True):
            f["repeat"] = p.repeat
            if p.node is not None:
                f["node"] = p.node
        one = cell_json(c, cell.label, cell.settings.to_json(), facts, sweep.k)
        ok = [d for d in mine if d.status == outcome.OK]
        one["phases"] = phase_stats(ok)
        one["by_iteration"] = by_iteration(ok, min(cell.settings.iters, MAX_BY_ITERATION))
        cells.append(one)
    done = len(sweep.processes)
    race = sweep.race
    fixed = len(sweep.cells) * sweep.repeat
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
        "method": racing.METHOD,
        "confidence": round(1 - race.alpha, 6),
        "adaptive": sweep.adaptive,
        "cap": sweep.repeat,
        "rounds": sweep.rounds,
        "looks": list(race.looks),
        "first_look": racing.first_decisive_round(race.shares),
        "stopped": sweep.stopped,
        "planned": len(sweep.plan),
        "finished": done,
        "processes_fixed": fixed,
        "processes_saved": fixed - done if sweep.adaptive and not sweep.stopped else 0,
        "wall_s": round(sweep.wall_s, 3),
        "warming_s": round(sweep.warming_s, 3),
        "per_process_s": round((sweep.wall_s - sweep.warming_s) / done, 3) if done else None,
        "schedule": [[p.cell, p.repeat] for p in sweep.processes],
        "folder": str(sweep.folder) if sweep.folder else None,
        "ran_in": sweep.ran_in,
        "executor": getattr(sweep.executor, "name", "local"),
    }
    dropped = {d.cell: d for d in race.drops}
    ranking = rank(
        cells, sweep.objective, level=race.level(sweep.rounds), dropped=dropped, live=race.live
    )
    doc["ranking"] = ranking
    doc["decided"] = is_decided(ranking)
    doc["decided_round"] = (
        (race.drops[-1].round if race.decided else sweep.rounds) if doc["decided"] else None
    )
    doc["dropped"] = [
        {
            **d.to_json(),
            "label": sweep.cells[d.cell].label,
            "against_label": sweep.cells[d.best].label,
            "why": f"{objective_name(sweep.objective, sweep.k)} beyond noise above "
            f"{sweep.cells[d.best].label}'s ({ratio_text(d.comparison.to_json())})",
        }
        for d in race.drops
    ]
    doc["given_up"] = [
        {"cell": c, "label": sweep.cells[c].label, "why": why} for c, why in sweep.given_up.items()
    ]
    doc["answer"] = answer(doc, cells, ranking, sweep.objective, sweep.k)
    hosts = host_factor(sweep)
    if hosts is not None:
        doc["hosts"] = hosts
        doc["answer"] += f". {hosts['answer']}"
    doc["warnings"] = sweep_warnings(doc, cells)
    doc["cells"] = cells
    return doc


def rank(
    cells: list[dict[str, Any]],
    objective: str,
    *,
    level: float | None = None,
    dropped: dict[int, racing.Drop] | None = None,
    live: list[int] | None = None,
) -> list[dict[str, Any]]:
    """Live cells lowest first, then the dropped ones, then the unmeasured. Lowest by the same
    estimate as the ratio shown (``racing.order``: pair by pair, Hodges–Lehmann), so no ratio
    to the best is below 1 where one cell is lower than every other. Each against the best
    (the first): ``worse`` where the exact rank test at ``level`` (by default a fixed sweep's:
    α over the pairs) calls it beyond noise higher, or it was dropped for that; ``within
    noise`` otherwise. ``comparison``: the test and the ratio to the best; the best's
    ``lowest``: whether it is lower than every other pair by pair."""
    metric = objective_metric(objective)
    dropped = dropped or {}
    if level is None:
        level = pair_level(len(cells))
    values = {c["index"]: figures(c.get(metric)) for c in cells}
    by_index = {c["index"]: c for c in cells}
    running = [
        c["index"]
        for c in cells
        if c["index"] not in dropped and (live is None or c["index"] in live)
    ]
    table = [values.get(i, []) for i in range(max(by_index, default=-1) + 1)]
    ahead = racing.order(running, table)
    rest = [c["index"] for c in cells if values[c["index"]] and c["index"] not in ahead.cells]
    behind = (
        racing.after(ahead.cells[0], rest, table)
        if ahead.cells
        else racing.order(rest, table).cells
    )
    unmeasured = [c for c in cells if not values[c["index"]]]
    order = [by_index[i] for i in ahead.cells + behind] + unmeasured
    best = order[0] if order and values[order[0]["index"]] else None
    out = []
    for n, c in enumerate(order, 1):
        iv = interval_of(c.get(metric))
        entry: dict[str, Any] = {"rank": n, "cell": c["index"], "label": c["label"]}
        if iv is None or best is None:
            entry.update(median=None, lo=None, hi=None, vs_best="not measured")
            out.append(entry)
            continue
        entry.update(median=iv.median, lo=iv.lo, hi=iv.hi)
        best_iv = interval_of(best.get(metric))
        assert best_iv is not None
        if c is best:
            entry["vs_best"] = "best"
            entry["lowest"] = ahead.lowest
        elif c["index"] in dropped:
            d = dropped[c["index"]]
            entry.update(
                vs_best="worse",
                dropped_round=d.round,
                against=d.best,
                comparison=d.comparison.to_json(),
            )
        else:
            cmp = racing.compare(values[best["index"]], values[c["index"]], level)
            assert cmp is not None
            entry["comparison"] = cmp.to_json()
            if cmp.beyond_noise and cmp.b_higher:
                entry["vs_best"] = "worse"
            elif cmp.reachable:
                entry["vs_best"] = intervals.WITHIN_NOISE
            else:
                entry["vs_best"] = CANNOT_TELL
                entry["untold"] = untold_text(cmp.to_json())
        if c is not best:
            entry["delta"] = round(iv.median - best_iv.median, 6)
        out.append(entry)
    return out


def is_decided(ranking: list[dict[str, Any]]) -> bool:
    """The best is beyond noise better than every other cell."""
    return len(ranking) > 1 and all(r["vs_best"] == "worse" for r in ranking[1:])


def answer(
    doc: dict[str, Any],
    cells: list[dict[str, Any]],
    ranking: list[dict[str, Any]],
    objective: str,
    k: int | None,
) -> str:
    """The sweep in one line: a best only where it is beyond noise better than every other
    cell, each difference with its ratio and interval, what is within noise, and the
    break-even where one cell starts sooner and another runs faster."""
    prefix = _answer_prefix(doc)
    measured = [r for r in ranking if r["median"] is not None]
    if not measured:
        return prefix + "no process finished: nothing to compare"
    if len(cells) == 1:
        return prefix + _one_cell_text(cells[0])
    name, noun = objective_name(objective, k), objective_noun(objective, k)
    direct, via = _beaten(measured)
    too_few = too_few_text(cells, ranking, doc)
    if is_decided(ranking):
        parts = [_best_lead(measured[0], direct, name, noun)]
    else:
        parts = _no_best_parts(measured, direct, name, noun, too_few)
    labels = {r["cell"]: r["label"] for r in ranking}
    for r in via:
        parts.append(
            f"{r['label']} dropped after round {r['dropped_round']}, beyond noise above "
            f"{labels.get(r['against'], '?')}'s ({ratio_text(r['comparison'])})"
        )
    unmeasured = [r["label"] for r in ranking if r["median"] is None]
    if unmeasured:
        parts.append(f"{', '.join(unmeasured)} not measured")
    if too_few:
        parts.append(too_few)
    text = prefix + "; ".join(parts)
    tradeoff = break_even(cells)
    return text + (f". {tradeoff}" if tradeoff else "")


def _answer_prefix(doc: dict[str, Any]) -> str:
    """The processes short of the plan and the cells given up, each followed by ``; ``."""
    short = short_of_plan(doc)
    prefix = f"{short}; " if short else ""
    return prefix + "".join(f"{g}; " for g in given_up_text(doc))


def _one_cell_text(c: dict[str, Any]) -> str:
    """A sweep of one cell: its figures with their intervals, nothing to compare."""
    n = len(c["runs"])
    return (
        f"{c['label']} over {n} process{'es' if n != 1 else ''}: first {iv_text(c['first_ms'])}, "
        f"warm-up excess {iv_text(c['warmup_excess_ms'])}, steady p50 {iv_text(c['steady_p50_ms'])}; "
        f"{c['shapes']}"
    )


def _beaten(
    measured: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The cells beyond noise worse than the best (``measured[0]``): those found so against the
    best itself, and those dropped against another cell."""
    best = measured[0]
    worse = [r for r in measured[1:] if r["vs_best"] == "worse"]
    direct = [r for r in worse if r.get("against", best["cell"]) == best["cell"]]
    return direct, [r for r in worse if r not in direct]


def _best_lead(best: dict[str, Any], direct: list[dict[str, Any]], name: str, noun: str) -> str:
    """``by first iteration, A is best beyond noise: its first call is 4.6× lower than B's``."""
    lead = f"by {name}, {best['label']} is best beyond noise"
    if direct:
        lead += f": its {noun} is " + " and ".join(
            size_text(r["comparison"], f"lower than {r['label']}'s") for r in direct
        )
    return lead


def _no_best_parts(
    measured: list[dict[str, Any]],
    direct: list[dict[str, Any]],
    name: str,
    noun: str,
    too_few: str,
) -> list[str]:
    """Where no cell is best beyond noise: the lowest (or, where the pairs go round, the first)
    with the cells within noise of it, those the processes could not tell from it, and those
    beyond noise higher."""
    best = measured[0]
    tied = [r for r in measured[1:] if r["vs_best"] == intervals.WITHIN_NOISE]
    untold = [r for r in measured[1:] if r["vs_best"] == CANNOT_TELL]
    lowest = best.get("lowest", True)
    of_it = " within noise of it" if lowest else ""
    ties = [f"{r['label']}{of_it} ({ratio_text(r.get('comparison'))})" for r in tied]
    if lowest:
        lead = (
            f"by {name}, no setting is best beyond noise: {best['label']} is lowest "
            f"({fmt_ms(best['median'])})"
        )
    else:
        # The pairs go round in a circle: "lowest" would contradict a ratio shown.
        lead = (
            f"by {name}, no setting is best beyond noise, nor lowest: pair by pair they go "
            f"round, {best['label']} ({fmt_ms(best['median'])})"
        )
        ties[-1:] = [f"{t} within noise of each other" for t in ties[-1:]]
    lead += "".join(", " + t for t in ties)
    parts = [lead]
    of = "it" if lowest else best["label"]
    for r in untold:
        # Where the whole sweep could not tell, its sentence says how many would.
        why = f"not told from {of}" if too_few else r.get("untold", CANNOT_TELL)
        parts.append(f"{r['label']}: {why} ({ratio_text(r.get('comparison'))})")
    parts += [
        f"{r['label']}'s {noun} is " + size_text(r["comparison"], f"higher than {best['label']}'s")
        for r in direct
    ]
    return parts


def too_few_text(
    cells: list[dict[str, Any]], ranking: list[dict[str, Any]], doc: dict[str, Any]
) -> str:
    """``3 processes each cannot tell 2 settings apart at 95%: --repeat 4 or more``, where no
    comparison of this sweep could have been beyond noise."""
    compared = [r["comparison"] for r in ranking[1:] if isinstance(r.get("comparison"), dict)]
    if not compared or any(
        racing.smallest_p(*c["n"]) <= c["level"] for c in compared if c.get("level")
    ):
        return ""
    counts = sorted({len(c["runs"]) for c in cells if c["runs"]})
    need = needed_processes(len(cells))
    if not counts or need is None:
        return ""
    few = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    process = "process" if counts[-1] == 1 else "processes"
    how = "a larger --repeat cap" if doc.get("adaptive") else f"--repeat {need} or more"
    return f"{few} {process} each cannot tell {len(cells)} settings apart at 95%: {how}"


def _lower(a: list[float], b: list[float], level: float) -> bool:
    """a beyond noise lower than b."""
    cmp = racing.compare(a, b, level)
    return cmp is not None and cmp.beyond_noise and cmp.b_higher


def _untold(a: list[float], b: list[float], level: float) -> str | None:
    """``3 processes cannot tell; 4 can`` where a against b could not reach ``level``."""
    cmp = racing.compare(a, b, level)
    return None if cmp is None or cmp.reachable else untold_text(cmp.to_json())


def _within(untold: str | None, what: str) -> str:
    """``steady p50 within noise``, or what the processes could not tell."""
    return f"{what}: {untold}" if untold else f"{what} within noise"


def break_even(cells: list[dict[str, Any]]) -> str:
    """``A starts 34 ms sooner; B's steady p50 is 0.2 ms lower; B pays off after ~170 calls``,
    where the cell that starts soonest is not the one that runs fastest and both differences
    are beyond noise (the exact rank test, α over the pairs, for each figure); a plainer
    sentence otherwise; empty with fewer than two measured cells."""
    level = pair_level(len(cells))
    measured: list[tuple[dict[str, Any], list[float], list[float]]] = []
    for c in cells:
        start, p50 = figures(c["start_ms"]), figures(c["steady_p50_ms"])
        if start and p50:
            measured.append((c, start, p50))
    if len(measured) < 2:
        return ""
    # The soonest and the fastest by the estimate the ratios show (``racing.order``).
    a, a_start, a_p50 = measured[
        racing.order(range(len(measured)), [m[1] for m in measured]).cells[0]
    ]
    b, b_start, b_p50 = measured[
        racing.order(range(len(measured)), [m[2] for m in measured]).cells[0]
    ]
    if a is b:
        tied = [
            (o["label"], _untold(a_start, s, level) or _untold(a_p50, p, level))
            for o, s, p in measured
            if o is not a and not (_lower(a_start, s, level) and _lower(a_p50, p, level))
        ]
        if not tied:
            return f"{a['label']} also starts soonest and runs fastest, beyond noise"
        within = [label for label, untold in tied if not untold]
        untold = [(label, why) for label, why in tied if why]
        parts = [f"start and steady p50: {a['label']} is lowest on both"]
        if within:
            parts[0] += ", within noise of " + ", ".join(within)
        parts += [f"against {label}, {why}" for label, why in untold]
        return "; ".join(parts)
    sooner = statistics.median(b_start) - statistics.median(a_start)
    lower = statistics.median(a_p50) - statistics.median(b_p50)
    start_clear = _lower(a_start, b_start, level)
    p50_clear = _lower(b_p50, a_p50, level)
    la, lb = a["label"], b["label"]
    if start_clear and p50_clear and lower > 0:
        calls = math.ceil(sooner / lower)
        return (
            f"{la} starts {fmt_ms(sooner)} sooner; {lb}'s steady p50 is {fmt_ms(lower)} lower; "
            f"{lb} pays off after ~{calls:,} calls"
        )
    start_untold = _untold(a_start, b_start, level)
    p50_untold = _untold(b_p50, a_p50, level)
    if p50_clear:
        return f"{lb}'s steady p50 is {fmt_ms(lower)} below {la}'s, beyond noise; " + _within(
            start_untold, "their starts"
        )
    if start_clear:
        return f"{la} starts {fmt_ms(sooner)} sooner than {lb}; " + _within(
            p50_untold, "steady p50"
        )
    if p50_untold == start_untold:
        return _within(start_untold, "start and steady p50")
    return _within(start_untold, "start") + "; " + _within(p50_untold, "steady p50")


def short_of_plan(doc: dict[str, Any]) -> str | None:
    """How many of the planned processes ran, where not all did: stopped, or a document
    written after each process by a sweep that ended (killed) or is still running."""
    finished, planned = doc.get("finished"), doc.get("planned")
    if doc.get("stopped"):
        return f"stopped after {finished} of {planned} processes"
    if isinstance(finished, int) and isinstance(planned, int) and finished < planned:
        return f"{finished} of {planned} planned processes ran (the sweep ended early or runs on)"
    return None


def given_up_text(doc: dict[str, Any]) -> list[str]:
    """``torchscript stopped after 2 processes failed the same way (failed: …)``, a cell each."""
    return [
        f"{g['label']} stopped after 2 processes failed the same way ({g['why']})"
        for g in doc.get("given_up") or []
    ]


def ran_text(doc: dict[str, Any]) -> str:
    """``8 of 10 ran``: the processes that ran against the design's, for the command line and
    the report alike. An adaptive sweep's plan shrinks as cells drop out; its design is the cap
    for every cell (``processes_fixed``), so a decided sweep never reads as complete."""
    finished = doc.get("finished")
    fixed = doc.get("processes_fixed") if doc.get("adaptive") or doc.get("given_up") else None
    return f"{finished} of {fixed if fixed is not None else doc.get('planned')} ran"


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
    if any(len(c["runs"]) == 1 for c in cells):
        out.append("one process gives no interval: no difference is called (--repeat 3 or more)")
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
    """A count's median (the upper one: a whole iteration number) and interval: ``#2 (2–3)``."""
    iv = interval_of(stat)
    if iv is None:
        return "-"
    middle = intervals.upper_median(iv.values) if iv.values else math.ceil(iv.median)
    return f"#{middle:g} ({iv.lo:g}–{iv.hi:g})"


def coverage_text(cells: list[dict[str, Any]]) -> str:
    """What the cells' intervals reach: ``75.0% intervals (3 processes; 6 reach 95%)``."""
    pairs = [
        (len(c.get("runs", [])), c["first_ms"].get("coverage"))
        for c in cells
        if isinstance(c.get("first_ms"), dict) and c["first_ms"].get("coverage") is not None
    ]
    if not pairs:
        return "coverage not recorded"
    counts = sorted({n for n, _ in pairs})
    covs = sorted({float(cov) for _, cov in pairs})
    cov = (
        fmt_coverage(covs[0])
        if len(covs) == 1
        else f"{fmt_coverage(covs[0])}–{fmt_coverage(covs[-1])}"
    )
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    short = "" if covs[0] >= intervals.CONFIDENCE else "; 6 reach 95%"
    return f"{cov} intervals ({n} process{'' if n == '1' else 'es'}{short})"


def header_lines(doc: dict[str, Any]) -> list[str]:
    """The lines under the answer: the sweep's size (and an adaptive sweep's course), the
    coverage its intervals reach, how its verdicts are reached."""
    cells = doc.get("cells", [])
    wall = float(doc.get("wall_s") or 0.0)
    per = doc.get("per_process_s")
    if doc.get("adaptive"):
        size = (
            f"{len(cells)} cell(s) × up to {doc.get('cap', doc.get('repeat', '?'))} processes, "
            f"interleaved, adaptive: {ran_text(doc)}"
        )
        if doc.get("decided") and doc.get("decided_round"):
            size += f", decided after round {doc['decided_round']}"
        elif not doc.get("stopped"):
            size += f", not decided in {doc.get('rounds')} rounds"
    else:
        size = f"{len(cells)} cell(s) × {doc.get('repeat', '?')} processes, interleaved"
        if doc.get("given_up"):
            size += f": {ran_text(doc)}"
    head = f"sweep      {doc.get('target', '?')} · {size} · {wall:.1f} s" + (
        f" ({per:.1f} s per process)" if per else ""
    )
    if doc.get("warming_s"):
        head += f" · {doc['warming_s']:.1f} s warming compile caches"
    if doc.get("executor", "local") != "local":
        nodes = {
            str(p["node"].get("node_id"))
            for c in cells
            for p in c.get("processes", [])
            if isinstance(p, dict) and isinstance(p.get("node"), dict)
        }
        head += f" · {doc['executor']}: {len(nodes)} node{'s' if len(nodes) != 1 else ''}"
    out = [head]
    hosts = doc.get("hosts")
    if isinstance(hosts, dict):
        out.append(
            "hosts      each process over its cell's median: "
            + " · ".join(
                f"{h.get('label')} {iv_text(h.get('relative'), unit=False)}× ({h.get('processes')})"
                for h in hosts.get("hosts", [])
                if isinstance(h, dict)
            )
        )
    if "method" in doc:
        method = str(doc.get("interval", "")).removesuffix(", 95%")
        out.append(
            f"intervals  median (interval) across processes; {method}: {coverage_text(cells)}"
        )
        pairs = len(cells) * (len(cells) - 1) // 2
        split = f"{pairs} pair{'s' if pairs != 1 else ''} of settings" + (
            " × the looks" if doc.get("adaptive") else ""
        )
        out.append(
            f"verdicts   at {float(doc.get('confidence') or 0.95):.0%} over {split}: "
            f"{doc['method']}"
        )
    else:  # a document from before verdicts were tests: its intervals, as it says them
        out.append(f"intervals  median (95% interval) across processes; {doc.get('interval', '')}")
    for d in doc.get("dropped", []):
        if isinstance(d, dict):
            out.append(f"dropped    {d.get('label')} after round {d.get('round')}: {d.get('why')}")
    return out


def sweep_method_text(doc: dict[str, Any]) -> str:
    """One sentence for a report: what each figure is, the coverage reached, the verdicts."""
    if "method" not in doc:
        return (
            f"Each figure: the median across processes (95% interval; {doc.get('interval', '')})."
        )
    text = (
        "Each figure: the median across processes with its distribution-free interval, "
        f"{coverage_text(doc.get('cells', []))}. Verdicts at "
        f"{float(doc.get('confidence') or 0.95):.0%}: {doc['method']}."
    )
    if doc.get("adaptive"):
        text += (
            f" Adaptive: {doc.get('finished')} of the fixed design's "
            f"{doc.get('processes_fixed')} processes ran"
            + (
                f", decided after round {doc['decided_round']}."
                if doc.get("decided")
                else ", not decided."
            )
        )
    return text
