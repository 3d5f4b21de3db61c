"""What a profiled call's CUDA activity says: calls to the CUDA runtime, CUPTI's overhead
records, kernels, and what ran inside each operator, boiled down from its evidence.

A profiled iteration leaves three kinds of evidence, from the most to the least complete:

- its Chrome trace (``profile["trace"]``, ``torch.profiler``'s ``export_chrome_trace``): every
  runtime call, CUPTI overhead record (``Runtime Triggered Module Loading``, ``Lazy Function
  Loading``) and kernel, each with its time span, so what ran inside an operator is known;
- the profile line's ``cuda`` summary (every runtime call and overhead record by name, counted
  and timed; written by warmscope since the GPU runs);
- the profile line's ``ops`` (the top operators by self time: runtime calls and overhead
  records among them only where they were among the costliest).

``summarize`` reads a trace's events, ``from_profile`` the line; both are pure. ``load`` finds
a trace where the record says it is or beside the record (``.gz`` too, as records travel),
bounded: a trace is untrusted input like the record that names it.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "LAUNCHES",
    "MODULE_LOADING",
    "SYNCS",
    "Evidence",
    "for_run",
    "from_profile",
    "load",
    "summarize",
]

MODULE_LOADING = ("Runtime Triggered Module Loading", "Lazy Function Loading")
"""CUPTI's overhead records of CUDA lazy loading: a module, a function, loaded at first use."""
LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")
SYNCS = ("cudaEventSynchronize", "cudaDeviceSynchronize", "cudaStreamSynchronize")
TIMING = ("cudaEventRecord", "cudaEventRecordWithFlags", *SYNCS)
"""Calls an autotuner makes between its candidates: events around each, a wait for each."""
WATCHED_OPS = ("aten::cudnn_convolution", "aten::cudnn_convolution_transpose")
"""Operators whose inner calls are counted (``inside``): where cuDNN autotunes."""
MAX_TRACE_BYTES = 128 * 2**20
"""A trace larger than this (as read, after decompression) is not read: one profiled call of a
real model writes a few MB."""


