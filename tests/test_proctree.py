"""The run owns its process tree: real processes that escape the group, the tree, or both.

Each test starts a small hostile "model" (a Python script with the run id in its environment)
that starts ``sleep`` in the ways models do, and reports their pids in a file. Whatever a test
asserts, the fixture kills every process it started, so no ``sleep`` outlives a failing test.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from warmscope.core.run import proctree

# The hostile model. It reports the pids it started as JSON in argv[1] (written whole, then
# renamed, so the test never reads half a file), then sleeps until killed.
MODEL = r"""
import json, os, subprocess, sys, time

# (a) A plain child inheriting stderr: same process group, carries the run id.
inherit = subprocess.Popen(["sleep", "1000"])

# (b) A double-forked, setsid-ed child with stdio on /dev/null: another session, re-parented
# to init, found only by the run id it keeps in its environment.
r, w = os.pipe()
mid = os.fork()
if mid == 0:
    os.setsid()
    grandchild = os.fork()
    if grandchild == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execvp("sleep", ["sleep", "1000"])
    os.write(w, str(grandchild).encode())
    os._exit(0)
os.close(w)
escaped = int(os.read(r, 32))
os.waitpid(mid, 0)

# (c1) A child exec-ed with a clean environment: found only as a descendant of the root.
scrubbed = subprocess.Popen(
    ["sleep", "1000"], env={"PATH": os.environ["PATH"]}, stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)

# (c2) A child that overwrites the memory /proc/PID/environ shows (as setproctitle does) and
# ignores SIGTERM: found only as a descendant, ended only by SIGKILL.
OVERWRITE = '''
import ctypes, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
stat = open("/proc/self/stat", "rb").read()
fields = stat[stat.rfind(b")") + 2:].split()
start, end = int(fields[47]), int(fields[48])  # env_start, env_end (stat fields 50, 51)
ctypes.memset(start, 0, end - start)
assert b"WARMSCOPE_RUN_ID" not in open("/proc/self/environ", "rb").read()
print("ready", flush=True)
time.sleep(1000)
'''
overwriter = subprocess.Popen(
    [sys.executable, "-c", OVERWRITE], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
)
assert overwriter.stdout.readline() == b"ready\n"

pids = {"inherit": inherit.pid, "escaped": escaped, "scrubbed": scrubbed.pid,
        "overwriter": overwriter.pid}
with open(sys.argv[1] + ".tmp", "w") as f:
    json.dump(pids, f)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
if sys.argv[2] == "stay":
    time.sleep(1000)
"""

READY_S = 5.0


@dataclass
class Tree:
    run_id: str
    root: subprocess.Popen[bytes]
    pids: dict[str, int]
    extra: list[int] = field(default_factory=list)

    def all_pids(self) -> set[int]:
        return {self.root.pid, *self.pids.values(), *self.extra}


def _live(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_until(check: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def start_tree(tmp_path: Path) -> Iterator[Callable[..., Tree]]:
    """Start a hostile model with a fresh run id; kill all it started at teardown, always."""
    started: list[Tree] = []

    def start(stay: bool = True) -> Tree:
        run_id = f"test-{uuid.uuid4().hex}"
        report = tmp_path / f"{run_id}.json"
        env = {**os.environ, proctree.RUN_ID_VAR: run_id}
        root = subprocess.Popen(
            [sys.executable, "-c", MODEL, str(report), "stay" if stay else "leave"],
            env=env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
        tree = Tree(run_id, root, {})
        started.append(tree)
        assert _wait_until(report.exists, READY_S), "the model did not start its processes"
        tree.pids = json.loads(report.read_text())
        return tree

    try:
        yield start
    finally:
        for tree in started:
            pids = tree.all_pids()
            with contextlib.suppress(Exception):
                pids |= {p.pid for p in proctree.members(tree.run_id, tree.root.pid)}
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                tree.root.wait(timeout=5)


def _member_pids(tree: Tree) -> set[int]:
    return {p.pid for p in proctree.members(tree.run_id, tree.root.pid)}


def test_members_finds_every_escape(start_tree: Callable[..., Tree]) -> None:
    tree = start_tree()
    other = start_tree()  # another run: none of it may be ours
    expected = tree.all_pids()
    assert _wait_until(lambda: expected <= _member_pids(tree), READY_S), (
        f"missing: {expected - _member_pids(tree)}"
    )
    found = _member_pids(tree)
    assert not found & other.all_pids()
    assert os.getpid() not in found
    # The escaped helper is in another session, out of reach of the root's process group.
    assert os.getsid(tree.pids["escaped"]) != os.getsid(tree.root.pid)
    # Without the root, the environment alone still finds what keeps the run id.
    by_env = {p.pid for p in proctree.members(tree.run_id)}
    assert {tree.root.pid, tree.pids["inherit"], tree.pids["escaped"]} <= by_env
    assert tree.pids["scrubbed"] not in by_env and tree.pids["overwriter"] not in by_env


def test_end_all_leaves_nothing_and_spares_other_runs(start_tree: Callable[..., Tree]) -> None:
    tree = start_tree()
    other = start_tree()
    assert _wait_until(lambda: tree.all_pids() <= _member_pids(tree), READY_S)

    started = time.monotonic()
    left = proctree.end_all(tree.run_id, tree.root.pid, grace=0.5)
    assert left == []
    assert time.monotonic() - started < 3.0
    assert not [pid for pid in tree.all_pids() if _live(pid)]
    assert proctree.members(tree.run_id, tree.root.pid) == []
    # The root is left for its owner to reap: its Popen still gets the real exit status.
    assert tree.root.wait(timeout=5) == -signal.SIGTERM
    assert all(_live(pid) for pid in other.all_pids())


def test_signal_all_reaches_escaped_processes(start_tree: Callable[..., Tree]) -> None:
    tree = start_tree()
    assert _wait_until(lambda: tree.all_pids() <= _member_pids(tree), READY_S)
    count = proctree.signal_all(tree.run_id, tree.root.pid, signal.SIGKILL)
    assert count == len(tree.all_pids())
    assert _wait_until(lambda: not [pid for pid in tree.all_pids() if _live(pid)], 2.0)


def test_helpers_keeping_the_run_id_outlive_their_root(start_tree: Callable[..., Tree]) -> None:
    tree = start_tree(stay=False)  # the root exits as soon as it has started everything
    assert tree.root.wait(timeout=5) == 0
    # Orphans are re-parented away from the root: only the run id leads to them.
    found = _member_pids(tree)
    assert {tree.pids["inherit"], tree.pids["escaped"]} <= found
    assert proctree.end_all(tree.run_id, tree.root.pid) == []
    assert not _live(tree.pids["inherit"]) and not _live(tree.pids["escaped"])


def test_nothing_to_end_is_quick_and_quiet() -> None:
    run_id = f"test-{uuid.uuid4().hex}"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    started = time.monotonic()
    assert proctree.members(run_id, dead.pid) == []
    assert proctree.signal_all(run_id, dead.pid, signal.SIGTERM) == 0
    assert proctree.end_all(run_id, None) == []
    assert time.monotonic() - started < 0.5
    with pytest.raises(ValueError):
        proctree.members("")
