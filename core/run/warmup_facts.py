"""What a warm-up's processes measured, read from their records: per shape across the baseline
processes, its first call against its steady p50, how many calls it took to become steady and
why its first call was slow (``observe``); a cell's figures per shape and its start-up cost
across its processes (``cell_facts``), as the verdicts (``warmup_verdict``) judge them.
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Any

from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.base.units import num3
from warmscope.core.child import outcome
from warmscope.core.data.intervals import median_interval
from warmscope.core.data.run import RunData
from warmscope.core.data.summary_rows import shape_rows
from warmscope.core.output.sweep_stats import stat_json
from warmscope.core.output.verdicts import other_load
from warmscope.core.output.warmup_verdict import MAX_RATIO
from warmscope.core.run.sweep import Sweep

RECIPE_PHASE = "recipe"
"""The setup phase in which a verified process ran its recipe: its start-up cost."""


def ok_runs(sweep: Sweep, cell: int = 0) -> list[RunData]:
    return [p.data for p in sweep.processes if p.cell == cell and p.data.status == outcome.OK]


def calls_to_steady(idx: Any, steady_from: int | None) -> int:
    """How many of a shape's calls came before it was steady (all of them if never)."""
    if steady_from is None:
        return len(idx)
    return bisect.bisect_left(list(idx), steady_from)


