"""One forward pass under torch.profiler, boiled down to what the parent needs.

Runs in the agent (it receives ``torch``; it never imports it at module level, so the parent
can import this file's constants without torch). For the profiled iteration it reports the
operators by self and total time with call counts and input shapes (top N, the rest summed),
the time inside top-level operators, and the wall time no operator accounts for: time spent
in the JIT, the compiler or Python around the operators.
"""

from __future__ import annotations

import time
from typing import Any

TOP_N = 25


def profiled_call(
    torch: Any, model: Any, args: list[Any], kwargs: dict[str, Any], sync: Any, cuda: bool
) -> tuple[int, int, Any]:
    """Run one forward pass under the profiler; (t0, t1, profiler) with perf_counter_ns times."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
        t0 = time.perf_counter_ns()
        model(*args, **kwargs)
        if sync is not None:
            sync()
        t1 = time.perf_counter_ns()
    return t0, t1, prof


def breakdown(prof: Any, wall_ms: float, top_n: int = TOP_N) -> dict[str, Any]:
    """Operators of one profiled iteration, and what no operator accounts for."""
    events = prof.events()
    top_level = [e for e in events if e.cpu_parent is None]
    ops_ms = sum(e.cpu_time_total for e in top_level) / 1000.0
    rows: dict[str, dict[str, Any]] = {}
    for avg in prof.key_averages(group_by_input_shape=True):
        row = rows.setdefault(
            avg.key,
            {
                "name": avg.key,
                "self_ms": 0.0,
                "total_ms": 0.0,
                "calls": 0,
                "shapes": "",
                "_best": -1.0,
            },
        )
        row["self_ms"] += avg.self_cpu_time_total / 1000.0
        row["total_ms"] += avg.cpu_time_total / 1000.0
        row["calls"] += avg.count
        device_ms = getattr(avg, "self_device_time_total", 0.0) / 1000.0
        if device_ms:
            row["device_ms"] = row.get("device_ms", 0.0) + device_ms
        if avg.self_cpu_time_total > row["_best"]:
            row["_best"] = avg.self_cpu_time_total
            row["shapes"] = _shapes(getattr(avg, "input_shapes", None))
    ordered = sorted(rows.values(), key=lambda r: -r["self_ms"])
    for row in ordered:
        row.pop("_best")
        for key in ("self_ms", "total_ms", "device_ms"):
            if key in row:
                row[key] = round(row[key], 4)
    kept, rest = ordered[:top_n], ordered[top_n:]
    return {
        "wall_ms": round(wall_ms, 4),
        "ops_ms": round(ops_ms, 4),
        "unaccounted_ms": round(max(0.0, wall_ms - ops_ms), 4),
        "top_level": sorted({e.name for e in top_level}),
        "ops": kept,
        "rest": {
            "operators": len(rest),
            "self_ms": round(sum(r["self_ms"] for r in rest), 4),
            "calls": sum(r["calls"] for r in rest),
        },
    }


MODULE_LOADING = ("Runtime Triggered Module Loading", "Lazy Function Loading")
"""CUPTI's records of CUDA lazy loading (the parent's ``trace_evidence`` reads them too)."""
WATCHED_OPS = ("aten::cudnn_convolution", "aten::cudnn_convolution_transpose")
"""Operators whose inner runtime calls are counted: where cuDNN autotunes."""


def cuda_summary(prof: Any) -> dict[str, Any]:
    """Every CUDA runtime call and CUPTI overhead record of the profiled call, counted and
    timed (the top operators alone may leave them out), the kernels, and the runtime calls
    made inside each watched operator: the evidence of CUDA first use and autotuning, kept
    in the record whether or not its trace travels with it."""
    calls: dict[str, list[float]] = {}
    overhead: dict[str, list[float]] = {}
    kernels = [0, 0.0]
    runtime: list[tuple[float, str]] = []
    watched: list[tuple[float, float, str]] = []
    for e in prof.events():
        name = str(e.name)
        start, end = e.time_range.start, e.time_range.end
        ms = (end - start) / 1000.0
        on_device = "CUDA" in str(getattr(e, "device_type", ""))
        if on_device:
            kernels[0] += 1
            kernels[1] += ms
        elif name in MODULE_LOADING or name == "Activity Buffer Request":
            row = overhead.setdefault(name, [0, 0.0])
            row[0] += 1
            row[1] += ms
        elif name.startswith(("cuda", "cu")) and not name.startswith("cudnn"):
            row = calls.setdefault(name, [0, 0.0])
            row[0] += 1
            row[1] += ms
            runtime.append((start, name))
        elif name in WATCHED_OPS:
            watched.append((start, end, name))
    inside: dict[str, dict[str, int]] = {}
    for begin, end, op in watched:
        inner = inside.setdefault(op, {})
        for t, name in runtime:
            if begin <= t <= end:
                inner[name] = inner.get(name, 0) + 1
    return {
        "calls": {k: [int(n), round(ms, 4)] for k, (n, ms) in calls.items()},
        "overhead": {k: [int(n), round(ms, 4)] for k, (n, ms) in overhead.items()},
        "kernels": [int(kernels[0]), round(kernels[1], 4)],
        "inside": inside,
    }


def _shapes(shapes: Any) -> str:
    if not shapes:
        return ""
    parts = []
    for shape in shapes:
        parts.append("x".join(str(d) for d in shape) if shape else "-")
    return ", ".join(parts)[:200]
