"""How long the child's threads waited for a core: run-queue delay, read between calls.

The kernel keeps, for every thread, the time it spent runnable but not running
(``/proc/self/task/TID/schedstat``, its second field, in ns). The thread that calls the model
(the loop's) is the call's critical path: its delay between two readings is the time the calls
between them lost to other work on the machine, or to more threads than cores. The other
threads' delay is summed beside it (torch's intra-op workers: one that spins while it waits for
work is runnable all the while, so its delay is kept apart, not taken for the call's). With
them, the involuntary context switches of the process (``getrusage``: all threads, one call).

A reading costs about a microsecond per thread, so it is taken only after a call that ends at
least ``every_ns`` after the last reading: a call that long gets its own reading, a run of
short calls one reading for them all, and the cost per call stays far below the call's. The
thread list is refreshed with each batch (torch's intra-op pool starts inside the first
call). Child side: standard library only (the agent loads this folder by path).
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import threading
import time

KNOWN = os.path.exists("/proc/self/schedstat")
"""Where the kernel keeps run-queue delay (Linux with scheduler statistics)."""
EVERY_NS = 1_000_000
"""A reading is taken after a call that ends this long after the last one, at the least."""
COST_SHARE = 200
"""...and at least this many times what a reading costs: waits cost a call under 0.5%."""


class RunQueueWaits:
    """Readings of the child's run-queue delay, each pinned to the call it ended after."""

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}
        self._last: dict[str, int] = {}
        self.iterations: list[int] = []
        """The call each reading ended after."""
        self.since: list[int] = []
        """The first call each reading covers (the one after the last reading's)."""
        self.wait_ns: list[int] = []
        """The loop's thread's delay."""
        self.threads_ns: list[int] = []
        """Every other thread's, summed."""
        self.switches: list[int] = []
        self._main = str(threading.get_native_id())
        self._first = 0
        self._switches = _involuntary_switches()
        self.every_ns = EVERY_NS
        self.refresh(known=True)
        t0 = time.perf_counter_ns()
        self._read()
        _involuntary_switches()
        self._cost_ns = (time.perf_counter_ns() - t0) / max(1, len(self._fds))
        """What a reading costs, per thread."""
        self._pace()

    def _pace(self) -> None:
        self.every_ns = max(EVERY_NS, int(COST_SHARE * self._cost_ns * max(1, len(self._fds))))

    def refresh(self, known: bool = False) -> None:
        """Open the threads that started since the last refresh; close those that ended.

        A thread found here started after the last refresh (or ``known``: at the start), so
        all of its delay is new, unless ``known``."""
        try:
            tids = set(os.listdir("/proc/self/task"))
        except OSError:
            return
        for tid in list(self._fds):
            if tid not in tids:
                os.close(self._fds.pop(tid))
                self._last.pop(tid, None)
        for tid in tids - self._fds.keys():
            try:
                fd = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            self._fds[tid] = fd
            self._last[tid] = _delay(fd) if known else 0
        if not known:
            self._pace()

    def _read(self) -> tuple[int, int]:
        """The loop's thread's delay since the last reading, and the other threads' summed."""
        main = others = 0
        last = self._last
        for tid, fd in self._fds.items():
            now = _delay(fd)
            if now:
                if tid == self._main:
                    main = now - last[tid]
                else:
                    others += now - last[tid]
                last[tid] = now
        return main, others

    def take(self, iteration: int, now_ns: int) -> int:
        """A reading after ``iteration``; when the next one is due (a clock time)."""
        main, others = self._read()
        switches = _involuntary_switches()
        if main > 0 or others > 0 or switches > self._switches:
            self.iterations.append(iteration)
            self.since.append(self._first)
            self.wait_ns.append(max(0, main))
            self.threads_ns.append(max(0, others))
            self.switches.append(switches - self._switches)
        self._switches = switches
        self._first = iteration + 1
        return now_ns + self.every_ns

    def drain(self) -> tuple[list[int], ...] | None:
        """The readings since the last drain (``None``: none): since, iterations, the loop's
        thread's delay, the others', switches."""
        if not self.iterations:
            return None
        out = (self.since, self.iterations, self.wait_ns, self.threads_ns, self.switches)
        self.since, self.iterations, self.wait_ns, self.threads_ns, self.switches = (
            [],
            [],
            [],
            [],
            [],
        )
        return out

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def _delay(fd: int) -> int:
    """A thread's run-queue delay so far (ns); 0 once the thread has ended."""
    try:
        fields = os.pread(fd, 128, 0).split()
        return int(fields[1]) if len(fields) > 1 else 0
    except (OSError, ValueError):
        return 0


def _involuntary_switches() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def start() -> RunQueueWaits | None:
    """Readings from now, where the kernel keeps run-queue delay (``KNOWN``)."""
    return RunQueueWaits() if KNOWN else None


def usable_cpus() -> tuple[int, str]:
    """How many cores this process can run on at once, and what bounds it: its CPU affinity
    (``taskset``, a container's cpuset) or its cgroup's CPU quota (``cpu.max``), whichever is
    fewer."""
    try:
        cpus, bound = len(os.sched_getaffinity(0)), "affinity"
    except (AttributeError, OSError):
        cpus, bound = os.cpu_count() or 1, "cores"
    quota = _cgroup_quota()
    if quota is not None and quota < cpus:
        return quota, "cgroup CPU quota"
    return cpus, bound


def _cgroup_quota() -> int | None:
    """The tightest ``cpu.max`` from this process's cgroup (v2) up to the root, in cores
    (rounded up); ``None`` where none is set or it cannot be read."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            line = next((x for x in f if x.startswith("0::")), None)
    except OSError:
        return None
    if line is None:
        return None
    path = "/sys/fs/cgroup" + line[3:].strip().rstrip("/")
    best: int | None = None
    while path.startswith("/sys/fs/cgroup"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(path + "/cpu.max", encoding="ascii") as f:
                quota, period = f.read().split()[:2]
            if quota != "max":
                cores = max(1, math.ceil(int(quota) / int(period)))
                best = cores if best is None else min(best, cores)
        if path == "/sys/fs/cgroup":
            break
        path = os.path.dirname(path)
    return best
