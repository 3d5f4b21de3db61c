"""A warm-up's verdict needs every verification process within bound: a median hides one
process in four whose first call is 108× its steady p50 (issue 31's BERT trace warm-up)."""

from __future__ import annotations

from typing import Any

from warmscope.core.output.sweep_stats import stat_json
from warmscope.core.output.warmup_verdict import (
    NOT_VERIFIED,
    PROCESS_BOUND,
    VERIFIED,
    WITHIN,
    choose,
    contended,
    cured_text,
    is_verified,
    judge,
)

Figures = dict[str, tuple[float, float, float]]
"""A process's figures per shape: first call, steady p50, steady p90 (ms)."""


def facts(processes: list[Figures], loads: list[float | None] | None = None) -> dict[str, Any]:
    """A candidate's facts as ``warmup.cell_facts`` writes them, from each process's figures."""
    keys = list(processes[0])
    loads = loads or [None] * len(processes)
    shapes = []
    for key in keys:
        firsts = [p[key][0] for p in processes]
        p50s = [p[key][1] for p in processes]
        p90s = [p[key][2] for p in processes]
        shapes.append(
            {
                "key": key,
                "first_ms": stat_json(firsts),
                "p50_ms": stat_json(p50s),
                "p90_ms": stat_json(p90s),
                "ratio": stat_json([f / m for f, m in zip(firsts, p50s, strict=True)]),
                "first_label": "",
            }
        )
    records = [f"verify/c1-r{n}.jsonl" for n in range(len(processes))]
    return {
        "shapes": shapes,
        "runs": records,
        "processes": [
            {"record": r, "status": "ok", "detail": "", "repeat": n} for n, r in enumerate(records)
        ],
        "startup_ms": stat_json([40.0] * len(processes)),
        "steady_p50_ms": stat_json([5.0] * len(processes)),
        "warmup_excess_ms": stat_json([1.0] * len(processes)),
        "each": [
            {
                "record": r,
                "repeat": n,
                "load": load,
                "shapes": [
                    {
                        "key": key,
                        "first_ms": p[key][0],
                        "p50_ms": p[key][1],
                        "p90_ms": p[key][2],
                        "ratio": p[key][0] / p[key][1],
                    }
                    for key in keys
                ],
            }
            for n, (r, p, load) in enumerate(zip(records, processes, loads, strict=True))
        ],
    }


BASELINE = facts([{"L=128": (500.0, 5.0, 5.5), "L=64": (80.0, 4.0, 4.4)}] * 4)


def calm(first: float) -> Figures:
    return {"L=128": (first, 5.0, 5.5), "L=64": (4.2, 4.0, 4.4)}


# What the BERT trace warm-up showed: `profiling off` 1.17× (0.99–108) at L=128, one process
# with first calls of 108× and 25×; `warm-up calls` all within 1.30×, but a dearer start-up.
PROFILING_OFF = facts(
    [calm(5.85), calm(4.95), {"L=128": (540.0, 5.0, 5.6), "L=64": (100.0, 4.0, 4.3)}, calm(5.9)],
    loads=[0.1, 0.2, 1.4, 0.1],
)
WARMUP_CALLS = facts([calm(6.5), calm(5.2), calm(5.6), calm(6.1)])


def test_one_process_out_of_bound_is_named_and_the_candidate_is_not_verified() -> None:
    verdict = judge(PROFILING_OFF, BASELINE)
    assert PROFILING_OFF["shapes"][0]["ratio"]["median"] <= 1.2  # the median alone passes
    assert verdict["verdict"] == "not verified"
    why = verdict["why"]
    assert why.startswith("1 of 4 processes out of bound")
    assert "#2: L=128's first call 540 ms, 108× its steady p50 (5.00 ms), L=64's 25.0×" in why
    assert "1.4 cores busy elsewhere (verify/c1-r2.jsonl)" in why
    [outlier] = verdict["outliers"]
    assert outlier["repeat"] == 2 and outlier["beyond"][0]["ratio"] > PROCESS_BOUND


def test_a_candidate_with_an_outlier_is_not_chosen_over_one_without() -> None:
    cands = []
    for label, cell, startup in (
        ("profiling off", PROFILING_OFF, 20.0),
        ("warm-up calls", WARMUP_CALLS, 90.0),
    ):
        entry = {"label": label, **cell, "startup_ms": stat_json([startup] * 4)}
        entry.update(judge(entry, BASELINE))
        cands.append(entry)
    assert [c["verdict"] for c in cands] == ["not verified", "verified"]
    assert choose(cands)["label"] == "warm-up calls"
    # Neither verified (both medians too high): the one without an outlier still goes first.
    for c in cands:
        c["verdict"] = "not verified"
    cands[0]["worst"] = {"key": "L=128", "ratio": 1.0}
    cands[1]["worst"] = {"key": "L=128", "ratio": 1.5}
    assert choose(cands)["label"] == "warm-up calls"


