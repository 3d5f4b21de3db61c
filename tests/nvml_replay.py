"""NVML played back from a recording, for machines without an NVIDIA GPU.

A recording (``tests/gpu/record_nvml.py`` writes one on a GPU machine) holds, per device, the
answer of every NVML call the sampler makes, or the NVML error code it raised. ``replay`` returns
the real ``pynvml`` module's twin with those calls answered from the recording, so errors are
pynvml's own classes (``NVMLError_NotSupported``…), raised as the library would raise them.

The tests replay ``H100``, a real device's answers. A case it cannot give (a call the device
does not support, a second device) is derived from it with ``answered``/``not_supported``/
``with_device``, one answer replaced, so every other answer stays the hardware's own.
"""

from __future__ import annotations

import copy
import json
import types
from pathlib import Path
from typing import Any

import pynvml

H100 = Path(__file__).parent / "data" / "nvml" / "recorded-h100.json"
"""One NVIDIA H100's answers while a child kept it busy (tests/data/gpu_h100/README.md)."""

CALLS = (
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetIndex",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceIsMigDeviceHandle",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetProcessUtilization",
)
"""Every per-device call the sampler makes; the recorder records each of them."""
KEYED = {
    "nvmlDeviceGetClockInfo": ("NVML_CLOCK_SM",),
    "nvmlDeviceGetMaxClockInfo": ("NVML_CLOCK_SM",),
    "nvmlDeviceGetTemperature": ("NVML_TEMPERATURE_GPU",),
    "nvmlDeviceGetPcieThroughput": ("NVML_PCIE_UTIL_TX_BYTES", "NVML_PCIE_UTIL_RX_BYTES"),
}
"""Calls that take a kind (clock, sensor, counter): recorded per kind, keyed by its number."""


class Struct:
    """An NVML structure's fields as attributes (``util.gpu``, ``mem.used``)."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def _value(answer: Any) -> Any:
    if isinstance(answer, dict) and "error_code" in answer:
        raise pynvml.NVMLError(answer["error_code"])  # pynvml turns the code into its subclass
    if isinstance(answer, dict):
        return Struct(**answer)
    if isinstance(answer, list) and answer and isinstance(answer[0], dict):
        return [Struct(**item) for item in answer]
    if isinstance(answer, list):
        return tuple(answer)
    return answer


def replay(recording: dict[str, Any], *, pid_map: dict[int, int] | None = None) -> Any:
    """A ``pynvml`` stand-in answering from ``recording``; ``pid_map`` renames recorded pids
    (the recording's child) to pids of this machine (the process a test samples)."""
    devices = recording["devices"]
    pids = pid_map or {}
    module = types.ModuleType("pynvml")
    for name in dir(pynvml):
        if name.startswith(("NVML_", "NVMLError")):
            setattr(module, name, getattr(pynvml, name))

    def answer(handle: int, call: str, key: str | None = None) -> Any:
        recorded = devices[handle]["calls"][call]
        if key is not None and not (isinstance(recorded, dict) and "error_code" in recorded):
            recorded = recorded[key]
        value = _value(recorded)
        if isinstance(value, list):
            for item in value:
                if hasattr(item, "pid"):
                    item.pid = pids.get(item.pid, item.pid)
        return value

    module.nvmlInit = lambda: None  # type: ignore[attr-defined]
    module.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    module.nvmlSystemGetDriverVersion = lambda: recording["driver"]  # type: ignore[attr-defined]
    module.nvmlDeviceGetCount = lambda: len(devices)  # type: ignore[attr-defined]

    def by_index(index: int) -> int:
        if not 0 <= index < len(devices):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return index

    module.nvmlDeviceGetHandleByIndex = by_index  # type: ignore[attr-defined]
    for call in CALLS:
        if call in KEYED:
            setattr(module, call, lambda h, kind, c=call: answer(h, c, str(kind)))
        elif call == "nvmlDeviceGetProcessUtilization":
            setattr(module, call, lambda h, since, c=call: answer(h, c))
        else:
            setattr(module, call, lambda h, c=call: answer(h, c))
    return module


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def answered(
    recording: dict[str, Any], call: str, answer: Any, *, device: int = 0
) -> dict[str, Any]:
    """A copy of ``recording`` in which ``device`` answers ``call`` with ``answer``."""
    derived = copy.deepcopy(recording)
    derived["devices"][device]["calls"][call] = answer
    return derived


def not_supported(recording: dict[str, Any], *calls: str, device: int = 0) -> dict[str, Any]:
    """A copy of ``recording`` in which ``device`` refuses ``calls`` as NVML does a reading the
    device does not have (``NVML_ERROR_NOT_SUPPORTED``)."""
    for call in calls:
        error = {"error_code": pynvml.NVML_ERROR_NOT_SUPPORTED, "error": "Not Supported"}
        recording = answered(recording, call, error, device=device)
    return recording


def with_device(recording: dict[str, Any], calls: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``recording`` with one more device, answering ``calls``."""
    derived = copy.deepcopy(recording)
    derived["devices"].append({"index": len(derived["devices"]), "calls": copy.deepcopy(calls)})
    return derived
