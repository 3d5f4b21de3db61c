"""A run's processes held by the kernel: a cgroup v2 of its own, ended as one.

A model's helper that double-forks, calls ``setsid`` and scrubs its environment cannot be found by
the run id (``proctree``), but it cannot leave its cgroup: the kernel puts every descendant of the
child in the cgroup the child is in. Where a cgroup v2 hierarchy is writable here (root, or a
subtree systemd delegated to the user), each run gets ``warmscope-<run id>`` beside warmscope's own
cgroup; the run's end writes ``cgroup.kill``, which ends every member at once, and the cgroup's
``memory.max`` caps the run's memory where the memory controller is enabled for it (systemd's
units are the model). Elsewhere ``create`` says why not, and the run id search remains.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warmscope.core.data.settings.process_fields import MAX_PROCS

MOUNTINFO = Path("/proc/self/mountinfo")
SELF_CGROUP = Path("/proc/self/cgroup")


def v2_mount(mountinfo: str) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup``, or ``…/unified`` on a
    hybrid system), from ``/proc/self/mountinfo``'s text."""
    return _mount(mountinfo, lambda kind, _options: kind == "cgroup2")


def v1_mount(mountinfo: str, controller: str) -> Path | None:
    """Where a v1 hierarchy holding ``controller`` is mounted (``/sys/fs/cgroup/pids``)."""
    return _mount(
        mountinfo, lambda kind, options: kind == "cgroup" and controller in options.split(",")
    )


def _mount(mountinfo: str, wanted: Callable[[str, str], bool]) -> Path | None:
    """The mount point of the first line whose file system type and super options
    ``wanted(type, options)`` takes."""
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        parts = right.split(" ")
        if sep and wanted(parts[0], parts[2] if len(parts) >= 3 else ""):
            fields = left.split(" ")
            if len(fields) >= 5:
                return Path(fields[4])
    return None


def v1_path(proc_cgroup: str, controller: str) -> str | None:
    """This process's path in the v1 hierarchy of ``controller`` (``/proc/self/cgroup``)."""
    for line in proc_cgroup.splitlines():
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        if controller in controllers.split(","):
            return path.strip() or "/"
    return None


def own_path(proc_cgroup: str) -> str | None:
    """This process's cgroup v2 path (``/user.slice/…``) from ``/proc/self/cgroup``'s text."""
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


@dataclass
class RunCgroup:
    """The cgroup of one run."""

    path: Path
    memory_limited: bool = False
    """Whether ``memory.max`` holds the run's memory limit (else the caller caps by rlimit)."""
    pids_path: Path | None = None
    """A v1 ``pids`` cgroup of the run's own, where the v2 one has no pids controller."""

    @classmethod
    def create(cls, run_id: str, memory_limit: int | None = None) -> RunCgroup | str:
        """A new cgroup for the run, or the reason there is none here (a line)."""
        try:
            mount = v2_mount(MOUNTINFO.read_text())
            own = own_path(SELF_CGROUP.read_text())
        except OSError as exc:
            return f"no cgroup v2 here ({exc.strerror})"
        if mount is None or own is None:
            return "no cgroup v2 here"
        parent = mount / own.lstrip("/")
        path = parent / f"warmscope-{run_id}"
        try:
            path.mkdir()
        except OSError as exc:
            return f"cgroup v2 at {parent} is not writable ({exc.strerror})"
        group = cls(path)
        if memory_limit is not None and "memory" in group._read("cgroup.controllers").split():
            try:
                (path / "memory.max").write_text(str(memory_limit))
                (path / "memory.swap.max").write_text("0")
                group.memory_limited = True
            except OSError:
                with contextlib.suppress(OSError):
                    (path / "memory.max").write_text("max")
        return group

    def _read(self, name: str) -> str:
        try:
            return (self.path / name).read_text()
        except OSError:
            return ""

    def add(self, pid: int) -> bool:
        """Move ``pid`` (the child, before it runs any model code) into the cgroup."""
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
        except OSError:
            return False
        return True

    def pids(self) -> list[int]:
        """Every process in the cgroup now."""
        return [int(p) for p in self._read("cgroup.procs").split()]

    def kill(self, timeout: float = 2.0) -> list[int]:
        """End every member at once (``cgroup.kill``, or SIGKILL to each on kernels before
        5.14) and wait until none is left; the pids it found."""
        found = self.pids()
        if not found:
            return []
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            for pid in found:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        return found

    def end(self) -> list[int]:
        """Kill every member and remove the cgroup; the pids it ended."""
        ended = self.kill()
        self.remove()
        return ended

    def oom_kills(self) -> int:
        """How many members the kernel's OOM killer ended at this cgroup's limit."""
        for line in self._read("memory.events").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def peak_bytes(self) -> int | None:
        """The most memory the run's processes held together (``memory.peak``, Linux 5.19+)."""
        text = self._read("memory.peak").strip()
        return int(text) if text.isdigit() else None

    def bound_processes(self, pid: int, max_procs: int) -> str | None:
        """At most ``max_procs`` processes and threads in the run at once: ``pids.max`` of
        its v2 cgroup, else of a v1 ``pids`` cgroup of its own with ``pid`` in it; how, or
        ``None`` where neither can be had."""
        if "pids" in self._read("cgroup.controllers").split():
            with contextlib.suppress(OSError):
                (self.path / "pids.max").write_text(str(max_procs))
                return "cgroup pids.max"
        try:
            mount = v1_mount(MOUNTINFO.read_text(), "pids")
            own = v1_path(SELF_CGROUP.read_text(), "pids")
        except OSError:
            return None
        if mount is None or own is None:
            return None
        path = mount / own.lstrip("/") / self.path.name
        try:
            path.mkdir()
        except OSError:
            return None
        try:
            (path / "pids.max").write_text(str(max_procs))
            (path / "cgroup.procs").write_text(str(pid))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        self.pids_path = path
        return "cgroup v1 pids.max"

    def remove(self, timeout: float = 1.0) -> None:
        """Remove the cgroup once it is empty (members that just got SIGKILL take a moment)."""
        if self.pids_path is not None:
            _rmdir_when_empty(self.pids_path, timeout)
        _rmdir_when_empty(self.path, timeout)


