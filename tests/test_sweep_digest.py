"""The sweep digest on synthetic cells: ranking, within noise, the break-even, the answer."""

from __future__ import annotations

import math
import random
import statistics
from typing import Any

from warmscope.core.data.settings import RunSettings
from warmscope.core.data.sweep_state import parse_rank_by, schedule
from warmscope.core.output.sweep_digest import (
    answer,
    break_even,
    header_lines,
    rank,
    sweep_warnings,
)
from warmscope.core.output.sweep_stats import stat_json
from warmscope.core.run.sweep import grid


def cell(
    index: int, label: str, first: list[float], start: list[float], p50: list[float]
) -> dict[str, Any]:
    return {
        "index": index,
        "label": label,
        "runs": [f"r{i}" for i in range(len(first))],
        "processes": [],
        "first_ms": stat_json(first),
        "start_ms": stat_json(start),
        "steady_p50_ms": stat_json(p50),
        "warmup_excess_ms": stat_json(first),
        "shapes": "warm-up ×6",
    }


FAST_START_FIRST = [9.0, 9.5, 10, 8.8, 9.2, 9.9]
FAST_RUN_FIRST = [43.0, 41, 45, 44, 42, 43.5]
FAST_START = cell(
    0,
    "no-profiling",
    FAST_START_FIRST,
    [200, 201, 199, 202, 198, 200],
    [3.0, 3.01, 2.99, 3.02, 2.98, 3.0],
)
FAST_RUN = cell(
    1,
    "torchscript",
    FAST_RUN_FIRST,
    [234, 236, 233, 235, 237, 234],
    [2.8, 2.81, 2.79, 2.8, 2.82, 2.78],
)
SAME_AS_FAST = cell(
    2,
    "frozen",
    [9.1, 9.6, 10.1, 8.7, 9.3, 9.8],
    [200, 205, 210, 195, 201, 199],
    [3.0, 3.1, 2.9, 3.05, 2.95, 3.0],
)


def test_break_even_where_one_starts_sooner_and_the_other_runs_faster() -> None:
    text = break_even([FAST_START, FAST_RUN])
    sooner = statistics.median([234, 236, 233, 235, 237, 234]) - 200
    lower = 3.0 - 2.8
    assert text == (
        f"no-profiling starts {sooner:.1f} ms sooner; torchscript's steady p50 is 200 µs lower; "
        f"torchscript pays off after ~{math.ceil(sooner / lower)} calls"
    )


def test_no_break_even_claimed_within_noise() -> None:
    text = break_even([FAST_START, SAME_AS_FAST])
    assert text == "start and steady p50: no-profiling is lowest on both, within noise of frozen"


def test_ranking_calls_a_difference_only_beyond_noise() -> None:
    ranking = rank([FAST_RUN, FAST_START, SAME_AS_FAST], "first")
    assert [r["label"] for r in ranking] == ["no-profiling", "frozen", "torchscript"]
    assert [r["vs_best"] for r in ranking] == ["best", "within noise", "worse"]
    doc = {"stopped": False, "finished": 18, "planned": 18}
    line = answer(doc, [FAST_RUN, FAST_START, SAME_AS_FAST], ranking, "first", None)
    # frozen is within noise of no-profiling: no best is named.
    assert line.startswith(
        "by first iteration, no setting is best beyond noise: no-profiling is lowest (9.35 ms), "
        "frozen within noise of it (1.0×, "
    )
    ratio = statistics.median(b / a for a in FAST_START_FIRST for b in FAST_RUN_FIRST)
    assert f"torchscript's first call is {ratio:.1f}× higher than no-profiling's (" in line
    assert "\n" not in line
    two = rank([FAST_RUN, FAST_START], "first")
    line = answer(doc, [FAST_RUN, FAST_START], two, "first", None)
    assert line.startswith(
        f"by first iteration, no-profiling is best beyond noise: its first call is {ratio:.1f}× "
        "lower than torchscript's ("
    )
    cmp = two[1]["comparison"]
    assert cmp["beyond_noise"] and cmp["lo"] > 1 and cmp["coverage"] >= 0.95
    stopped = answer(
        {**doc, "stopped": True, "finished": 7},
        [FAST_RUN],
        rank([FAST_RUN], "first"),
        "first",
        None,
    )
    assert stopped.startswith("stopped after 7 of 18 processes; torchscript over 6 processes")
    # Killed after 3 processes: the last document written says so, though nothing stopped it.
    killed = {**doc, "finished": 3}
    line = answer(killed, [FAST_RUN], rank([FAST_RUN], "first"), "first", None)
    assert line.startswith("3 of 18 planned processes ran")
    assert any(w.startswith("3 of 18 planned processes ran") for w in sweep_warnings(killed, []))
    assert not any("planned" in w for w in sweep_warnings(doc, []))


