"""A warm-up's verdicts: whether a candidate's first calls are within noise of their steady
state, which candidate to choose, the break-even of a slower steady state, the one-line answer
(``warmscope warmup``; the steps that measure are ``warmscope.core.run.warmup``).

A shape passes when its first call is within noise of its steady state (the interval of its
first-call / steady-p50 ratio across processes reaches down into the shape's steady spread, its
p90 over its p50) and its median ratio is at most ``MAX_RATIO``.

A median hides one process in four whose first call is 108× its steady p50, and that is the
first request a recipe exists to keep fast. So a candidate is verified only where every
verification process stays within bound on every shape (``outliers``): a process whose first
call is beyond ``PROCESS_BOUND`` × its steady p50 and beyond its own p90 is named, with its
figures and the load from other processes it saw, and the candidate is not verified (nor
chosen over one without such a process).
"""

from __future__ import annotations

import math
from typing import Any

from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.base.units import num3
from warmscope.core.child import outcome
from warmscope.core.data.intervals import median_interval

MAX_RATIO = 1.2
VERIFIED = "verified"
"""Every shape's first call within its steady spread (and at most ``MAX_RATIO``)."""
WITHIN = f"verified within {MAX_RATIO:g}×"
"""Every shape's first call at most ``MAX_RATIO`` × its steady p50, or within the tolerance of
it, but beyond its spread: the residual is named."""
NOT_VERIFIED = "not verified"
WITHIN_CAP = 1.5
"""A first call whose interval across processes reaches down to ``MAX_RATIO`` is within it only
while its median is at most this: a wide interval does not pass a slow first call."""
OUTCOMES = (VERIFIED, WITHIN, NOT_VERIFIED)


def is_verified(verdict: str | None) -> bool:
    """``verified`` or ``verified within 1.2×``: a recipe to hand over (exit 0)."""
    return verdict in (VERIFIED, WITHIN)


PROCESS_BOUND = 2.0
"""The most one verification process's first call may be, against its own steady p50 (and
beyond its own p90), before that process is an outlier: a first request twice as slow is one
a user notices."""


def worst_shape(facts: dict[str, Any]) -> dict[str, Any] | None:
    """The shape whose first call is furthest above its steady p50 (median across processes)."""
    measured = [s for s in facts["shapes"] if s["ratio"]["median"] is not None]
    return max(measured, key=lambda s: s["ratio"]["median"], default=None)


