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

from warmscope.core.child.gpu_sampler import Gpu, nvml_text, open_gpu
from warmscope.core.run.version import warmscope_version

MB = 2**20


class Sampler:
    """Samples one process tree (the agent and any compile workers it starts)."""

    TREE_EVERY_S = 1.0
    """Finding the process tree scans all of /proc: done once a second, not every sample."""

    def __init__(
        self, pid: int, gpu_index: int | None = None, visible_devices: str | None = None
    ) -> None:
        """``gpu_index`` is the child's CUDA ordinal (``cuda:N``), read through the child's
        ``CUDA_VISIBLE_DEVICES`` (``visible_devices``) to find the NVML device."""
        self.root = psutil.Process(pid)
        self._procs: dict[int, psutil.Process] = {pid: self.root}
        self._tree_at = 0.0
        self.gpu: Gpu | None = None
        if gpu_index is not None:
            nvml = load_nvml()
            if nvml is not None:
                self.gpu = open_gpu(nvml, gpu_index, visible_devices)
        self.root.cpu_percent(None)
        psutil.cpu_percent(None)
        self._pressure = (pressure_total_us(), time.monotonic())

    def _cpu_queue(self) -> dict[str, Any]:
        """The machine's queue for its cores: ``runnable`` tasks now, and ``cpu_pressure``,
        the share (%) of the time since the last sample in which some task waited for one."""
        out: dict[str, Any] = {}
        runnable = runnable_tasks()
        if runnable is not None:
            out["runnable"] = runnable
        total, now = pressure_total_us(), time.monotonic()
        last_total, last_at = self._pressure
        if total is not None and last_total is not None and now > last_at:
            share = (total - last_total) / ((now - last_at) * 1e6)
            out["cpu_pressure"] = round(min(100.0, max(0.0, 100 * share)), 1)
        self._pressure = (total, now)
        return out

    def sample(self) -> dict[str, Any] | None:
        """One reading; ``None`` once the process is gone, or going: its memory released,
        it is exiting (or has exited, unreaped), and what it does then is its teardown."""
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
        root_rss = 0
        for proc in live.values():
            with contextlib.suppress(psutil.Error), proc.oneshot():
                cpu += proc.cpu_percent(None)
                mem = proc.memory_info().rss
                rss += mem
                threads += proc.num_threads()
                if proc is self.root:
                    root_rss = mem
        if not root_rss:
            return None
        out: dict[str, Any] = {
            "cpu": round(cpu, 1),
            "rss_mb": round(rss / MB, 1),
            "threads": threads,
            "procs": len(live),
            "sys_cpu": psutil.cpu_percent(None),
        }
        out.update(self._cpu_queue())
        if self.gpu is not None:
            out.update(self.gpu.sample(set(live)))
        return out


def runnable_tasks() -> int | None:
    """How many tasks on the machine are runnable now, this reader left out (``/proc/loadavg``'s
    fourth field: the instant the load average smooths over a minute)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return max(0, int(f.read().split()[3].partition("/")[0]) - 1)
    except (OSError, IndexError, ValueError):
        return None


def pressure_total_us() -> int | None:
    """Microseconds in which some runnable task waited for a core, since boot
    (``/proc/pressure/cpu``'s ``some … total``; Linux 4.20+ with PSI), ``None`` elsewhere."""
    try:
        with open("/proc/pressure/cpu", encoding="ascii") as f:
            fields = dict(x.split("=", 1) for x in f.readline().split()[1:])
        return int(fields["total"])
    except (OSError, KeyError, ValueError):
        return None


_nvml_state: dict[str, Any] = {}


def load_nvml() -> Any:
    """The initialised ``pynvml`` module, or ``None`` (see ``gpu_status``)."""
    if "module" in _nvml_state:
        return _nvml_state["module"]
    try:
        # optional: NVML is there only on a machine with an NVIDIA driver
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
            env["driver"] = nvml_text(nvml.nvmlSystemGetDriverVersion())
        with contextlib.suppress(Exception):
            for i in range(nvml.nvmlDeviceGetCount()):
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                mem = nvml.nvmlDeviceGetMemoryInfo(h)
                env["gpus"].append(
                    {
                        "index": i,
                        "name": nvml_text(nvml.nvmlDeviceGetName(h)),
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
