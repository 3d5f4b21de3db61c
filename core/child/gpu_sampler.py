"""The GPU a run uses, read through NVML: device-wide figures and the child's own share.

NVML numbers devices by their PCI order, CUDA by ``CUDA_VISIBLE_DEVICES``; ``nvml_handle`` maps
the child's ``cuda:N`` to the NVML device it really is. Each reading is taken on its own, so a
device that does not support one (a MIG slice has no device-wide utilization; many boards have no
power reading) loses that figure alone, and ``Gpu.unsupported`` says which.

Standard library only, the NVML module handed in: the parent's sampler uses it here, and the
remote guardian, shipped with the agent, uses it beside a remote agent (``--host``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from functools import partial
from typing import Any

MB = 2**20
PCIE_EVERY_S = 1.0
"""Each PCIe counter read blocks for about 20 ms (NVML samples the link): at most once a second."""


def gpu_ordinal(device: str) -> int | None:
    """The CUDA ordinal of a run's ``--device`` (``cuda`` is ``cuda:0``); ``None`` off CUDA."""
    return int(device.partition(":")[2] or 0) if device.startswith("cuda") else None


def visible_devices(value: str | None) -> list[str] | None:
    """``CUDA_VISIBLE_DEVICES`` as CUDA reads it: ``None`` when unset (every device, in order);
    the tokens up to the first empty one (CUDA ignores the rest)."""
    if value is None:
        return None
    tokens = []
    for token in value.split(","):
        token = token.strip()
        if not token:
            break
        tokens.append(token)
    return tokens


def nvml_handle(nvml: Any, ordinal: int, visible: str | None) -> Any:
    """The NVML handle of the child's ``cuda:ordinal``, or ``None`` when CUDA would find none."""
    tokens = visible_devices(visible)
    if tokens is None:
        return nvml.nvmlDeviceGetHandleByIndex(ordinal)
    if ordinal >= len(tokens):
        return None
    token = tokens[ordinal]
    if token.lstrip("-").isdigit():
        index = int(token)
        return None if index < 0 else nvml.nvmlDeviceGetHandleByIndex(index)
    # A UUID, or a prefix of one as CUDA accepts ("GPU-8932f937"): the device whose UUID it starts.
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        if nvml_text(nvml.nvmlDeviceGetUUID(handle)).startswith(token):
            return handle
    return None


