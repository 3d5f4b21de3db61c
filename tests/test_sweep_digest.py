"""The sweep digest on synthetic cells: ranking, within noise, the break-even, the answer."""

from __future__ import annotations

import math
import statistics
from typing import Any

from warmscope.core.data.settings import RunSettings
from warmscope.core.output.sweep_digest import answer, break_even, rank, stat_json, sweep_warnings
from warmscope.core.run.sweep import grid, parse_rank_by, schedule


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


FAST_START = cell(
    0,
    "no-profiling",
    [9.0, 9.5, 10, 8.8, 9.2, 9.9],
    [200, 201, 199, 202, 198, 200],
    [3.0, 3.01, 2.99, 3.02, 2.98, 3.0],
)
FAST_RUN = cell(
    1,
    "torchscript",
    [43.0, 41, 45, 44, 42, 43.5],
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
    assert "pays off" not in text and "within noise" in text


def test_ranking_calls_a_difference_only_beyond_noise() -> None:
    ranking = rank([FAST_RUN, FAST_START, SAME_AS_FAST], "first")
    assert [r["label"] for r in ranking] == ["no-profiling", "frozen", "torchscript"]
    assert [r["vs_best"] for r in ranking] == ["best", "within noise", "worse"]
    doc = {"stopped": False, "finished": 18, "planned": 18}
    line = answer(doc, [FAST_RUN, FAST_START, SAME_AS_FAST], ranking, "first", None)
    assert line.startswith(
        "by first iteration, no-profiling is best (9.35 ms); frozen within noise"
    )
    assert "torchscript 33.9 ms slower" in line and "\n" not in line
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

    def make(preset: str | None) -> RunSettings:
        s = RunSettings(target="sample:trivial")
        if preset:
            s.apply_preset(preset)
        return s

    cells = grid(
        make,
        ["torchscript", "no-profiling"],
        [("freeze", ["on", "off"]), ("intra_op_threads", ["1", "2"])],
    )
    assert len(cells) == 8
    assert cells[0].label == "torchscript freeze=on intra_op_threads=1"
    assert cells[-1].settings.knobs["profiling_executor"] is False
    assert cells[-1].settings.knobs["intra_op_threads"] == 2
    assert parse_rank_by("total@20", 50) == ("total", 20)
