"""The NVML recorder's ``plain()`` on the shapes real pynvml answers in, built without a GPU.

pynvml returns ctypes structures, ctypes scalars, lists sliced from ctypes arrays and its own
``nvmlFriendlyObject``s; the recorder failed on an H100 on the last two until ``plain`` knew
them. Here each call's answer is rebuilt in the type pynvml gives it, from the values the H100
recording holds, and ``plain`` must give the recording back.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any

import pynvml
import pytest

from tests import nvml_replay
from tests.gpu import record_nvml
from tests.gpu.record_nvml import plain

RECORDED = nvml_replay.load(nvml_replay.H100)["devices"][0]["calls"]


def as_pynvml_answers(calls: dict[str, Any]) -> dict[str, Any]:
    """Each recorded answer in the type nvidia-ml-py returns it (see pynvml.py's functions)."""
    procs = calls["nvmlDeviceGetComputeRunningProcesses"]
    samples = calls["nvmlDeviceGetProcessUtilization"]
    array = (pynvml.c_nvmlProcessUtilizationSample_t * len(samples))(
        *(pynvml.c_nvmlProcessUtilizationSample_t(**s) for s in samples)
    )
    return {
        **calls,  # name, UUID, index, power, limit, keyed clocks and counters: plain ints and text
        "nvmlDeviceGetMemoryInfo": pynvml.c_nvmlMemory_t(**calls["nvmlDeviceGetMemoryInfo"]),
        "nvmlDeviceGetUtilizationRates": pynvml.c_nvmlUtilization_t(
            **calls["nvmlDeviceGetUtilizationRates"]
        ),
        "nvmlDeviceGetMigMode": list(calls["nvmlDeviceGetMigMode"]),
        "nvmlDeviceIsMigDeviceHandle": ctypes.c_uint(calls["nvmlDeviceIsMigDeviceHandle"]),
        "nvmlDeviceGetComputeRunningProcesses": [
            pynvml.nvmlStructToFriendlyObject(pynvml.c_nvmlProcessInfo_v3_t(**p)) for p in procs
        ],
        "nvmlDeviceGetProcessUtilization": array[0 : len(samples)],
    }


def test_the_rebuilt_answers_are_pynvmls_own_types() -> None:
    typed = as_pynvml_answers(RECORDED)
    assert isinstance(typed["nvmlDeviceIsMigDeviceHandle"], ctypes.c_uint)
    assert isinstance(typed["nvmlDeviceGetComputeRunningProcesses"][0], pynvml.nvmlFriendlyObject)
    assert isinstance(typed["nvmlDeviceGetProcessUtilization"][0], ctypes.Structure)


@pytest.mark.parametrize("call", sorted(RECORDED))
def test_plain_gives_back_what_the_h100_recording_holds(call: str) -> None:
    answer = plain(as_pynvml_answers(RECORDED)[call])
    assert answer == RECORDED[call]
    assert json.loads(json.dumps(answer)) == answer


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (ctypes.c_uint(7), 7),
        (ctypes.c_ulonglong(2**40), 2**40),
        (ctypes.c_char_p(b"H100"), "H100"),
        ([ctypes.c_uint(1), ctypes.c_uint(0)], [1, 0]),
        ((ctypes.c_uint * 3)(4, 5, 6), [4, 5, 6]),
        (b"580.159.04", "580.159.04"),
        (None, None),  # usedGpuMemory on WDDM: pynvml sets it to None
    ],
    ids=["c_uint", "c_ulonglong", "c_char_p", "list of c_uint", "array", "bytes", "None"],
)
def test_plain_on_ctypes_scalars_and_arrays(value: Any, expected: Any) -> None:
    assert plain(value) == expected


def test_plain_on_a_friendly_object_holding_ctypes_and_bytes() -> None:
    friendly = pynvml.nvmlFriendlyObject({"pid": ctypes.c_uint(12), "name": b"python", "n": 3})
    assert plain(friendly) == {"pid": 12, "name": "python", "n": 3}


def test_an_nvml_error_is_recorded_as_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(handle: Any) -> Any:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetPowerUsage", refuse)
    answer = record_nvml.ask("nvmlDeviceGetPowerUsage", 0)
    assert answer == {"error_code": pynvml.NVML_ERROR_NOT_SUPPORTED, "error": "Not Supported"}
    replayed = nvml_replay.replay(
        nvml_replay.answered({"devices": [{"calls": RECORDED}]}, "nvmlDeviceGetPowerUsage", answer)
    )
    with pytest.raises(pynvml.NVMLError_NotSupported):
        replayed.nvmlDeviceGetPowerUsage(0)
