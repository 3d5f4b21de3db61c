"""Owning a run's whole process tree: find every process of a run, signal it, end it.

The agent is started in its own session and process group, so one ``killpg`` reaches most of
what a model starts. It does not reach helpers that leave the group: ``setsid``, a double fork,
or a daemonising library put a process in another session, re-parented to init, where neither
the process group nor the parent/child tree leads to it. What every such helper keeps is the
environment it inherited, and the parent puts ``WARMSCOPE_RUN_ID=<run id>`` in the agent's:
scanning ``/proc/*/environ`` for that entry finds them.

The converse escape, a descendant that scrubs its environment (``exec`` with a clean one, or a
library such as ``setproctitle`` overwriting the memory ``/proc/PID/environ`` shows), is covered
while the agent lives by following the agent's children. A process that does both, scrubs its
environment and leaves the tree, cannot be told apart from an unrelated process.

Linux reads ``/proc`` directly (``members`` over ~400 processes, 250 of them the run's: about
20 ms); other systems go through psutil. Processes that end, change or are reused mid-scan are skipped, never
raised: every function here tolerates the races a hostile model can cause.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable

import psutil

RUN_ID_VAR = "WARMSCOPE_RUN_ID"

KILL_WAIT_S = 1.0
"""After SIGKILL: how long to wait for the kernel to tear a process down (GPU teardown is slow)."""

KILL_ROUNDS = 3
"""SIGKILL rounds, each after a fresh scan: catches children forked while the last round landed."""

_GONE = (psutil.NoSuchProcess, psutil.ZombieProcess, ProcessLookupError)
_RACES = (psutil.Error, OSError)
_PROC = "/proc"


def members(run_id: str, root_pid: int | None = None) -> list[psutil.Process]:
    """Every live process of the run, excluding the calling process.

    A member is a live (not zombie) process whose environment holds ``WARMSCOPE_RUN_ID=run_id``,
    the root itself, or any descendant of ``root_pid`` (even one that scrubbed its environment).
    The root counts only while it is the caller's own child or carries the run id: a root that
    has been reaped may have its pid reused by an unrelated process, whose tree is not ours.
    """
    pids, _ = _scan(run_id, root_pid)
    return _processes(pids)


def signal_all(run_id: str, root_pid: int | None, sig: int) -> int:
    """Send ``sig`` to every member and to the root's process group; return how many members
    were signalled (processes reached only through the group are not counted)."""
    pids, root_live = _scan(run_id, root_pid)
    if root_live and root_pid is not None:
        _killpg(root_pid, sig)
    return _send(_processes(pids), sig)


def end_all(run_id: str, root_pid: int | None, grace: float = 0.5) -> list[int]:
    """SIGTERM every member, SIGKILL what is left after ``grace`` seconds; return the pids still
    alive after that (normally none). Never raises for processes that end or change meanwhile.

    Zombies count as ended: they hold no resources but a pid, and reaping the caller's own
    children is left to their owner (its ``Popen`` keeps the exit status that way).
    """
    alive: list[psutil.Process] = []
    procs = _signal_scan(run_id, root_pid, signal.SIGTERM)
    if procs:
        _send(procs, signal.SIGCONT)  # a stopped process acts on SIGTERM only once continued
        alive = _wait_ended(procs, grace)
    for _ in range(KILL_ROUNDS):
        # Scan again each round: a process may fork between a scan and its death.
        targets = _signal_scan(run_id, root_pid, signal.SIGKILL, alive)
        if not targets:
            return []
        alive = _wait_ended(targets, KILL_WAIT_S)
    return sorted(p.pid for p in _merge(alive, members(run_id, root_pid)))


def _scan(run_id: str, root_pid: int | None) -> tuple[set[int], bool]:
    """Member pids, and whether the root is live and trusted (see ``members``)."""
    if not run_id or "\0" in run_id:
        raise ValueError(f"not a run id: {run_id!r}")
    me = os.getpid()
    table = _table_linux(run_id) if os.path.isdir(_PROC) else _table_psutil(run_id)
    carriers = {pid for pid, (_, has_id) in table.items() if has_id}
    root_live = (
        root_pid is not None
        and root_pid in table
        and (table[root_pid][0] == me or table[root_pid][1])
    )
    found = set(carriers)
    if root_live and root_pid is not None:
        # Parent -> children from one snapshot; walking it catches scrubbed descendants.
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        seen: set[int] = set()
        stack = [root_pid]
        while stack:
            pid = stack.pop()
            if pid not in seen:
                seen.add(pid)
                stack.extend(children.get(pid, ()))
        found |= seen
    found.discard(me)
    return found, root_live


def _table_linux(run_id: str) -> dict[int, tuple[int, bool]]:
    """pid -> (ppid, carries the run id) for every live, non-zombie process, from ``/proc``."""
    needle = b"\0" + f"{RUN_ID_VAR}={run_id}".encode() + b"\0"
    uid = os.getuid()
    table: dict[int, tuple[int, bool]] = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        base = f"{_PROC}/{name}"
        try:
            with open(f"{base}/stat", "rb") as f:
                stat = f.read()
            # The command name may hold spaces and parentheses: fields start after the last ')'.
            fields = stat[stat.rfind(b")") + 2 :].split()
            if fields[0] in (b"Z", b"X"):
                continue  # a zombie is not live, and its environment is gone anyway
            ppid = int(fields[1])
            has_id = False
            # Only our own processes: reading another user's environment fails anyway.
            if os.stat(base).st_uid == uid:
                with open(f"{base}/environ", "rb") as f:
                    has_id = needle in b"\0" + f.read() + b"\0"
        except (OSError, ValueError, IndexError):
            continue  # ended mid-scan, or not ours to read
        table[int(name)] = (ppid, has_id)
    return table


def _table_psutil(run_id: str) -> dict[int, tuple[int, bool]]:
    """The same table through psutil, where there is no ``/proc`` (macOS)."""
    uid = os.getuid()
    table: dict[int, tuple[int, bool]] = {}
    for proc in psutil.process_iter(["ppid", "uids", "status"]):
        try:
            info = proc.info
            if info["status"] == psutil.STATUS_ZOMBIE or info["ppid"] is None:
                continue
            has_id = False
            if info["uids"] is not None and info["uids"].real == uid:
                with contextlib.suppress(psutil.AccessDenied):
                    has_id = proc.environ().get(RUN_ID_VAR) == run_id
            table[proc.pid] = (info["ppid"], has_id)
        except _RACES:
            continue
    return table


def _processes(pids: Iterable[int]) -> list[psutil.Process]:
    found: list[psutil.Process] = []
    for pid in sorted(pids):
        try:
            found.append(psutil.Process(pid))
        except _RACES:
            continue  # ended between the scan and here
    return found


def _signal_scan(
    run_id: str, root_pid: int | None, sig: int, also: Iterable[psutil.Process] = ()
) -> list[psutil.Process]:
    """Scan, signal the root's group and every member (and ``also``); return who was targeted."""
    pids, root_live = _scan(run_id, root_pid)
    targets = _merge(also, _processes(pids))
    if root_live and root_pid is not None:
        _killpg(root_pid, sig)
    _send(targets, sig)
    return targets