class Gpu:
    """One NVIDIA device through NVML (the ``pynvml`` module of ``nvidia-ml-py``)."""

    def __init__(self, nvml: Any, handle: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.nvml = nvml
        self.handle = handle
        self.clock = clock
        self.unsupported: set[str] = set()
        """Readings this device refused as not supported: the pane names them."""
        self._pcie_at = -PCIE_EVERY_S
        self._pcie: dict[str, float] = {}
        self._util_seen = 0
        """NVML's timestamp (µs) of the newest per-process sample taken: the next read asks
        only for newer ones."""
        self.static = self._static()

    def _read(self, name: str, read: Callable[[], Any]) -> Any:
        """One NVML reading; ``None`` when it fails, remembering a reading not supported."""
        if name in self.unsupported:
            return None
        try:
            return read()
        except Exception as exc:
            not_supported = getattr(self.nvml, "NVMLError_NotSupported", None)
            if not_supported is not None and isinstance(exc, not_supported):
                self.unsupported.add(name)
            return None

    def _static(self) -> dict[str, Any]:
        """What does not change during a run: the device, its limits, whether it is a MIG slice."""
        nvml, h = self.nvml, self.handle
        out: dict[str, Any] = {}
        name = self._read("name", lambda: nvml.nvmlDeviceGetName(h))
        if name is not None:
            out["name"] = nvml_text(name)
        index = self._read("index", lambda: nvml.nvmlDeviceGetIndex(h))
        if index is not None:
            out["index"] = index
        uuid = self._read("uuid", lambda: nvml.nvmlDeviceGetUUID(h))
        if uuid is not None:
            out["uuid"] = nvml_text(uuid)
        mem = self._read("memory", lambda: nvml.nvmlDeviceGetMemoryInfo(h))
        if mem is not None:
            out["memory_mb"] = round(mem.total / MB, 1)
        sm_max = self._read(
            "sm clock max", lambda: nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM)
        )
        if sm_max is not None:
            out["sm_max_mhz"] = sm_max
        limit = self._read("power limit", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(h))
        if limit is not None:
            out["power_limit_w"] = round(limit / 1000.0, 1)
        mig = self._read("mig", lambda: nvml.nvmlDeviceGetMigMode(h))
        is_slice = self._read("mig", lambda: nvml.nvmlDeviceIsMigDeviceHandle(h))
        out["mig"] = bool(is_slice) or bool(mig and mig[0])
        return out

    def sample(self, pids: set[int]) -> dict[str, Any]:
        """One reading of the device and of the processes in ``pids`` on it."""
        nvml, h = self.nvml, self.handle
        out: dict[str, Any] = {}
        util = self._read("utilization", lambda: nvml.nvmlDeviceGetUtilizationRates(h))
        if util is not None:
            out["gpu_util"] = util.gpu
            out["gpu_mem_util"] = util.memory
        mem = self._read("memory", lambda: nvml.nvmlDeviceGetMemoryInfo(h))
        if mem is not None:
            out["gpu_mem_mb"] = round(mem.used / MB, 1)
        power = self._read("power", lambda: nvml.nvmlDeviceGetPowerUsage(h))
        if power is not None:
            out["gpu_power_w"] = round(power / 1000.0, 1)
        sm = self._read("sm clock", lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM))
        if sm is not None:
            out["gpu_sm_mhz"] = sm
        temp = self._read(
            "temperature", lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)
        )
        if temp is not None:
            out["gpu_temp_c"] = temp
        out.update(self._pcie_reading())
        out.update(self._processes(pids))
        return out

    def _pcie_reading(self) -> dict[str, float]:
        """PCIe traffic in MB/s, read at most once a second; between reads, the last one."""
        now = self.clock()
        if now - self._pcie_at < PCIE_EVERY_S:
            return self._pcie
        self._pcie_at = now
        nvml, h = self.nvml, self.handle
        reading: dict[str, float] = {}
        for key, counter in (
            ("gpu_pcie_tx_mbs", "NVML_PCIE_UTIL_TX_BYTES"),
            ("gpu_pcie_rx_mbs", "NVML_PCIE_UTIL_RX_BYTES"),
        ):
            kbs = self._read("pcie", partial(_pcie_counter, nvml, h, counter))
            if kbs is not None:
                reading[key] = round(kbs / 1024.0, 1)  # NVML counts KB/s
        self._pcie = reading
        return reading

    def _processes(self, pids: set[int]) -> dict[str, float]:
        """The child's own memory on the device and its SM share since the last reading."""
        nvml, h = self.nvml, self.handle
        out: dict[str, float] = {}
        procs = self._read("processes", lambda: nvml.nvmlDeviceGetComputeRunningProcesses(h))
        if procs is not None:
            mine = [p.usedGpuMemory or 0 for p in procs if p.pid in pids]
            out["gpu_proc_mem_mb"] = round(sum(mine) / MB, 1)
        if "process utilization" in self.unsupported:
            return out
        try:
            samples = nvml.nvmlDeviceGetProcessUtilization(h, self._util_seen)
        except Exception as exc:
            not_found = getattr(nvml, "NVMLError_NotFound", None)
            not_supported = getattr(nvml, "NVMLError_NotSupported", None)
            if not_found is not None and isinstance(exc, not_found):
                out["gpu_proc_sm"] = 0.0  # no process ran a kernel since the last reading
            elif not_supported is not None and isinstance(exc, not_supported):
                self.unsupported.add("process utilization")
            return out
        newest: dict[int, Any] = {}
        for s in samples:
            self._util_seen = max(self._util_seen, int(s.timeStamp))
            if s.pid in pids and (s.pid not in newest or s.timeStamp > newest[s.pid].timeStamp):
                newest[s.pid] = s
        out["gpu_proc_sm"] = float(min(100, sum(s.smUtil for s in newest.values())))
        return out

    def describe(self) -> dict[str, Any]:
        """The device for the record's ``env``: what it is and what it cannot report."""
        return {**self.static, "unsupported": sorted(self.unsupported)}


def _pcie_counter(nvml: Any, handle: Any, counter: str) -> Any:
    return nvml.nvmlDeviceGetPcieThroughput(handle, getattr(nvml, counter))


def nvml_text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def open_gpu(nvml: Any, ordinal: int, visible: str | None) -> Gpu | None:
    """The child's ``cuda:ordinal`` as a ``Gpu``, or ``None`` (no such device, NVML failing)."""
    with contextlib.suppress(Exception):
        handle = nvml_handle(nvml, ordinal, visible)
        if handle is not None:
            return Gpu(nvml, handle)
    return None
