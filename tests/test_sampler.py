"""Sampling: psutil on a real process; NVML through a stand-in where no GPU exists.

The stand-in is used only because this machine has no NVIDIA GPU; the real NVML path runs
on a GPU machine. Without NVML the run records the GPU as absent and nothing fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from typing import Any

import psutil
import pytest

from warmscope.core.run import sampler


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


class _Struct:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def fake_nvml(pid: int) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM = 1  # type: ignore[attr-defined]
    m.nvmlInit = lambda: None  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: 1  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: f"gpu{i}"  # type: ignore[attr-defined]
    m.nvmlDeviceGetName = lambda h: b"Fake H100"  # type: ignore[attr-defined]
    m.nvmlSystemGetDriverVersion = lambda: "550.1"  # type: ignore[attr-defined]
    m.nvmlDeviceGetUtilizationRates = lambda h: _Struct(gpu=87, memory=40)  # type: ignore[attr-defined]
    m.nvmlDeviceGetMemoryInfo = lambda h: _Struct(used=3 * 2**30, total=80 * 2**30)  # type: ignore[attr-defined]
    m.nvmlDeviceGetPowerUsage = lambda h: 312_500  # type: ignore[attr-defined]
    m.nvmlDeviceGetClockInfo = lambda h, c: 1980  # type: ignore[attr-defined]
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [  # type: ignore[attr-defined]
        _Struct(pid=pid, usedGpuMemory=2**30),
        _Struct(pid=1, usedGpuMemory=5 * 2**30),
    ]
    return m


@pytest.fixture
def nvml_state(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(sampler, "_nvml_state", {})
    return sampler._nvml_state


def test_gpu_fields_from_nvml(monkeypatch: pytest.MonkeyPatch, nvml_state: dict[str, Any]) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(os.getpid()))
    s = sampler.Sampler(os.getpid(), gpu_index=0)
    reading = s.sample()
    assert reading is not None
    assert reading["gpu_util"] == 87 and reading["gpu_mem_mb"] == 3072.0
    assert reading["gpu_power_w"] == 312.5 and reading["gpu_sm_mhz"] == 1980
    assert reading["gpu_proc_mem_mb"] == 1024.0  # only this process tree's memory
    env = sampler.host_environment()
    assert env["gpus"] == [{"index": 0, "name": "Fake H100", "memory_mb": 80 * 1024}]
    assert env["driver"] == "550.1" and env["nvml"] == "ok"


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
