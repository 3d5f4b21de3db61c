"""Whether the machines a sweep ran on differ beyond noise: the host as one more factor.

A sweep run on several machines (``--executor ray``) says so in its document (``hosts``) and its
answer, so that a slow node is found rather than averaged into every cell's figures.
"""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING, Any

from warmscope.core.data import racing
from warmscope.core.output.sweep_stats import (
    needed_processes,
    objective_noun,
    pair_level,
    size_text,
    stat_json,
)

if TYPE_CHECKING:
    from warmscope.core.data.sweep_state import SweepState


def host_label(node: dict[str, Any], hostnames: dict[str, int]) -> str:
    """The hostname; with the node id's head where several nodes share a hostname."""
    name = str(node.get("hostname", "?"))
    if hostnames.get(name, 0) > 1:
        return f"{name}·{str(node.get('node_id', ''))[:8]}"
    return name


def host_factor(sweep: SweepState) -> dict[str, Any] | None:
    """Whether the machines a sweep ran on differ beyond noise, the host taken as one more
    factor; ``None`` where its processes ran on one machine (or say nowhere).

    Cells differ in their settings, so each process's objective is taken over its cell's
    median (1.0: as its cell's typical process) and these ratios are pooled by host; every
    pair of hosts is then compared with the sweep's exact rank test, α split over the pairs
    of hosts. A slow node shows as a host beyond noise above another, not averaged away."""
    values = sweep.values()
    medians = {c: statistics.median(v) for c, v in enumerate(values) if v}
    seen: dict[str, dict[str, Any]] = {}
    relative: dict[str, list[float]] = {}
    for p in sweep.processes:
        if p.node is None:
            continue
        key = str(p.node.get("node_id") or p.node.get("hostname"))
        seen.setdefault(key, p.node)
        relative.setdefault(key, [])
        median = medians.get(p.cell)
        if p.value is not None and median:
            relative[key].append(p.value / median)
    if len(seen) < 2:
        return None
    counts: dict[str, int] = {}
    for node in seen.values():
        name = str(node.get("hostname", "?"))
        counts[name] = counts.get(name, 0) + 1
    labels = {key: host_label(node, counts) for key, node in seen.items()}
    level = pair_level(len(seen))
    pairs: list[dict[str, Any]] = []
    keys = sorted(seen, key=lambda k: statistics.median(relative[k]) if relative[k] else math.inf)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            cmp = racing.compare(relative[a], relative[b], level)
            if cmp is not None:
                pairs.append({"a": labels[a], "b": labels[b], "comparison": cmp.to_json()})
    slower = [
        p for p in pairs if p["comparison"]["beyond_noise"] and p["comparison"]["estimate"] > 1
    ]
    name = objective_noun(sweep.objective, sweep.k)
    if slower:
        text = "hosts differ beyond noise: " + "; ".join(
            f"{p['b']}'s {name} is " + size_text(p["comparison"], f"higher than {p['a']}'s")
            for p in slower
        )
    else:
        text = f"hosts within noise of each other on the {name}"
        counts_per = sorted(len(v) for v in relative.values())
        need = needed_processes(len(seen))
        if (
            pairs
            and not any(racing.smallest_p(*p["comparison"]["n"]) <= level for p in pairs)
            and need is not None
        ):
            text += (
                f" ({counts_per[0]}–{counts_per[-1]} processes a host cannot tell "
                f"{len(seen)} hosts apart at 95%: {need} or more each)"
            )
    # A cell whose processes all ran on one host measures that host too: its figures cannot
    # tell the setting from the machine.
    where: dict[int, set[str]] = {}
    for p in sweep.processes:
        if p.node is not None and p.value is not None:
            where.setdefault(p.cell, set()).add(
                str(p.node.get("node_id") or p.node.get("hostname"))
            )
    one_host = [
        f"{sweep.cells[c].label} ran only on {labels[next(iter(h))]}"
        for c, h in sorted(where.items())
        if len(h) == 1 and len(values[c]) > 1
    ]
    if one_host:
        text += " (" + "; ".join(one_host) + ": setting and host not told apart there)"
    return {
        "factor": "host",
        "one_host": one_host,
        "method": "each process's objective over its cell's median, pooled by host; "
        + racing.METHOD.replace("α split by Bonferroni", "α split over the pairs of hosts"),
        "hosts": [
            {
                **seen[key],
                "label": labels[key],
                "processes": sum(
                    1
                    for p in sweep.processes
                    if p.node is not None
                    and str(p.node.get("node_id") or p.node.get("hostname")) == key
                ),
                "relative": stat_json(relative[key]),
            }
            for key in keys
        ],
        "pairs": pairs,
        "differ": bool(slower),
        "answer": text,
    }
