"""Reads from disk as a cause, on any device: a slow warm-up call whose batch read from
storage (the agent's ``reads``: page-cache misses, as when a fresh server's first call loads
cuDNN's and cuBLAS's libraries, or a model's mapped weights are first touched), and a setup
phase that read, each named with what was read."""

from __future__ import annotations

from warmscope.core.base.units import num3
from warmscope.core.data.cause_kinds import DISK_READS, Cause
from warmscope.core.data.run import DiskRead, RunData

__all__ = ["disk_read_calls", "disk_read_cause", "mib", "phase_read_causes"]

DISK_READ_LEAST = 1 << 20
"""A batch that read at least this much from storage names it as a cause of its slowest call."""
DISK_READ_SLOW = 2.0
"""Where that call took at least this many times the run's steady p50 (a slow call)."""

COLD_FILES = (
    "files read as they were first used (libraries, mapped weights) that the page cache did "
    "not hold; a process started after it finds them there"
)
COUNTERS = "the child's I/O counters"


def phase_read_causes(data: RunData) -> list[Cause]:
    """What each setup phase read from disk, where it read enough to name."""
    return [
        Cause(
            DISK_READS,
            None,
            None,
            f"{mib(read)}{_faults(faults)}",
            phase=name,
            source=COUNTERS,
        )
        for name, (read, faults) in data.phase_reads.items()
        if read >= DISK_READ_LEAST
    ]


def disk_read_calls(data: RunData) -> dict[int, DiskRead]:
    """The warm-up calls whose batch read enough from storage to name it: each such batch's
    slowest call, with what the batch read. Only a shape's first call or a call before the
    run is steady, and slow (``DISK_READ_SLOW``): a steady model that reads as it goes pays
    that in every call, and its slowest call of a batch is slow by chance. A call profiled in
    this process is left out (the profiler's own start reads its libraries in its batch)."""
    if not data.disk_reads:
        return {}
    summary = data.summary()
    firsts = {first for first, _, _ in data.first_calls()}
    profiled = set(data.profiled_here())
    warm_from = summary.steady_from if summary.steady_from is not None else 0
    out: dict[int, DiskRead] = {}
    for read in data.disk_reads:
        if read.read_bytes < DISK_READ_LEAST:
            continue
        calls = [i for i in range(read.first, min(read.last + 1, data.count)) if i not in profiled]
        if not calls:
            continue
        slowest = max(calls, key=data.latency)
        if slowest not in firsts and slowest >= warm_from:
            continue
        p50 = summary.p50_ms
        if p50 is None or data.latency(slowest) >= DISK_READ_SLOW * p50:
            out[slowest] = read
    return out


def disk_read_cause(i: int, read: DiskRead) -> Cause:
    """Call ``i``'s reads from disk: what its batch read, and where."""
    where = (
        f"in calls {read.first}–{read.last} (one batch of the counters), this the slowest of them"
        if read.calls > 1
        else "in this call"
    )
    return Cause(
        DISK_READS,
        i,
        None,
        f"{mib(read.read_bytes)} read from disk{_faults(read.major_faults)} {where}: {COLD_FILES}",
        source=COUNTERS,
    )


def mib(read_bytes: int) -> str:
    """``199 MiB``."""
    return f"{num3(read_bytes / 2**20)} MiB"


def _faults(major_faults: int) -> str:
    """`` and 63 major page faults``; nothing for none."""
    if not major_faults:
        return ""
    return f" and {major_faults:,} major page fault{'s' if major_faults > 1 else ''}"
