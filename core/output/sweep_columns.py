"""The columns of a sweep's table, declared once: the CLI's text and the Markdown report
are laid out from them.

Each column names its header, how a cell of the sweep document becomes its text, and whether
it holds figures (right-aligned where the output aligns).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from warmscope.core.output.sweep_digest import count_text, iv_text


@dataclass(frozen=True)
class SweepColumn:
    header: str
    value: Callable[[dict[str, Any]], str]
    figures: bool = True


def _interval(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda cell: iv_text(cell.get(key))


BASE_COLUMNS = (
    SweepColumn("setting", lambda c: str(c.get("label", "?")), figures=False),
    SweepColumn("runs", lambda c: str(len(c.get("runs", [])))),
    SweepColumn("first", _interval("first_ms")),
    SweepColumn("warm-up excess", _interval("warmup_excess_ms")),
    SweepColumn("steady from", lambda c: count_text(c.get("steady_from"))),
    SweepColumn("steady p50", _interval("steady_p50_ms")),
    SweepColumn("setup", _interval("setup_ms")),
)
SHAPES = SweepColumn("shapes", lambda c: str(c.get("shapes", "-")), figures=False)


def sweep_columns(cells: list[dict[str, Any]]) -> list[SweepColumn]:
    """The columns of these cells: a ``total@K`` column where the ranking asked for one."""
    columns = list(BASE_COLUMNS)
    if any("total_ms" in c for c in cells):
        columns.append(SweepColumn(f"total@{cells[0].get('total_calls')}", _interval("total_ms")))
    columns.append(SHAPES)
    return columns


def sweep_rows(cells: list[dict[str, Any]]) -> tuple[list[SweepColumn], list[list[str]]]:
    """The columns and each cell's row of texts under them."""
    columns = sweep_columns(cells)
    return columns, [[col.value(c) for col in columns] for c in cells]
