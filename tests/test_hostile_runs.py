"""Models and records that misbehave in quieter ways, with real children: a model that leaves a
thread running, one that changes its working folder, a live record deleted while it is
followed."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import Result, running, warmscope
from warmscope.core.child import outcome
from warmscope.core.data.follow import follow
from warmscope.core.data.run import Cursor

QUIET = """
import os
import threading
import time

import torch

ELSEWHERE = {elsewhere!r}


class Wanders(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)

    def forward(self, x):
        os.chdir(ELSEWHERE)  # a model (or a library it calls) that moves its working folder
        return self.linear(x)


def build():
    # Not a daemon: interpreter shutdown would wait for it, for ten minutes.
    threading.Thread(target=time.sleep, args=(600,), name="model-helper").start()
    return Wanders()
"""


@dataclass
class QuietRun:
    result: Result
    took: float
    folder: Path


@pytest.fixture(scope="module")
def quiet_run(tmp_path_factory: pytest.TempPathFactory) -> QuietRun:
    """One model with both quiet misbehaviours: it leaves a thread running and it moves its
    working folder each pass; profiled in the run, started from the model's folder."""
    folder = tmp_path_factory.mktemp("quiet")
    elsewhere = folder / "elsewhere"
    elsewhere.mkdir()
    (folder / "quiet.py").write_text(QUIET.format(elsewhere=str(elsewhere)))
    (folder / "runs").mkdir()
    t0 = time.monotonic()
    r = warmscope(
        "run",
        "quiet.py:build",
        "--input",
        "1x4",
        "--iters",
        "3",
        "--profile-iters",
        "1",
        "--profile-in-run",
        "--no-explain",
        "--record",
        "runs/quiet.jsonl",
        json_path=folder / "r.json",
        cwd=folder,
    )
    return QuietRun(r, time.monotonic() - t0, folder)


def test_a_thread_the_model_leaves_running_does_not_fail_the_run(quiet_run: QuietRun) -> None:
    r = quiet_run.result
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["status"] == outcome.OK
    assert "integrity" not in r.doc["status_detail"]
    assert quiet_run.took < 60


def test_a_trace_is_named_by_its_absolute_path_whatever_folder_the_model_moves_to(
    quiet_run: QuietRun,
) -> None:
    r = quiet_run.result
    assert r.code == 0, r.stderr
    assert r.doc is not None
    [profile] = r.doc["profiles"]
    assert "trace_error" not in profile, profile
    trace = Path(profile["trace"])
    assert trace.is_absolute() and trace.is_file(), trace
    assert trace.parent == (quiet_run.folder / "runs").resolve()


def test_a_live_record_deleted_while_followed_is_reported_gone_not_crashed(
    tmp_path: Path, record_dir: Path
) -> None:
    record = tmp_path / "live.jsonl"
    with running(
        "run",
        "sample:trivial",
        "--duration",
        "6",
        "--gap",  # a pass every millisecond: the child sleeps through the seconds followed
        "0.001",
        "--no-explain",
        "--record",
        str(record),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as proc:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if record.exists() and b'"iters"' in record.read_bytes():
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the run wrote no iterations")
        follower = follow(record)
        cursor = Cursor()
        follower.poll(cursor)
        record.unlink()
        while not follower.is_finished() and time.monotonic() < deadline:
            follower.poll(cursor)
            time.sleep(0.1)
        assert proc.wait(timeout=60) == 0
        follower.poll(cursor)
    data = follower.snapshot()
    assert data.status == outcome.OK, (data.status, data.status_detail)
    assert "deleted" in data.status_detail and "crashed" not in data.status_detail
    assert data.count > 0
    assert json.dumps(data.status_detail)  # one line for every view