def test_schedule_interleaves_and_grid_crosses() -> None:
    assert schedule(3, 2) == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]

    cells = grid(
        RunSettings(target="sample:trivial"),
        ["torchscript", "no-profiling"],
        [("freeze", ["on", "off"]), ("intra_op_threads", ["1", "2"])],
    )
    assert len(cells) == 8
    assert cells[0].label == "torchscript freeze=on intra_op_threads=1"
    assert cells[-1].settings.knobs["profiling_executor"] is False
    assert cells[-1].settings.knobs["intra_op_threads"] == 2
    assert parse_rank_by("total@20", 50) == ("total", 20)


def test_identical_cells_name_no_best_and_few_processes_say_so() -> None:
    """Three processes each of two identical settings: no best, no difference, and the answer
    says why none could be told (3 processes each reach at best p = 10%)."""
    same = [40.0, 55.0, 47.0]
    a = cell(0, "torchscript", same, same, [2.0, 2.1, 2.2])
    b = cell(1, "torchscript again", [41.0, 54.0, 46.0], same, [2.05, 2.15, 2.1])
    ranking = rank([a, b], "first")
    assert [r["vs_best"] for r in ranking] == ["best", "cannot tell"]
    line = answer({"finished": 6, "planned": 6}, [a, b], ranking, "first", None)
    assert "no setting is best beyond noise" in line and line.count("is best") == 1
    assert "3 processes each cannot tell 2 settings apart at 95%: --repeat 4 or more" in line
    assert "higher" not in line and "lower" not in line and "pays off" not in line