@dataclass
class Evidence:
    """One profiled call's CUDA activity."""

    calls: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Runtime (and driver) calls by name: ``(count, ms)``."""
    overhead: dict[str, tuple[int, float]] = field(default_factory=dict)
    """CUPTI overhead records by name: ``(count, ms)``."""
    kernels: tuple[int, float] = (0, 0.0)
    """Kernels run: count and device time (ms)."""
    inside: dict[str, dict[str, int]] = field(default_factory=dict)
    """For each watched operator (``WATCHED_OPS``), the runtime calls made inside it, counted."""
    complete: bool = True
    """False where the evidence is the top operators only (``ops``): a count may be missing."""
    source: str = "trace"

    def count(self, names: Iterable[str]) -> int:
        return sum(
            self.calls.get(n, (0, 0.0))[0] + self.overhead.get(n, (0, 0.0))[0] for n in names
        )

    def ms(self, names: Iterable[str]) -> float:
        return sum(
            self.calls.get(n, (0, 0.0))[1] + self.overhead.get(n, (0, 0.0))[1] for n in names
        )

    def inside_count(self, op: str, names: Iterable[str]) -> int:
        inner = self.inside.get(op, {})
        return sum(inner.get(n, 0) for n in names)


def _add(table: dict[str, tuple[int, float]], name: str, n: int, ms: float) -> None:
    count, total = table.get(name, (0, 0.0))
    table[name] = (count + n, total + ms)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def summarize(events: Iterable[Any]) -> Evidence:
    """A Chrome trace's events (``traceEvents``) as evidence. Events of the wrong shape are
    skipped: the trace may come from anywhere."""
    out = Evidence(source="trace")
    watched: list[tuple[float, float, str]] = []
    runtime: list[tuple[float, str]] = []
    kernels, kernel_ms = 0, 0.0
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat, name = e.get("cat"), e.get("name")
        if not isinstance(name, str):
            continue
        ts, dur = _number(e.get("ts")), _number(e.get("dur"))
        if cat in ("cuda_runtime", "cuda_driver"):
            _add(out.calls, name, 1, dur / 1000)
            runtime.append((ts, name))
        elif cat == "overhead":
            _add(out.overhead, name, 1, dur / 1000)
        elif cat == "kernel":
            kernels += 1
            kernel_ms += dur / 1000
        elif cat == "cpu_op" and name in WATCHED_OPS:
            watched.append((ts, ts + dur, name))
    out.kernels = (kernels, kernel_ms)
    if watched:
        runtime.sort()
        starts = [t for t, _ in runtime]
        for begin, end, name in watched:
            inner = out.inside.setdefault(name, {})
            k = bisect_left(starts, begin)
            while k < len(runtime) and runtime[k][0] <= end:
                call = runtime[k][1]
                inner[call] = inner.get(call, 0) + 1
                k += 1
    return out


def from_profile(profile: dict[str, Any]) -> Evidence:
    """The evidence a profile line holds without its trace: its ``cuda`` summary where the
    agent wrote one, else what its top operators show (``complete`` False)."""
    summary = profile.get("cuda")
    if isinstance(summary, dict):
        out = Evidence(source="profile")
        for name, value in summary.get("calls", {}).items():
            if _pair(value):
                out.calls[str(name)] = (int(value[0]), float(value[1]))
        for name, value in summary.get("overhead", {}).items():
            if _pair(value):
                out.overhead[str(name)] = (int(value[0]), float(value[1]))
        kernels: Any = summary.get("kernels")
        if _pair(kernels):
            out.kernels = (int(kernels[0]), float(kernels[1]))
        inside = summary.get("inside")
        if isinstance(inside, dict):
            for op, calls in inside.items():
                if isinstance(calls, dict):
                    out.inside[str(op)] = {
                        str(k): int(v) for k, v in calls.items() if isinstance(v, int)
                    }
        return out
    out = Evidence(complete=False, source="ops")
    for op in profile.get("ops", []):
        if not isinstance(op, dict) or not isinstance(op.get("name"), str):
            continue
        name = op["name"]
        calls = op.get("calls")
        n = calls if isinstance(calls, int) else 1
        ms = _number(op.get("self_ms"))
        if name in MODULE_LOADING:
            _add(out.overhead, name, n, ms)
        elif name.startswith(("cuda", "cu")) and not name.startswith("cudnn"):
            _add(out.calls, name, n, ms)
    return out


def _pair(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and isinstance(value[0], int)
        and isinstance(value[1], (int, float))
    )


def candidates(path: str, record: Path | None) -> list[Path]:
    """Where a profile's trace may be: as recorded, then beside the record (a record copied
    from the machine that ran it keeps its traces beside it, gzipped or not)."""
    recorded = Path(path)
    out = [recorded, recorded.with_name(recorded.name + ".gz")]
    if record is not None:
        here = record.parent / recorded.name
        out += [here, here.with_name(here.name + ".gz")]
    return out


def load(path: str, record: Path | None) -> Evidence | None:
    """The trace a profile names, summarized; ``None`` where none of its places holds a
    readable trace within the bound. Each file is read once a process (every view of a run
    asks again)."""
    for place in candidates(path, record):
        try:
            info = os.stat(place)
        except (OSError, ValueError):
            continue
        key = (str(place), info.st_size, info.st_mtime_ns)
        if key not in _read:
            events = _read_events(place)
            _read[key] = None if events is None else summarize(events)
            while len(_read) > READ_CACHE:
                _read.pop(next(iter(_read)))
        if _read[key] is not None:
            return _read[key]
    return None


READ_CACHE = 64
_read: dict[tuple[str, int, int], Evidence | None] = {}


def _read_events(path: Path) -> list[Any] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TRACE_BYTES:
        return None  # a device, a pipe or a folder named as a trace: never opened
    try:
        with open(path, "rb") as raw:
            stream: Any = gzip.GzipFile(fileobj=raw) if path.suffix == ".gz" else raw
            data = stream.read(MAX_TRACE_BYTES + 1)
        if len(data) > MAX_TRACE_BYTES:
            return None
        doc = json.loads(data)
    except (OSError, EOFError, ValueError, gzip.BadGzipFile, RecursionError):
        return None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    return events if isinstance(events, list) else None


def for_run(data: Any) -> Callable[[int], Evidence | None]:
    """The evidence of each profiled iteration of ``data`` (a ``RunData``): its trace where one
    is found, read once; else ``None`` (the profile line's own evidence is the caller's)."""
    record = Path(data.record_path) if data.record_path else None
    cache: dict[int, Evidence | None] = {}

    def evidence(i: int) -> Evidence | None:
        if i not in cache:
            profile = data.profiles.get(i) or {}
            trace = profile.get("trace")
            source = profile.get("source")
            beside = Path(source) if isinstance(source, str) and source else record
            found = load(trace, beside) if isinstance(trace, str) else None
            if found is None and isinstance(trace, str) and record is not None:
                found = load(trace, record)
            cache[i] = found
        return cache[i]

    return evidence
