"""Sampling: psutil on a real process; NVML through a stand-in where no GPU exists.

The stand-in, a real H100's answers played back (tests/nvml_replay.py), is used only because
this machine has no NVIDIA GPU; the real NVML path runs on a GPU machine. Without NVML the
run records the GPU as absent and nothing fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests import nvml_replay
from warmscope.core.data.record import read_run
from warmscope.core.run import sampler

H100_RUN = Path(__file__).parent / "data" / "gpu_h100" / "runs" / "cnn-eager"


def python_in(child: subprocess.Popen[bytes]) -> None:
    """Wait until Python runs in ``child``: right after the spawn it may still be exec'ing."""
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).memory_info().rss < 4 << 20 and time.monotonic() < deadline:
        time.sleep(0.01)


def test_samples_a_real_process_tree() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; [time.sleep(0.01) for _ in range(300)]"]
    )
    try:
        python_in(child)
        s = sampler.Sampler(child.pid)
        reading = s.sample()
        assert reading is not None
        assert reading["rss_mb"] > 1 and reading["threads"] >= 1 and reading["procs"] == 1
        assert "gpu_util" not in reading
    finally:
        child.kill()
        child.wait()
    assert s.sample() is None  # gone: the session stops sampling


def test_a_child_that_has_exited_gives_no_reading() -> None:
    """A child that exited, not yet reaped, still "runs" to psutil, its memory released:
    neither sampler reads its teardown as the run's (a whole H100 record's last reading was
    such a one: child RSS 0.0 MB, 2 threads)."""
    from warmscope.core.child.remote_sampler import TreeSampler

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    try:
        python_in(child)
        local, remote = sampler.Sampler(child.pid), TreeSampler(child.pid)
        assert local.sample() is not None and remote.sample() is not None
        proc = psutil.Process(child.pid)
        deadline = time.monotonic() + 10
        while proc.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.status() == psutil.STATUS_ZOMBIE and proc.is_running()
        assert local.sample() is None
        assert remote.sample() is None
    finally:
        child.kill()
        child.wait()


def test_a_record_keeps_no_reading_of_its_child_exiting() -> None:
    """Records made before: the real H100 run's readings of its exiting child are left out as
    it is read, so its Usage pane's last reading is the child still running."""
    path = next(p for p in H100_RUN.glob("*.jsonl") if "." not in p.stem)
    lines = [line for line in path.read_text().splitlines() if '"type":"sample"' in line]
    assert '"rss_mb":0.0' in lines[-1]  # as the H100 run recorded it
    samples = read_run(path).samples
    assert len(samples) == len(lines) - 1
    assert samples[-1]["rss_mb"] > 100 and samples[-1]["threads"] > 2


@pytest.fixture
def nvml_state(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(sampler, "_nvml_state", {})
    return sampler._nvml_state


def test_gpu_fields_from_nvml(monkeypatch: pytest.MonkeyPatch, nvml_state: dict[str, Any]) -> None:
    # A real H100's answers, its busy child's pid read as this process's.
    recording = nvml_replay.load(nvml_replay.H100)
    fake = nvml_replay.replay(recording, pid_map={recording["child_pid"]: os.getpid()})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    s = sampler.Sampler(os.getpid(), gpu_index=0)
    reading = s.sample()
    assert reading is not None
    assert reading["gpu_util"] == 99 and reading["gpu_mem_mb"] == 1326.8
    assert reading["gpu_power_w"] == 672.0 and reading["gpu_sm_mhz"] == 1980
    assert reading["gpu_proc_mem_mb"] == 838.0 and reading["gpu_proc_sm"] == 93.0
    env = sampler.host_environment()
    # What the parent wrote in a real run on that H100.
    real = read_run(next(p for p in H100_RUN.glob("*.jsonl") if "." not in p.stem)).env
    assert (
        env["gpus"]
        == real["gpus"]
        == [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_mb": 81559}]
    )
    assert env["driver"] == real["driver"] == "580.159.04" and env["nvml"] == "ok"


def test_no_nvml_is_reported_not_fatal(
    monkeypatch: pytest.MonkeyPatch, nvml_state: dict[str, Any]
) -> None:
    broken = types.ModuleType("pynvml")

    def fail() -> None:
        raise RuntimeError("NVML Shared Library Not Found")

    broken.nvmlInit = fail  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    s = sampler.Sampler(os.getpid(), gpu_index=0)
    reading = s.sample()
    assert reading is not None and "gpu_util" not in reading
    assert sampler.gpu_status().startswith("no GPU: NVML unavailable")
    assert sampler.host_environment()["gpus"] == []
