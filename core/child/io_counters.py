"""What the child read from storage: its own counters, read between batches of calls and around
setup phases, never inside a timed call.

A file or a library read as it is first used, where the page cache lacks it, makes the call (or
the phase) that uses it wait on the disk: a fresh server's first CUDA call reads cuBLAS and
cuDNN, a model's mapped weights are read as they are first touched. Child side: standard
library only (the agent loads this folder by path).
"""

from __future__ import annotations

import resource
import sys

KNOWN = sys.platform.startswith("linux")
"""Where ``ru_inblock`` counts 512-byte blocks read from storage (Linux); elsewhere it counts
operations, and nothing is said."""


def disk_counters() -> tuple[int, int]:
    """Bytes this process has read from storage, and its major page faults, all its threads
    together (one ``getrusage``, about a microsecond)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_inblock * 512, usage.ru_majflt


class DiskReads:
    """The counters' growth since the last reading."""

    def __init__(self) -> None:
        self.last = disk_counters()

    def since_last(self) -> tuple[int, int]:
        now = disk_counters()
        read, faults = now[0] - self.last[0], now[1] - self.last[1]
        self.last = now
        return read, faults


def start() -> DiskReads | None:
    """A reading to measure from, where the counters say bytes (``KNOWN``)."""
    return DiskReads() if KNOWN else None