def judge(
    facts: dict[str, Any], baseline: dict[str, Any], tolerance_ms: float = 0.0
) -> dict[str, Any]:
    """One of ``OUTCOMES`` with why, and per shape how much of the first call's excess the
    recipe removed (``cured``). A shape is verified when its first call is within noise of
    its steady state and at most ``MAX_RATIO`` × its steady p50; within when it is beyond the
    noise but at most ``MAX_RATIO`` × (or ``tolerance_ms`` over) its steady p50."""
    out: dict[str, Any] = {"cured": cured(facts, baseline)}
    if not facts["runs"]:
        failed = [p for p in facts["processes"] if p["status"] != outcome.OK]
        detail = failed[0]["detail"] if failed else "no process finished"
        out.update(verdict=NOT_VERIFIED, why=f"every process failed: {detail}", worst=None)
        return out
    worst: dict[str, Any] | None = None
    failing = None
    residual = []
    for shape in facts["shapes"]:
        ratio = shape["ratio"]["median"]
        p50, p90 = shape["p50_ms"]["median"], shape["p90_ms"]["median"]
        if ratio is None:
            continue
        # Within noise: across processes, the first call's ratio reaches down into the
        # shape's own steady spread (its p90 over its p50).
        spread = max(1.0, p90 / p50) if p50 and p90 else 1.0
        over_ms = (ratio - 1.0) * p50 if p50 else None
        shape["within_noise"] = shape["ratio"]["lo"] <= spread
        shape["passes"] = shape["within_noise"] and ratio <= MAX_RATIO
        # Within: at most MAX_RATIO, or not to be told from it across processes (the
        # interval reaches down to it) with the median at most WITHIN_CAP, or within tolerance.
        shape["within"] = (
            shape["passes"]
            or ratio <= MAX_RATIO
            or (shape["ratio"]["lo"] <= MAX_RATIO and ratio <= WITHIN_CAP)
            or (over_ms is not None and over_ms <= tolerance_ms)
        )
        if not shape["passes"] and shape["within"]:
            residual.append((shape, ratio, over_ms))
        if worst is None or ratio > worst["ratio"]["median"]:
            worst = shape
        if not shape["within"] and (failing is None or ratio > failing["ratio"]["median"]):
            failing = shape
    out["worst"] = (
        None if worst is None else {"key": worst["key"], "ratio": worst["ratio"]["median"]}
    )
    failures = [p for p in facts["processes"] if p["status"] != outcome.OK]
    out["outliers"] = outliers(facts)
    if failing is not None:
        name = failing["key"] or "the input"
        ratio = failing["ratio"]["median"]
        p50 = failing["p50_ms"]["median"]
        over = f", {fmt_ms((ratio - 1.0) * p50)} over" if p50 else ""
        cause = failing["first_label"] or "no event: allocation or caches"
        out.update(
            verdict=NOT_VERIFIED,
            why=f"{name}'s first call is {num3(ratio)}× its steady p50{over}: {cause}",
        )
    elif failures:
        out.update(
            verdict=NOT_VERIFIED,
            why=f"{len(failures)} process(es) failed: {failures[0]['detail']}",
        )
    elif out["outliers"]:
        out.update(verdict=NOT_VERIFIED, why=outliers_text(out["outliers"], len(facts["runs"])))
    elif residual:
        shape, ratio, over_ms = max(residual, key=lambda r: r[1])
        over = f", {fmt_ms(over_ms)} over" if over_ms is not None else ""
        out.update(
            verdict=WITHIN,
            why=f"{shape['key'] or 'the input'}'s first call is {num3(ratio)}× its steady p50"
            f"{over}: beyond the steady spread, " + within_text(shape, tolerance_ms),
        )
    else:
        out.update(verdict=VERIFIED, why="")
    out["break_even"] = break_even(facts, baseline)
    out["held"] = held_text(worst) if worst is not None else ""
    return out


def within_text(shape: dict[str, Any], tolerance_ms: float) -> str:
    """Which bound a shape's first call is within: the ratio, its interval, or the tolerance."""
    ratio = shape["ratio"]["median"]
    if ratio <= MAX_RATIO:
        return f"within {MAX_RATIO:g}×"
    if shape["ratio"]["lo"] <= MAX_RATIO and ratio <= WITHIN_CAP:
        return f"not to be told from {MAX_RATIO:g}× across processes"
    return f"within the {fmt_ms(tolerance_ms)} tolerance (--tolerance)"


def cured(facts: dict[str, Any], baseline: dict[str, Any]) -> list[dict[str, Any]]:
    """Per shape, its first call's excess over its steady p50 (medians across processes)
    without the recipe and with it, and the share removed: ``20.6 s → 135 µs, 99.99%
    removed``."""
    before = {s["key"]: s for s in baseline.get("shapes", [])}
    out = []
    for shape in facts.get("shapes", []):
        base = before.get(shape["key"])
        if base is None:
            continue
        was, now = excess_ms(base), excess_ms(shape)
        if was is None or now is None:
            continue
        removed = (was - now) / was if was > 0 else None
        out.append(
            {
                "key": shape["key"],
                "before_ms": round(was, 6),
                "after_ms": round(now, 6),
                "removed": None if removed is None else round(removed, 6),
            }
        )
    return out


def excess_ms(shape: dict[str, Any]) -> float | None:
    """A shape's first call over its steady p50 (medians across processes; never below 0)."""
    first, p50 = shape["first_ms"]["median"], shape["p50_ms"]["median"]
    if first is None or p50 is None:
        return None
    return max(0.0, first - p50)


def cured_text(row: dict[str, Any]) -> str:
    """``S=24: first call 20.6 s → 135 µs over steady, 99.99% of it removed``."""
    name = row["key"] or "the input"
    share = ""
    if row["removed"] is not None:
        # Rounded down: a share that is not all of it never reads 100%.
        pct = 100.0 * row["removed"]
        if pct > 99:
            share = f", {math.floor(pct * 100) / 100:.2f}% of it removed"
        else:
            share = f", {math.floor(pct):.0f}% of it removed"
    return (
        f"{name}: first call {fmt_ms(row['before_ms'])} → {fmt_ms(row['after_ms'])} over "
        f"steady{share}"
    )