def _killpg(root_pid: int, sig: int) -> None:
    """Signal the root's process group, never the caller's own (were the root not started in
    a session of its own, its group would be ours)."""
    try:
        pgid = os.getpgid(root_pid)
        if pgid > 1 and pgid != os.getpgrp():
            os.killpg(pgid, sig)
    except OSError:
        pass


def _send(procs: Iterable[psutil.Process], sig: int) -> int:
    """Signal each process; psutil refuses a pid that was reused since the scan."""
    sent = 0
    for proc in procs:
        try:
            proc.send_signal(sig)
            sent += 1
        except _RACES:
            continue
    return sent


def _ended(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except _GONE:
        return True
    except _RACES:
        return False


def _wait_ended(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to ``timeout`` seconds for ``procs`` to end; return those still alive.

    Polls rather than using ``psutil.wait_procs``: that reaps the caller's own children
    (``waitpid``), which would take the agent's exit status from the session's ``Popen``.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    delay = 0.005
    alive = [p for p in procs if not _ended(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)
        alive = [p for p in alive if not _ended(p)]
    return alive


def _merge(*groups: Iterable[psutil.Process]) -> list[psutil.Process]:
    """Union by pid, keeping the first object seen (it carries the create time checked)."""
    merged: dict[int, psutil.Process] = {}
    for group in groups:
        for proc in group:
            merged.setdefault(proc.pid, proc)
    return list(merged.values())