def test_the_header_states_the_coverage_reached() -> None:
    three = cell(0, "a", [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    six = cell(1, "b", [1.0] * 6, [1.0] * 6, [1.0] * 6)
    doc = {
        "target": "sample:trivial",
        "repeat": 3,
        "method": "exact tests",
        "confidence": 0.95,
        "interval": "order statistics (distribution-free)",
        "cells": [three, three],
    }
    lines = header_lines(doc)
    assert lines[1].endswith("75.0% intervals (3 processes; 6 reach 95%)")
    assert lines[2] == "verdicts   at 95% over 1 pair of settings: exact tests"
    mixed = header_lines({**doc, "cells": [three, six]})
    assert mixed[1].endswith("75.0%–96.9% intervals (3–6 processes; 6 reach 95%)")
    adaptive = header_lines(
        {
            **doc,
            "adaptive": True,
            "cap": 10,
            "finished": 10,
            "processes_fixed": 20,
            "decided": True,
            "decided_round": 5,
            "dropped": [
                {"label": "a", "round": 5, "why": "first iteration beyond noise above b's"}
            ],
        }
    )
    assert (
        "× up to 10 processes, interleaved, adaptive: 10 of 20 ran, decided after round 5"
        in (adaptive[0])
    )
    assert adaptive[-1] == "dropped    a after round 5: first iteration beyond noise above b's"


def test_a_document_from_before_verdicts_were_tests_still_renders() -> None:
    from warmscope.core.output.text_views import render_sweep

    old = {
        "format": "warmscope-sweep",
        "version": 1,
        "target": "sample:speech",
        "repeat": 5,
        "answer": "by first iteration, no-optimizer is best (9.45 ms)",
        "interval": "order statistics (distribution-free), 95%",
        "ranking": [],
        "cells": [FAST_START, FAST_RUN],
        "wall_s": 47.2,
        "per_process_s": 2.4,
    }
    text = render_sweep(old)
    assert text.splitlines()[0] == "answer     by first iteration, no-optimizer is best (9.45 ms)"
    assert "intervals  median (95% interval) across processes; order statistics" in text
    assert "no-profiling" in text and "verdicts" not in text


def test_one_estimate_decides_the_lowest_and_the_ratio_shown() -> None:
    """Issue 31: "profiling_executor=on is lowest (41.5 ms), profiling_executor=off within
    noise of it (0.70×…)": the lowest by medians, the ratio (Hodges–Lehmann) saying the other
    is lower. Here a's median is below b's, but b's pairwise ratios to a are mostly below 1."""
    a = cell(0, "on", [43.7, 34.2, 75.3], [1.0] * 3, [1.0] * 3)
    b = cell(1, "off", [17.2, 52.7, 53.7], [1.0] * 3, [1.0] * 3)
    ranking = rank([a, b], "first")
    assert [r["label"] for r in ranking] == ["off", "on"]
    assert ranking[0]["lowest"] is True
    assert ranking[1]["comparison"]["estimate"] >= 1.0
    line = answer({"finished": 6, "planned": 6}, [a, b], ranking, "first", None)
    assert "off is lowest (" in line and "(0." not in line


def test_no_ratio_shown_against_the_lowest_is_below_one() -> None:
    """Over many simulated sweeps of 2 to 4 cells (log-normal, heavy-tailed): every ratio to
    the cell called lowest is at least 1, and where the pairs go round in a circle the answer
    says so instead of naming a lowest."""
    rng = random.Random(31)
    circles = 0
    for _ in range(400):
        k = rng.randint(2, 4)
        n = rng.randint(3, 7)
        cells = [
            cell(i, f"c{i}", [rng.lognormvariate(3.7, 0.8) for _ in range(n)], [1.0] * n, [1.0] * n)
            for i in range(k)
        ]
        ranking = rank(cells, "first")
        line = answer({"finished": n * k, "planned": n * k}, cells, ranking, "first", None)
        line = line.split(". ")[0]  # the break-even's sentence is about start and steady p50
        if ranking[0]["lowest"]:
            assert all(r["comparison"]["estimate"] >= 1.0 for r in ranking[1:]), ranking
            assert "nor lowest" not in line
        else:
            circles += 1
            assert "is lowest" not in line and "nor lowest" in line
    assert circles < 40  # circles are rare


def test_processes_too_few_to_reach_the_level_cannot_tell_which_is_not_within_noise() -> None:
    """Issue 31: steady p50 6.73 ms (6.46–6.87) against 3.99 ms (3.90–4.17), three processes
    each, was "within noise": 3 against 3 cannot reach 5% (at best p = 10%)."""
    slow = cell(0, "torchscript", [40.0, 41, 42], [100.0, 101, 102], [6.73, 6.46, 6.87])
    fast = cell(1, "no-profiling", [40.5, 41.5, 42.5], [100.5, 101.5, 102.5], [3.99, 3.90, 4.17])
    text = break_even([slow, fast])
    assert "within noise" not in text
    assert text == "start and steady p50: 3 processes cannot tell; 4 can"
    ranking = rank([slow, fast], "steady")
    assert ranking[1]["vs_best"] == "cannot tell"
    assert ranking[1]["untold"] == "3 processes cannot tell; 4 can"
    # Six each reach the level: the same figures are then told apart.
    six = [
        cell(
            0,
            "torchscript",
            [40.0] * 6,
            [100.0 + i for i in range(6)],
            [6.7 + i / 100 for i in range(6)],
        ),
        cell(
            1,
            "no-profiling",
            [40.0] * 6,
            [100.5 + i for i in range(6)],
            [3.9 + i / 100 for i in range(6)],
        ),
    ]
    assert "no-profiling's steady p50 is" in break_even(six)
    assert rank(six, "steady")[1]["vs_best"] == "worse"


def test_an_aa_sweep_of_three_processes_never_says_within_noise_or_different() -> None:
    """A/A: two identical settings, 3 processes each, simulated: never a difference, and never
    "within noise" either (these processes cannot tell)."""
    rng = random.Random(7)
    for _ in range(300):
        draw = [rng.lognormvariate(3.7, 0.5) for _ in range(6)]
        a = cell(0, "a", draw[:3], draw[:3], draw[:3])
        b = cell(1, "a again", draw[3:], draw[3:], draw[3:])
        ranking = rank([a, b], "first")
        assert ranking[1]["vs_best"] == "cannot tell"
        assert "within noise" not in break_even([a, b])


def test_an_iteration_number_across_processes_is_a_whole_one() -> None:
    """Issue 31: "steady from #3.5". The median of an even count of iteration numbers is
    the upper one, one of the values, in the sweep's table and in a comparison alike."""
    from warmscope.core.base.units import metric
    from warmscope.core.data.intervals import median_interval
    from warmscope.core.output.comparison import _middle
    from warmscope.core.output.sweep_digest import count_text
    from warmscope.core.output.sweep_stats import stat_json

    assert count_text(stat_json([2, 3, 4, 7])) == "#4 (2–7)"
    assert count_text(stat_json([3, 4])) == "#4 (3–4)"
    assert metric("steady_from", _middle("steady_from", median_interval([2, 3, 4, 7]))) == "#4"
    assert _middle("p50_ms", median_interval([2.0, 3.0])) == 2.5
