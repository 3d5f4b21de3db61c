"""Sampling the child from outside: psutil for CPU and memory, NVML for the GPU.

Sampling from the parent keeps the measured loop unperturbed. Without a GPU or without NVML,
GPU fields are absent and ``gpu_status`` says why; nothing fails.
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import time
from typing import Any

import psutil

MB = 2**20


class Sampler:
    """Samples one process tree (the agent and any compile workers it starts)."""

    TREE_EVERY_S = 1.0
    """Finding the process tree scans all of /proc: done once a second, not every sample."""

    def __init__(self, pid: int, gpu_index: int | None = None) -> None:
        self.root = psutil.Process(pid)
        self._procs: dict[int, psutil.Process] = {pid: self.root}
        self._tree_at = 0.0
        self.gpu = Gpu.open(gpu_index) if gpu_index is not None else None
        self.root.cpu_percent(None)
        psutil.cpu_percent(None)

    def sample(self) -> dict[str, Any] | None:
        """One reading; ``None`` once the process is gone."""
        if not self.root.is_running():
            return None
        now = time.monotonic()
        if now - self._tree_at >= self.TREE_EVERY_S:
            self._tree_at = now
            try:
                children = self.root.children(recursive=True)
            except psutil.Error:
                return None
            live = {self.root.pid: self.root}
            for child in children:
                proc = self._procs.get(child.pid)
                if proc is None:
                    proc = child
                    with contextlib.suppress(psutil.Error):
                        proc.cpu_percent(None)  # the first reading only starts the clock
                live[child.pid] = proc
            self._procs = live
        live = self._procs
        cpu = 0.0
        rss = 0
        threads = 0
        for proc in live.values():
            with contextlib.suppress(psutil.Error), proc.oneshot():
                cpu += proc.cpu_percent(None)
                rss += proc.memory_info().rss
                threads += proc.num_threads()
        out: dict[str, Any] = {
            "cpu": round(cpu, 1),
            "rss_mb": round(rss / MB, 1),
            "threads": threads,
            "procs": len(live),
            "sys_cpu": psutil.cpu_percent(None),
        }
        if self.gpu is not None:
            out.update(self.gpu.sample(set(live)))
        return out


class Gpu:
    """One NVIDIA GPU through NVML (the ``pynvml`` module of ``nvidia-ml-py``)."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self.nvml = nvml
        self.handle = handle

    @classmethod
    def open(cls, index: int) -> Gpu | None:
        nvml = load_nvml()
        if nvml is None:
            return None
        try:
            return cls(nvml, nvml.nvmlDeviceGetHandleByIndex(index))
        except Exception:
            return None

    def sample(self, pids: set[int]) -> dict[str, Any]:
        nvml, h = self.nvml, self.handle
        out: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            util = nvml.nvmlDeviceGetUtilizationRates(h)
            out["gpu_util"] = util.gpu
        with contextlib.suppress(Exception):
            mem = nvml.nvmlDeviceGetMemoryInfo(h)
            out["gpu_mem_mb"] = round(mem.used / MB, 1)
        with contextlib.suppress(Exception):
            out["gpu_power_w"] = round(nvml.nvmlDeviceGetPowerUsage(h) / 1000.0, 1)
        with contextlib.suppress(Exception):
            out["gpu_sm_mhz"] = nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)
        with contextlib.suppress(Exception):
            procs = nvml.nvmlDeviceGetComputeRunningProcesses(h)
            mine = [p.usedGpuMemory or 0 for p in procs if p.pid in pids]
            out["gpu_proc_mem_mb"] = round(sum(mine) / MB, 1)
        return out


_nvml_state: dict[str, Any] = {}


def load_nvml() -> Any:
    """The initialised ``pynvml`` module, or ``None`` (see ``gpu_status``)."""
    if "module" in _nvml_state:
        return _nvml_state["module"]
    try:
        import pynvml

        pynvml.nvmlInit()
        _nvml_state["module"] = pynvml
        _nvml_state["status"] = "ok"
    except Exception as exc:
        _nvml_state["module"] = None
        _nvml_state["status"] = f"no GPU: NVML unavailable ({exc})".replace("\n", " ")
    return _nvml_state["module"]


def gpu_status() -> str:
    load_nvml()
    return str(_nvml_state["status"])


def warmscope_version() -> str:
    """The installed warmscope's version (``unknown`` from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("warmscope")
    except PackageNotFoundError:
        return "unknown"


def host_environment() -> dict[str, Any]:
    """What the parent knows of the machine: CPU model, cores, memory, GPUs and driver."""
    env: dict[str, Any] = {
        "warmscope": warmscope_version(),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_logical": psutil.cpu_count(logical=True),
        "cpu_physical": psutil.cpu_count(logical=False),
        "memory_mb": psutil.virtual_memory().total // MB,
        "gpus": [],
        "nvml": gpu_status(),
    }
    with contextlib.suppress(AttributeError, OSError):
        env["cpu_affinity"] = len(os.sched_getaffinity(0))
    nvml = load_nvml()
    if nvml is not None:
        with contextlib.suppress(Exception):
            env["driver"] = _text(nvml.nvmlSystemGetDriverVersion())
        with contextlib.suppress(Exception):
            for i in range(nvml.nvmlDeviceGetCount()):
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                mem = nvml.nvmlDeviceGetMemoryInfo(h)
                env["gpus"].append(
                    {
                        "index": i,
                        "name": _text(nvml.nvmlDeviceGetName(h)),
                        "memory_mb": mem.total // MB,
                    }
                )
    return env


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
