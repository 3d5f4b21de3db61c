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


def _node_key(node: dict[str, Any]) -> str:
    """The key a process's machine is known by: its node id, else its hostname."""
    return str(node.get("node_id") or node.get("hostname"))


def host_factor(sweep: SweepState) -> dict[str, Any] | None:
    """Whether the machines a sweep ran on differ beyond noise, the host taken as one more
    factor; ``None`` where its processes ran on one machine (or say nowhere).

    Cells differ in their settings, so each process's objective is taken over its cell's
    median (1.0: as its cell's typical process) and these ratios are pooled by host; every
    pair of hosts is then compared with the sweep's exact rank test, α split over the pairs
    of hosts. A slow node shows as a host beyond noise above another, not averaged away."""
    values = sweep.values()
    seen, relative = _relative_by_host(sweep, values)
    if len(seen) < 2:
        return None
    labels = _host_labels(seen)
    level = pair_level(len(seen))
    keys = sorted(seen, key=lambda k: statistics.median(relative[k]) if relative[k] else math.inf)
    pairs = _host_pairs(keys, relative, labels, level)
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
        text = f"hosts within noise of each other on the {name}" + _too_few_text(
            pairs, relative, level
        )
    one_host = _one_host_cells(sweep, values, labels)
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
                    1 for p in sweep.processes if p.node is not None and _node_key(p.node) == key
                ),
                "relative": stat_json(relative[key]),
            }
            for key in keys
        ],
        "pairs": pairs,
        "differ": bool(slower),
        "answer": text,
    }


def _relative_by_host(
    sweep: SweepState, values: list[list[float]]
) -> tuple[dict[str, dict[str, Any]], dict[str, list[float]]]:
    """Each machine a process ran on (by ``_node_key``, as first seen), and the objective of each
    of its processes over the median of the process's cell."""
    medians = {c: statistics.median(v) for c, v in enumerate(values) if v}
    seen: dict[str, dict[str, Any]] = {}
    relative: dict[str, list[float]] = {}
    for p in sweep.processes:
        if p.node is None:
            continue
        key = _node_key(p.node)
        seen.setdefault(key, p.node)
        relative.setdefault(key, [])
        median = medians.get(p.cell)
        if p.value is not None and median:
            relative[key].append(p.value / median)
    return seen, relative


def _host_labels(seen: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each machine's label: its hostname, told apart by node id where hostnames repeat."""
    counts: dict[str, int] = {}
    for node in seen.values():
        name = str(node.get("hostname", "?"))
        counts[name] = counts.get(name, 0) + 1
    return {key: host_label(node, counts) for key, node in seen.items()}


def _host_pairs(
    keys: list[str], relative: dict[str, list[float]], labels: dict[str, str], level: float
) -> list[dict[str, Any]]:
    """Every pair of hosts compared by the exact rank test at ``level``, the lower first."""
    pairs: list[dict[str, Any]] = []
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            cmp = racing.compare(relative[a], relative[b], level)
            if cmp is not None:
                pairs.append({"a": labels[a], "b": labels[b], "comparison": cmp.to_json()})
    return pairs


def _too_few_text(
    pairs: list[dict[str, Any]], relative: dict[str, list[float]], level: float
) -> str:
    """`` (3–4 processes a host cannot tell 3 hosts apart at 95%: 6 or more each)``, where no
    pair of hosts could have been beyond noise; empty otherwise."""
    counts_per = sorted(len(v) for v in relative.values())
    need = needed_processes(len(relative))
    if (
        pairs
        and not any(racing.smallest_p(*p["comparison"]["n"]) <= level for p in pairs)
        and need is not None
    ):
        return (
            f" ({counts_per[0]}–{counts_per[-1]} processes a host cannot tell "
            f"{len(relative)} hosts apart at 95%: {need} or more each)"
        )
    return ""


def _one_host_cells(
    sweep: SweepState, values: list[list[float]], labels: dict[str, str]
) -> list[str]:
    """``a ran only on box``: each cell of several processes that all ran on one host."""
    # A cell whose processes all ran on one host measures that host too: its figures cannot
    # tell the setting from the machine.
    where: dict[int, set[str]] = {}
    for p in sweep.processes:
        if p.node is not None and p.value is not None:
            where.setdefault(p.cell, set()).add(_node_key(p.node))
    return [
        f"{sweep.cells[c].label} ran only on {labels[next(iter(h))]}"
        for c, h in sorted(where.items())
        if len(h) == 1 and len(values[c]) > 1
    ]