def _rmdir_when_empty(path: Path, timeout: float) -> None:
    """Remove a cgroup once it is empty (members that just got SIGKILL take a moment)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                return
        time.sleep(0.01)


def contain(
    run_id: str, pid: int, memory_limit: int | None = None, max_procs: int = MAX_PROCS
) -> tuple[RunCgroup | None, dict[str, Any]]:
    """Put the run's child ``pid`` into a cgroup of its own, and cap its memory; the cgroup
    (``None`` where there is none) and, for the record, how the run's processes are held, how
    its memory is capped, and why."""
    made = RunCgroup.create(run_id, memory_limit)
    group: RunCgroup | None = None
    how: dict[str, Any]
    if isinstance(made, str):
        how = {"by": "run id", "why": made}
    elif not made.add(pid):
        made.remove()
        how = {"by": "run id", "why": f"cannot move the child into {made.path}"}
    else:
        group, how = made, {"by": "cgroup", "path": str(made.path)}
    how["max_procs"] = max_procs
    procs_by = group.bound_processes(pid, max_procs) if group is not None else None
    if procs_by is None and os.geteuid() != 0:
        # No pids controller: the user's own process count (root is not held by it).
        with contextlib.suppress(OSError, ValueError):
            resource.prlimit(pid, resource.RLIMIT_NPROC, (max_procs, max_procs))
            procs_by = "RLIMIT_NPROC"
    how["procs_by"] = procs_by or "none: no pids controller here, and RLIMIT_NPROC holds no root"
    if memory_limit is not None:
        how["memory_limit"] = memory_limit
        if group is not None and group.memory_limited:
            how["memory_by"] = "cgroup memory.max"
        else:
            # No memory controller for the run: the child's address space instead (what it
            # maps, a looser bound than what it uses, but one no allocation can pass).
            resource.prlimit(pid, resource.RLIMIT_AS, (memory_limit, memory_limit))
            how["memory_by"] = "RLIMIT_AS"
    return group, how


def oom_kills_here() -> int:
    """How many processes the OOM killer has ended in warmscope's own memory cgroup (v2's
    ``memory.events``, v1's ``memory.oom_control``): a rise during a run that died from SIGKILL
    means the machine's or its container's limit ended it."""
    try:
        lines = SELF_CGROUP.read_text().splitlines()
        mount = v2_mount(MOUNTINFO.read_text())
    except OSError:
        return 0
    places = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "" and mount is not None:
            places.append(mount / path.lstrip("/") / "memory.events")
        elif "memory" in controllers.split(","):
            places.append(Path("/sys/fs/cgroup/memory") / path.lstrip("/") / "memory.oom_control")
    total = 0
    for place in places:
        with contextlib.suppress(OSError, ValueError):
            for entry in place.read_text().splitlines():
                key, _, value = entry.partition(" ")
                if key == "oom_kill":
                    total += int(value)
    return total


def out_of_memory(
    group: RunCgroup | None,
    limit: str | None,
    returncode: int,
    oom_killed_here: bool,
    error: dict[str, Any] | None,
    rss_mb: list[float],
) -> str | None:
    """Why a run ran out of memory, in words, where it did; ``None`` where it did not.

    ``group``: the run's cgroup; ``limit``: its ``--memory-limit`` as written;
    ``oom_killed_here``: the OOM killer ended a process of warmscope's own memory cgroup during
    the run; ``error``: the child's error message; ``rss_mb``: the child's sampled RSS."""
    peak = f"; its RSS peaked at {max(rss_mb):,.0f} MB" if rss_mb else ""
    if group is not None and group.memory_limited and group.oom_kills():
        held = group.peak_bytes()
        if held:
            peak = f"; it held {held / 2**20:,.0f} MB at most"
        return f"the OOM killer ended it at --memory-limit {limit}{peak}"
    if returncode == -signal.SIGKILL and oom_killed_here:
        return f"the kernel's OOM killer ended it (the machine's or its container's limit){peak}"
    if limit is not None and error is not None and not (group and group.memory_limited):
        message = str(error.get("message", ""))
        if "MemoryError" in message or "alloc" in message.lower():
            first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
            return f"{first[:200]} (under --memory-limit {limit}, as RLIMIT_AS){peak}"
    return None
