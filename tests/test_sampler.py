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


def test_samples_a_real_process_tree() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; [time.sleep(0.01) for _ in range(300)]"]
    )
    try:
        # Right after the spawn the child may still be exec'ing (no Python in it yet).
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).memory_info().rss < 4 << 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        s = sampler.Sampler(child.pid)
        reading = s.sample()
        assert reading is not None
        assert reading["rss_mb"] > 1 and reading["threads"] >= 1 and reading["procs"] == 1
        assert "gpu_util" not in reading
    finally:
        child.kill()
        child.wait()
    assert s.sample() is None  # gone: the session stops sampling


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
