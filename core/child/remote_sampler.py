"""Samples of the agent's process tree, taken beside it on a remote host.

Shipped with the agent over ``--host`` and run by the remote guardian. Standard library only,
read from ``/proc`` (Linux): the same fields as the local sampler's psutil readings (``cpu`` in
percent of one core for the whole tree, ``rss_mb``, ``threads``, ``procs``, ``sys_cpu``), so a
remote run's samples read as a local run's do; with the run's GPU (a ``gpu_sampler.Gpu``, where
NVML is there) its ``gpu_*`` fields too, of the same tree.
"""

from __future__ import annotations

import os
import time
from typing import Any

MB = 2**20
TREE_EVERY_S = 1.0
"""Finding the process tree scans all of /proc: done once a second, not every sample."""


def available() -> bool:
    return os.path.isfile("/proc/self/stat") and os.path.isfile("/proc/stat")


def _stat(pid: int) -> tuple[int, int, int] | None:
    """``(parent pid, CPU ticks, threads)`` of ``pid``; ``None`` once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rindex(b")") + 2 :].split()  # the name may hold spaces and parentheses
    # After the name: state, ppid, ... utime (14th field), stime (15th), num_threads (20th).
    return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[17])


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _system_ticks() -> tuple[int, int]:
    """``(busy, total)`` CPU ticks of the whole machine."""
    with open("/proc/stat", "rb") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class TreeSampler:
    """Samples ``pid`` and its descendants (compile workers too); ``gpu``: the run's device."""

    def __init__(self, pid: int, gpu: Any = None) -> None:
        self.root = pid
        self.gpu = gpu
        self._tree: list[int] = [pid]
        self._tree_at = 0.0
        self._ticks: dict[int, int] = {}
        self._at = time.monotonic()
        self._system = _system_ticks()

    def _find_tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = _stat(int(name))
                if stat is not None:
                    children.setdefault(stat[0], []).append(int(name))
        tree, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, []))
        return tree

    def sample(self) -> dict[str, Any] | None:
        """One reading; ``None`` once the root is gone, or going (its memory released: it is
        exiting, and what it does then is its teardown)."""
        now = time.monotonic()
        if now - self._tree_at >= TREE_EVERY_S:
            self._tree_at = now
            self._tree = self._find_tree()
        stats = {pid: s for pid in self._tree if (s := _stat(pid)) is not None}
        if self.root not in stats or not _rss(self.root):
            return None
        elapsed = max(now - self._at, 1e-6)
        # A process seen for the first time only starts its clock, as psutil's first reading.
        ticks = sum(s[1] - self._ticks.get(pid, s[1]) for pid, s in stats.items())
        self._ticks = {pid: s[1] for pid, s in stats.items()}
        self._at = now
        busy, total = _system_ticks()
        sys_cpu = 100.0 * (busy - self._system[0]) / max(total - self._system[1], 1)
        self._system = (busy, total)
        out: dict[str, Any] = {
            "cpu": round(100.0 * ticks / TICKS / elapsed, 1),
            "rss_mb": round(sum(_rss(pid) for pid in stats) / MB, 1),
            "threads": sum(s[2] for s in stats.values()),
            "procs": len(stats),
            "sys_cpu": round(sys_cpu, 1),
        }
        if self.gpu is not None:
            out.update(self.gpu.sample(set(stats)))
        return out
