"""A run's cgroup: found, created, joined, and ended as one with whatever escaped into it.

The kernel part runs for real where a cgroup v2 hierarchy is writable (root here); elsewhere it
is skipped with the reason ``RunCgroup.create`` gives.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.conftest import FACTORIES, run_id_of, survivors, warmscope
from warmscope.core.base.sizes import parse_size
from warmscope.core.run.cgroup import MAX_PROCS, RunCgroup, own_path, v2_mount

HYBRID = (
    "35 25 0:30 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "36 35 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "37 35 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
)
UNIFIED = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"


@pytest.mark.parametrize(
    ("mountinfo", "mount"),
    [
        (HYBRID, Path("/sys/fs/cgroup/unified")),
        (UNIFIED, Path("/sys/fs/cgroup")),
        ("37 35 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", None),
        ("", None),
    ],
)
def test_finds_the_v2_mount(mountinfo: str, mount: Path | None) -> None:
    assert v2_mount(mountinfo) == mount


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (
            "0::/user.slice/user-1000.slice/session-3.scope\n",
            "/user.slice/user-1000.slice/session-3.scope",
        ),
        ("4:memory:/x\n0::/\n", "/"),
        ("4:memory:/x\n", None),
    ],
)
def test_reads_its_own_cgroup(text: str, path: str | None) -> None:
    assert own_path(text) == path


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512M", 512 << 20),
        ("3G", 3 << 30),
        ("1.5g", 3 << 29),
        ("2GiB", 2 << 30),
        ("67108864", 1 << 26),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "3X", "1M", "-2G"])
def test_bad_sizes_name_the_form(text: str) -> None:
    with pytest.raises(ValueError, match=r"size|at least"):
        parse_size(text)


ESCAPER = r"""
import os, sys, time
sys.stdin.readline()  # joined the cgroup: go on
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve("/bin/sleep", ["sleep", "300"], {})  # no run id, no environment at all
    os._exit(0)
os.wait()
print("escaped", flush=True)
time.sleep(300)
"""


@pytest.fixture
def group() -> RunCgroup:
    made = RunCgroup.create(f"test-{uuid.uuid4().hex[:8]}")
    if isinstance(made, str):
        pytest.skip(made)
    yield made
    made.kill()
    made.remove()


def test_kill_ends_a_helper_that_scrubbed_its_environment(group: RunCgroup) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", ESCAPER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert group.add(child.pid)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.stdout.readline() == "escaped\n"
    members = set(group.pids())
    assert child.pid in members and len(members) == 2  # the child and the escaped sleep
    (escaped,) = members - {child.pid}
    deadline = time.monotonic() + 5
    while psutil.Process(escaped).name() != "sleep" and time.monotonic() < deadline:
        time.sleep(0.01)  # the grandchild may not have reached its exec yet
    assert psutil.Process(escaped).name() == "sleep"
    assert psutil.Process(escaped).environ() == {}  # nothing a run id search could find
    assert set(group.kill()) == members
    child.wait(timeout=5)
    deadline = time.monotonic() + 5
    while psutil.pid_exists(escaped) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not psutil.pid_exists(escaped) or psutil.Process(escaped).status() == "zombie"
    group.remove()
    assert not group.path.exists()


def test_an_empty_cgroup_has_nothing_to_kill(group: RunCgroup) -> None:
    assert group.kill() == [] and group.pids() == [] and group.oom_kills() == 0


def test_not_writable_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from warmscope.core.run import cgroup

    monkeypatch.setattr(cgroup, "MOUNTINFO", tmp_path / "absent")
    assert "no cgroup v2 here" in str(RunCgroup.create("x"))
    info = tmp_path / "mountinfo"
    info.write_text(f"1 1 0:1 / {tmp_path / 'nowhere'} rw - cgroup2 cgroup2 rw\n")
    monkeypatch.setattr(cgroup, "MOUNTINFO", info)
    reason = RunCgroup.create("x")
    assert isinstance(reason, str) and "not writable" in reason
    assert os.path.exists(tmp_path) and not (tmp_path / "nowhere").exists()


def test_a_runs_processes_are_bounded_and_the_record_says_how(tmp_path: Path) -> None:
    """A fork bomb in a model stops at the run's ``pids.max`` (as root ``RLIMIT_NPROC`` holds
    nothing): the bound is in the run's own cgroup, the model sees it, the record says which."""
    record = tmp_path / "run.jsonl"
    r = warmscope(
        "run", f"{FACTORIES}:reads_its_process_bound", "--input", "2x2", "--iters", "2",
        "--record", str(record), "--quiet", json_path=tmp_path / "run.json",
    )  # fmt: skip
    assert r.code == 0 and r.doc is not None, r.stderr
    how = r.doc["env"]["containment"]
    assert how["max_procs"] == MAX_PROCS
    if how["procs_by"].startswith("none"):
        pytest.skip(f"no bound here: {how['procs_by']}")
    assert how["procs_by"] in ("cgroup pids.max", "cgroup v1 pids.max", "RLIMIT_NPROC")
    if how["procs_by"].startswith("cgroup"):
        assert f"PIDS_MAX={MAX_PROCS}" in record.read_text()
        mine = f"warmscope-{run_id_of(record)}"
        left = [p for p in Path("/sys/fs/cgroup").glob(f"*/**/{mine}")]
        assert left == [], "the run's cgroups go with it"


def test_a_model_that_forks_without_end_stops_at_max_procs_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    record = tmp_path / "run.jsonl"
    r = warmscope(
        "run", f"{FACTORIES}:forks_many", "--input", "2x2", "--iters", "1", "--max-procs", "48",
        "--record", str(record), "--quiet", json_path=tmp_path / "run.json", timeout=120,
    )  # fmt: skip
    assert r.doc is not None, r.stderr
    how = r.doc["env"]["containment"]
    if not how["procs_by"].startswith("cgroup"):
        pytest.skip(f"no pids cgroup here: {how['procs_by']}")
    started = [int(line.split("=")[1]) for line in re.findall(r"STARTED=\d+", record.read_text())]
    assert started and started[0] < 48, started  # the agent's own threads count too
    assert survivors(run_id_of(record)) == []
