"""The text layer: one unit picker, one comparison of N runs, the sweep's columns declared once."""

from __future__ import annotations

from pathlib import Path

import pytest

from warmscope.core.base import units
from warmscope.core.data.record import read_summarized
from warmscope.core.output.comparison import comparison
from warmscope.core.output.report import sweep_report
from warmscope.core.output.sweep_columns import sweep_columns
from warmscope.core.output.sweep_digest import iv_text
from warmscope.core.output.sweep_stats import stat_json
from warmscope.core.output.text_views import render_comparison, render_sweep

DATA = Path(__file__).parent / "data"
RECORDS = [
    DATA / "speech-script.jsonl",
    DATA / "speech-no-profiling.jsonl",
    DATA / "failed-at-3.jsonl",
]


@pytest.mark.parametrize(
    ("value", "unit"),
    [(1500.0, "s"), (999.5, "s"), (999.4, "ms"), (1.0, "ms"), (0.0, "ms"), (0.5, "µs")],
)
def test_one_unit_picker_for_values(value: float, unit: str) -> None:
    assert units.select_unit(value)[1] == unit
    assert units.ms(value).endswith(f" {unit}")


def test_a_column_takes_the_unit_its_smallest_value_needs() -> None:
    unit = units.column_unit([12.0, 0.25, None, 3000.0])
    assert unit[1] == "µs"
    assert [units.in_unit(v, unit, suffix=False) for v in (0.25, 12.0)] == ["250", "12000"]
    assert units.in_unit(None, unit) == "-"
    assert units.column_unit([None])[1] == "ms", "an empty column reads in ms"


def test_an_interval_reads_in_its_median_unit() -> None:
    # The interval's bounds follow the median's unit even where one would pick another.
    text = iv_text(stat_json([0.8, 0.9, 1.2, 1.5, 2.0, 0.95]))
    median, bounds = text.split(" (")
    assert median.endswith(" ms") or median.endswith(" µs")
    assert "ms" not in bounds and "µs" not in bounds
    if median.endswith(" ms"):
        assert bounds.startswith("0."), "a bound under 1 ms stays in ms beside its median"


def test_two_and_three_runs_share_one_layout() -> None:
    runs = read_summarized(RECORDS)
    names = [str(p) for p in RECORDS]
    two = render_comparison(comparison(runs[:2], names[:2])).splitlines()
    three = render_comparison(comparison(runs, names)).splitlines()
    assert two[0].split()[-2:] == ["ratio", "B/A"]
    assert three[0].split()[-4:] == ["ratio", "B/A", "ratio", "C/A"]
    rows_two = {line.split()[0]: line for line in two if line.endswith(("better", "worse", "×"))}
    rows_three = {line.split()[0]: line for line in three if line.split()[0] in rows_two}
    assert rows_two and rows_two.keys() == rows_three.keys()
    for metric, line in rows_two.items():
        # Runs A and B read the same in both tables, and so does B's ratio against A.
        ratio_b = line.split("  ")[-1].strip()
        assert ratio_b in rows_three[metric], metric
    assert "ratios: each run against the first" in three
    assert "ratios: each run against the first" not in two, "two columns need no such line"


def sweep_doc(total: bool) -> dict[str, object]:
    def cell(index: int, label: str, first: list[float]) -> dict[str, object]:
        c: dict[str, object] = {
            "index": index,
            "label": label,
            "runs": ["r0", "r1", "r2"],
            "processes": [],
            "first_ms": stat_json(first),
            "steady_p50_ms": stat_json([x / 10 for x in first]),
            "shapes": "warm-up ×2",
        }
        if total:
            c |= {"total_ms": stat_json([x * 3 for x in first]), "total_calls": 50}
        return c

    return {
        "target": "sample:speech",
        "answer": "a is best",
        "repeat": 3,
        "cells": [cell(0, "a", [9.0, 9.5, 10.0]), cell(1, "b", [40.0, 44.0, 41.0])],
        "ranking": [],
    }


@pytest.mark.parametrize("total", [False, True])
def test_the_sweep_table_has_the_same_columns_in_text_and_markdown(total: bool) -> None:
    doc = sweep_doc(total)
    headers = [c.header for c in sweep_columns(doc["cells"])]  # type: ignore[arg-type]
    assert ("total@50" in headers) == total
    text = render_sweep(doc).splitlines()
    header_line = next(line for line in text if line.startswith("setting"))
    positions = [header_line.index(h) for h in headers]
    assert positions == sorted(positions), "the text table's columns in the declared order"
    markdown = sweep_report(doc)
    assert "| " + " | ".join(headers) + " |" in markdown
    row_a = next(line for line in text if line.startswith("a "))
    first_a = iv_text(doc["cells"][0]["first_ms"])  # type: ignore[index]
    assert first_a in row_a and f"| a | 3 | {first_a} |" in markdown
