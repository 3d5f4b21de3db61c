"""Models and records that misbehave in quieter ways, with real children: a model that leaves a
thread running, one that changes its working folder, a live record deleted while it is
followed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import warmscope
from warmscope.core.child import outcome
from warmscope.core.data.follow import follow
from warmscope.core.data.run import Cursor

THREADED = """
import threading, time
import torch


def build():
    # Not a daemon: interpreter shutdown would wait for it, for ten minutes.
    threading.Thread(target=time.sleep, args=(600,), name="model-helper").start()
    return torch.nn.Linear(4, 2)
"""

WANDERS = """
import os
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
    return Wanders()
"""


def test_a_thread_the_model_leaves_running_does_not_fail_the_run(
    tmp_path: Path, record_dir: Path
) -> None:
    model = tmp_path / "threaded.py"
    model.write_text(THREADED)
    t0 = time.monotonic()
    r = warmscope(
        "run", f"{model}:build", "--input", "1x4", "--iters", "3", json_path=tmp_path / "r.json"
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["status"] == outcome.OK
    assert "integrity" not in r.doc["status_detail"]
    assert time.monotonic() - t0 < 60


def test_a_trace_is_named_by_its_absolute_path_whatever_folder_the_model_moves_to(
    tmp_path: Path, record_dir: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    model = tmp_path / "wanders.py"
    model.write_text(WANDERS.format(elsewhere=str(elsewhere)))
    (tmp_path / "runs").mkdir()
    r = warmscope(
        "run",
        "wanders.py:build",
        "--input",
        "1x4",
        "--iters",
        "3",
        "--profile-iters",
        "1",
        "--profile-in-run",
        "--record",
        "runs/wanders.jsonl",
        json_path=tmp_path / "r.json",
        cwd=tmp_path,
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    [profile] = r.doc["profiles"]
    assert "trace_error" not in profile, profile
    trace = Path(profile["trace"])
    assert trace.is_absolute() and trace.is_file(), trace
    assert trace.parent == (tmp_path / "runs").resolve()


def test_a_live_record_deleted_while_followed_is_reported_gone_not_crashed(
    tmp_path: Path, record_dir: Path
) -> None:
    record = tmp_path / "live.jsonl"
    argv = [sys.executable, "-m", "warmscope.cli", "run", "sample:trivial"]
    proc = subprocess.Popen(
        [*argv, "--duration", "6", "--record", str(record)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
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
    finally:
        proc.kill()
    data = follower.snapshot()
    assert data.status == outcome.OK, (data.status, data.status_detail)
    assert "deleted" in data.status_detail and "crashed" not in data.status_detail
    assert data.count > 0
    assert json.dumps(data.status_detail)  # one line for every view