def observe(runs: list[RunData]) -> list[dict[str, Any]]:
    """Per shape, across the baseline processes: its first call against its steady p50, how
    many calls it took to become steady, and why its first call was slow (its events)."""
    per: dict[str, dict[str, Any]] = {}
    for data in runs:
        rows = shape_rows(data) if data.shape_keys else [whole_row(data)]
        summaries = data.shape_summaries() if data.shape_keys else None
        for k, row in enumerate(rows):
            entry = per.setdefault(
                row["key"],
                {
                    "key": row["key"],
                    "dims": row["dims"],
                    "ratios": [],
                    "firsts": [],
                    "calls": [],
                    "labels": Counter(),
                    "events": Counter(),
                },
            )
            entry["ratios"].append(row["first_vs_p50"])
            entry["firsts"].append(row["first_ms"])
            if summaries is not None:
                idx, s = summaries[k]
                entry["calls"].append(calls_to_steady(idx, s.steady_from))
            else:
                entry["calls"].append(data.summary().steady_from or 0)
            entry["labels"][row.get("label") or ""] += 1
            for e in row.get("events", []):
                entry["events"][e["title"]] += 1
    out = []
    for key, e in per.items():
        ratio = median_interval([r for r in e["ratios"] if r is not None])
        first = median_interval([f for f in e["firsts"] if f is not None])
        label = next((lab for lab, _ in e["labels"].most_common() if lab), "")
        events = [t for t, _ in e["events"].most_common(2)]
        why = label or ("; ".join(events) if events else "")
        item = {
            "key": key,
            "dims": e["dims"],
            # The upper median across processes: one noisy process does not set the count.
            "calls_to_steady": sorted(e["calls"])[len(e["calls"]) // 2] if e["calls"] else 0,
            "ratio": stat_json(e["ratios"]),
            "first_ms": stat_json(e["firsts"]),
            "why": "",
        }
        if ratio is not None and first is not None and ratio.median > MAX_RATIO:
            reason = f"the {why}" if label else (why or "no event: allocation and caches")
            item["why"] = (
                f"first call {fmt_ms(first.median)}, {num3(ratio.median)}× its steady p50 "
                f"({reason})"
            )
            item["note"] = f"{key or 'the input'}: {item['why']}"
        out.append(item)
    return out


def whole_row(data: RunData) -> dict[str, Any]:
    s = data.summary()
    first = data.latency(0) if data.count else None
    return {
        "key": "",
        "dims": {},
        "first_ms": first,
        "p50_ms": s.p50_ms,
        "p90_ms": s.p90_ms,
        "first_vs_p50": first / s.p50_ms if first is not None and s.p50_ms else None,
        "label": data.label(0) if data.count else None,
        "events": [],
    }


def cell_facts(runs: list[RunData], sweep: Sweep, cell: int | None) -> dict[str, Any]:
    """A cell's figures per shape and its start-up cost, across its finished processes."""
    index = 0 if cell is None else cell
    repeats = {p.data.record_path: p.repeat for p in sweep.processes if p.cell == index}
    shapes = _ShapeFigures()
    each: list[dict[str, Any]] = []
    for data in runs:
        rows = shape_rows(data) if data.shape_keys else [whole_row(data)]
        each.append(_process_figures(data, rows, repeats.get(data.record_path)))
        for row in rows:
            shapes.add(row)
    processes = [p for p in sweep.processes if p.cell == index]
    return {
        "held_to_replay": shapes.held,
        "shapes": shapes.to_json(),
        "startup_ms": stat_json([d.phases.get(RECIPE_PHASE, 0.0) for d in runs]),
        "steady_p50_ms": stat_json([d.summary().p50_ms for d in runs]),
        "warmup_excess_ms": stat_json([d.summary().warmup_excess_ms for d in runs]),
        "processes": [
            {
                "record": p.data.record_path,
                "status": p.data.status,
                "detail": p.data.status_detail,
                "repeat": p.repeat,
                **({"node": p.node} if p.node is not None else {}),
            }
            for p in processes
        ],
        "runs": [d.record_path for d in runs],
        "each": each,
    }


def _process_figures(
    data: RunData, rows: list[dict[str, Any]], repeat: int | None
) -> dict[str, Any]:
    """One process's own figures: each shape's first call, steady p50 and p90, ratio."""
    load = other_load(data)
    return {
        "record": data.record_path,
        "repeat": repeat,
        "load": None if load is None else round(load, 3),
        "shapes": [
            {
                "key": row["key"],
                "first_ms": row["first_ms"],
                "p50_ms": row["p50_ms"],
                "p90_ms": row["p90_ms"],
                "ratio": row.get("first_vs_held", row["first_vs_p50"]),
            }
            for row in rows
        ],
    }


class _ShapeFigures:
    """Each shape's figures gathered across processes, then told as statistics."""

    def __init__(self) -> None:
        self.slots: dict[str, dict[str, list[Any]]] = {}
        self.labels: dict[str, Counter[str]] = {}
        self.held = False
        """Whether any process replayed its opening (its ratios are against that replay)."""

    def add(self, row: dict[str, Any]) -> None:
        slot = self.slots.setdefault(
            row["key"],
            {
                "first_ms": [],
                "p50_ms": [],
                "p90_ms": [],
                "ratio": [],
                "raw_ratio": [],
                "replay_ms": [],
            },
        )
        slot["first_ms"].append(row["first_ms"])
        slot["p50_ms"].append(row["p50_ms"])
        slot["p90_ms"].append(row["p90_ms"])
        # Where the opening was replayed, the ratio is against the larger of the steady p50
        # and that call warm after the same pause: what warm-up alone leaves of it.
        self.held = self.held or "first_vs_held" in row
        slot["ratio"].append(row.get("first_vs_held", row["first_vs_p50"]))
        slot["raw_ratio"].append(row["first_vs_p50"])
        slot["replay_ms"].append(row.get("replay_ms"))
        self.labels.setdefault(row["key"], Counter())[row.get("label") or ""] += 1

    def to_json(self) -> list[dict[str, Any]]:
        left_out = () if self.held else ("raw_ratio", "replay_ms")
        return [
            {
                "key": key,
                **{
                    name: stat_json(values) for name, values in slot.items() if name not in left_out
                },
                "first_label": next((lab for lab, _ in self.labels[key].most_common() if lab), ""),
            }
            for key, slot in self.slots.items()
        ]


def load_of(sweep: Sweep, record: str | None) -> float | None:
    """The cores other processes kept busy while the process of ``record`` ran."""
    data = next((p.data for p in sweep.processes if p.data.record_path == record), None)
    load = None if data is None else other_load(data)
    return None if load is None else round(load, 3)


def torch_version(runs: list[RunData]) -> str:
    """The torch the processes ran (one version, or each of them)."""
    seen = sorted({str(d.env.get("torch")) for d in runs if d.env.get("torch")})
    return ", ".join(seen)