def outliers(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The verification processes with a first call out of bound: beyond ``PROCESS_BOUND`` ×
    its steady p50 and beyond its own p90 on some shape; each with those shapes' figures and
    the load it saw, worst first."""
    found = []
    for proc in facts.get("each", []):
        beyond = []
        for s in proc["shapes"]:
            ratio, p50, p90 = s["ratio"], s["p50_ms"], s["p90_ms"]
            if ratio is None or not p50:
                continue
            spread = p90 / p50 if p90 else 1.0
            if ratio > max(PROCESS_BOUND, spread):
                beyond.append(s)
        if beyond:
            beyond.sort(key=lambda s: -s["ratio"])
            found.append({**proc, "beyond": beyond})
    return sorted(found, key=lambda p: -p["beyond"][0]["ratio"])


CONTENDED_LOAD = 0.5
"""Cores kept busy by other processes (the median of a process's samples) past which an
out-of-bound verification process measured the machine, not the recipe, and runs again."""


def contended(facts: dict[str, Any]) -> list[str]:
    """The records of the out-of-bound processes (``outliers``) that ran while other processes
    kept at least ``CONTENDED_LOAD`` cores busy."""
    return [
        o["record"]
        for o in outliers(facts)
        if o.get("load") is not None and o["load"] >= CONTENDED_LOAD
    ]


def outliers_text(found: list[dict[str, Any]], processes: int) -> str:
    """``1 of 4 processes out of bound: #2: L=128's first call 558 ms, 108× its steady p50
    (5.16 ms), L=64's 25×; 1.4 cores busy elsewhere (records/c1-r2.jsonl)``."""
    first = found[0]
    shapes = []
    for n, s in enumerate(first["beyond"][:3]):
        name = s["key"] or "the input"
        if n == 0:
            shapes.append(
                f"{name}'s first call {fmt_ms(s['first_ms'])}, {num3(s['ratio'])}× its steady "
                f"p50 ({fmt_ms(s['p50_ms'])})"
            )
        else:
            shapes.append(f"{name}'s {num3(s['ratio'])}×")
    load = first.get("load")
    seen = (
        f"{load:.1f} cores busy elsewhere" if load is not None else "no load figure"
    ) + f" ({first['record']})"
    which = f"#{first['repeat']}" if first.get("repeat") is not None else "one"
    more = f"; {len(found) - 1} more" if len(found) > 1 else ""
    return (
        f"{len(found)} of {processes} processes out of bound (first call above "
        f"{PROCESS_BOUND:g}× its steady p50 and its own p90): {which}: {', '.join(shapes)}; {seen}{more}"
    )


def held_text(shape: dict[str, Any]) -> str:
    """Where a first call was held to its replay: ``S=128's first call is 1.78× its steady
    p50; the same call replayed warm after the same pause, 1.69×``: how much of the first
    call a warm process pays as well (on a GPU, its clocks after idle)."""
    raw = (shape.get("raw_ratio") or {}).get("median")
    replays = (shape.get("replay_ms") or {}).get("values", [])
    p50s = (shape.get("p50_ms") or {}).get("values", [])
    if raw is None:
        return ""
    # Each process's replay against its own steady p50 (both listed in process order).
    ratios = sorted(r / p for r, p in zip(replays, p50s, strict=False) if r is not None and p)
    if not ratios:
        return ""
    warm = ratios[len(ratios) // 2]
    name = shape.get("key") or "the input"
    return (
        f"{name}'s first call is {num3(raw)}× its steady p50; the same call replayed warm "
        f"after the same pause, {num3(warm)}×"
    )


def break_even(facts: dict[str, Any], baseline: dict[str, Any]) -> str:
    """Where the recipe's settings slow every later call: after how many calls the slowdown
    outweighs the warm-up the baseline paid."""
    a = median_interval([v for v in facts["steady_p50_ms"]["values"] if v is not None])
    b = median_interval([v for v in baseline["steady_p50_ms"]["values"] if v is not None])
    excess = baseline["warmup_excess_ms"]["median"]
    if a is None or b is None or excess is None:
        return ""
    if a.lo > b.hi:
        slower = a.median - b.median
        calls = math.ceil(excess / slower) if slower > 0 else 0
        return (
            f"steady p50 {fmt_ms(slower)} above the baseline's: past ~{calls:,} calls the "
            f"slowdown costs more than the baseline's warm-up ({fmt_ms(excess)})"
        )
    return ""


def choose(cands: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The cheapest verified candidate by start-up, among those that leave the steady state
    as fast as the baseline's where there are any (a start-up saved once is not worth a slower
    call ever after: on an H100, cuDNN autotuning off started 518 ms sooner and served every
    call 183 µs slower); else the one whose worst shape is best."""
    # Fully verified before within-tolerance, each the cheapest first.
    verified = [c for c in cands if c["verdict"] == VERIFIED] or [
        c for c in cands if c["verdict"] == WITHIN
    ]
    as_fast = [c for c in verified if not c.get("break_even")]
    if as_fast or verified:
        return min(as_fast or verified, key=lambda c: c["startup_ms"]["median"] or 0.0)
    measured = [c for c in cands if c.get("worst")]
    if measured:
        # None verified: one whose every process stayed within bound before one with an
        # outlier, however their medians compare.
        return min(measured, key=lambda c: (bool(c.get("outliers")), c["worst"]["ratio"]))
    return None


def answer(doc: dict[str, Any], chosen: dict[str, Any] | None, baseline: dict[str, Any]) -> str:
    worst_base = max(
        (s for s in baseline["shapes"] if s["ratio"]["median"] is not None),
        key=lambda s: s["ratio"]["median"],
        default=None,
    )
    without = (
        f"without one, {worst_base['key'] or 'the first call'} is "
        f"{num3(worst_base['ratio']['median'])}× its steady p50"
        if worst_base
        else "the baseline has no figures"
    )
    cold = doc.get("compile_cache") == "cold"
    if worst_base and cold and worst_base["first_ms"]["median"] is not None:
        without += f" (first call {fmt_ms(worst_base['first_ms']['median'])}, cold cache)"
    yours = your_cache_text(doc, chosen, worst_base["key"] if worst_base else None)
    tail = f"{without}; {yours}" if yours else without
    if chosen is None:
        return f"not verified: no candidate could be measured; {tail}"
    start = chosen["startup_ms"]["median"]
    worst = chosen.get("worst") or {}
    cure = "; ".join(cured_text(row) for row in chosen.get("cured", []))
    if cure:
        tail = f"{cure}; {tail}"
    if chosen["verdict"] == VERIFIED:
        return (
            f"verified: {chosen['label']} ({chosen['summary']}), start-up {fmt_ms(start)}"
            + (" on a cold compile cache" if cold else "")
            + f", worst first call {num3(worst.get('ratio', 0))}× its steady p50 "
            f"({worst.get('key') or 'the input'}); "
            f"{tail}"
        )
    if chosen["verdict"] == WITHIN:
        return f"{WITHIN}: {chosen['label']} ({chosen['summary']}): {chosen['why']}; {tail}"
    return f"not verified: best is {chosen['label']}: {chosen['why']}; {tail}"


def your_cache_text(doc: dict[str, Any], chosen: dict[str, Any] | None, key: str | None) -> str:
    """The same figures in the user's own compile cache, beside the cold ones: ``with your
    compile cache: L=64's first call 3.00 s without a recipe; compile dynamic starts in
    6.43 s``. What a server started on this machine would see; a new machine sees the cold."""
    yours = doc.get("your_cache")
    if not isinstance(yours, dict):
        return ""
    parts = []
    base = next((s for s in yours["baseline"]["shapes"] if s["key"] == key), None)
    if base is not None and base["first_ms"]["median"] is not None:
        name = key or "the input"
        parts.append(f"{name}'s first call {fmt_ms(base['first_ms']['median'])} without a recipe")
    mine = (chosen or {}).get("your_cache")
    if chosen is not None and isinstance(mine, dict) and mine["startup_ms"]["median"] is not None:
        parts.append(f"{chosen['label']} starts in {fmt_ms(mine['startup_ms']['median'])}")
    return "with your compile cache: " + "; ".join(parts) if parts else ""