def test_a_noisy_process_within_its_own_spread_is_not_an_outlier() -> None:
    # 2.4× its p50, but its own p90 is 3× its p50: noise, not a cold first call.
    noisy = facts([calm(5.2), calm(5.4), {"L=128": (12.0, 5.0, 15.0), "L=64": (4.2, 4.0, 4.4)}])
    assert judge(noisy, BASELINE)["outliers"] == []


# -- three outcomes and what was cured ------------------------------------------------------


def test_within_the_bound_but_beyond_the_spread_is_verified_within_with_the_residual() -> None:
    # The GPT-2 warm-up: first calls 15,000× steady brought to about 1.16× (75 µs over a
    # 463 µs call), beyond a tight steady spread in every process.
    base = facts([{"S=160": (7000.0, 0.463, 0.47)}] * 3)
    after = facts([{"S=160": (0.535, 0.463, 0.47)}, {"S=160": (0.540, 0.463, 0.47)}] * 2)
    verdict = judge(after, base)
    assert verdict["verdict"] == WITHIN and is_verified(verdict["verdict"])
    assert verdict["why"].startswith("S=160's first call is 1.16× its steady p50, 74.5 µs over")
    [cure] = verdict["cured"]
    assert cure["before_ms"] > 6999 and abs(cure["after_ms"] - 0.0745) < 1e-6
    assert (
        cured_text(cure) == "S=160: first call 7.00 s → 74.5 µs over steady, 99.99% of it removed"
    )


def test_past_the_bound_a_tolerance_in_time_still_verifies_within() -> None:
    base = facts([{"T=8": (40.0, 0.05, 0.052)}] * 3)
    after = facts([{"T=8": (0.09, 0.05, 0.052)}] * 3)  # 1.8×, 40 µs over
    assert judge(after, base)["verdict"] == NOT_VERIFIED
    assert "T=8's first call is 1.80× its steady p50, 40.0 µs over" in judge(after, base)["why"]
    within = judge(after, base, tolerance_ms=0.05)
    assert within["verdict"] == WITHIN and "within the 50.0 µs tolerance" in within["why"]


def test_within_noise_is_verified_and_chosen_before_within_the_bound() -> None:
    within_noise = facts([calm(5.2), calm(5.0), calm(5.4), calm(5.1)])
    assert judge(within_noise, BASELINE)["verdict"] == VERIFIED
    cands = []
    beyond_spread = facts([calm(5.8), calm(5.9), calm(5.8), calm(5.85)])  # 1.16×, spread 1.1
    for label, cell, startup in (("cheap", beyond_spread, 10.0), ("dear", within_noise, 90.0)):
        entry = {"label": label, **cell, "startup_ms": stat_json([startup] * 4)}
        entry.update(judge(entry, BASELINE))
        cands.append(entry)
    assert [c["verdict"] for c in cands] == [WITHIN, VERIFIED]
    assert choose(cands)["label"] == "dear"


def test_a_first_call_not_to_be_told_from_the_bound_is_within_it_but_a_wide_one_is_not() -> None:
    # The compiled tiny GPT over two sizes: 1.21× (1.18–1.25), 141 µs over a 0.6 ms call.
    base = facts([{"L=32": (20000.0, 0.6, 0.62)}] * 2)
    close = facts([{"L=32": (0.708, 0.6, 0.62)}, {"L=32": (0.744, 0.6, 0.62)}])
    assert judge(close, base)["verdict"] == WITHIN
    assert "not to be told from 1.2× across processes" in judge(close, base)["why"]
    wide = facts([{"L=32": (0.66, 0.6, 0.62)}, {"L=32": (2.5, 0.6, 0.62)}])  # median 2.6×
    assert judge(wide, base)["verdict"] == NOT_VERIFIED


def test_an_outlier_that_ran_beside_busy_processes_is_contended_one_alone_is_not() -> None:
    # #2 saw 1.4 cores busy elsewhere: the machine, not the recipe; the others saw 0.1–0.2.
    assert contended(PROFILING_OFF) == ["verify/c1-r2.jsonl"]
    quiet = facts(
        [calm(5.85), calm(4.95), {"L=128": (540.0, 5.0, 5.6), "L=64": (100.0, 4.0, 4.3)}],
        loads=[0.1, 0.2, 0.2],
    )
    assert contended(quiet) == [] and judge(quiet, BASELINE)["outliers"]
