"""The TUI's sweep table never cuts setting names until two rows look the same (issue 31:
``profiling_execu…`` twice): a long name folds onto more lines, whole."""

from __future__ import annotations

from rich.console import Console

from warmscope.tui.screens.sweep_screen import sweep_table

FIGURE = {"median": 41.5, "lo": 30.0, "hi": 60.0, "values": [30.0, 41.5, 60.0]}


def test_settings_that_differ_at_their_end_stay_apart_at_80_columns() -> None:
    labels = ["profiling_executor=on", "profiling_executor=off"]
    cells = [
        {
            "index": i,
            "label": label,
            "runs": ["a", "b", "c"],
            "first_ms": FIGURE,
            "warmup_excess_ms": FIGURE,
            "steady_from": {"median": 3, "lo": 2, "hi": 4, "values": [2, 3, 4]},
            "steady_p50_ms": FIGURE,
            "shapes": "3 flat",
        }
        for i, label in enumerate(labels)
    ]
    console = Console(width=80, record=True)
    console.print(sweep_table({"cells": cells, "ranking": []}))
    lines = console.export_text().splitlines()[2:]
    shown = ["".join(line.split()[0] for line in lines[n : n + 2]) for n in range(0, len(lines), 2)]
    assert shown == labels
    assert "…" not in console.export_text()
