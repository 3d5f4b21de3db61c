"""The GPU sampler against NVML played back from a file (this machine has no NVIDIA GPU).

The real NVML path runs in tests/gpu/ on a GPU machine; here pynvml's own error classes are
raised where the file says a call failed, as the library raises them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests import nvml_replay
from warmscope.core.child.gpu_sampler import PCIE_EVERY_S, Gpu, nvml_handle, visible_devices
from warmscope.core.run import sampler

HANDMADE = Path(__file__).parent / "data" / "nvml" / "handmade.json"
CHILD = 4242


@pytest.fixture
def nvml() -> Any:
    return nvml_replay.replay(nvml_replay.load(HANDMADE))


@pytest.mark.parametrize(
    ("value", "tokens"),
    [
        (None, None),
        ("", []),
        ("1", ["1"]),
        ("1, 0", ["1", "0"]),
        ("0,,1", ["0"]),  # CUDA stops at the first empty token
        ("GPU-1111", ["GPU-1111"]),
    ],
)
def test_visible_devices_read_as_cuda_does(value: str | None, tokens: list[str] | None) -> None:
    assert visible_devices(value) == tokens


@pytest.mark.parametrize(
    ("ordinal", "visible", "index"),
    [
        (0, None, 0),
        (1, None, 1),
        (0, "1", 1),
        (1, "1,0", 0),
        (0, "GPU-1111", 1),  # a UUID prefix, as CUDA accepts
        (1, "0", None),  # cuda:1 where one device is visible: none
        (0, "", None),
        (0, "-1", None),
        (0, "GPU-9999", None),
    ],
)
def test_cuda_ordinal_to_nvml_device(
    nvml: Any, ordinal: int, visible: str | None, index: int | None
) -> None:
    assert nvml_handle(nvml, ordinal, visible) == index


def test_full_device_reading(nvml: Any) -> None:
    gpu = Gpu(nvml, 0)
    reading = gpu.sample({CHILD})
    assert reading == {
        "gpu_util": 97,
        "gpu_mem_util": 41,
        "gpu_mem_mb": 4096.0,
        "gpu_power_w": 350.0,
        "gpu_sm_mhz": 1755,
        "gpu_temp_c": 51,
        "gpu_pcie_tx_mbs": 20.0,
        "gpu_pcie_rx_mbs": 10.0,
        "gpu_proc_mem_mb": 2048.0,  # the child's, not pid 1's
        "gpu_proc_sm": 90.0,  # the child's newest sample, not the older one nor pid 1's
    }
    assert gpu.describe() == {
        "name": "hand-made device 0",
        "index": 0,
        "uuid": "GPU-00000000-aaaa-bbbb-cccc-000000000000",
        "memory_mb": 81920.0,
        "sm_max_mhz": 1980,
        "power_limit_w": 700.0,
        "mig": False,
        "unsupported": [],
    }


def test_pcie_is_read_at_most_once_a_second(nvml: Any) -> None:
    now = [100.0]
    calls = []
    real = nvml.nvmlDeviceGetPcieThroughput

    def counted(h: Any, counter: Any) -> Any:
        calls.append(counter)
        return real(h, counter)

    nvml.nvmlDeviceGetPcieThroughput = counted
    gpu = Gpu(nvml, 0, clock=lambda: now[0])
    for step in range(10):  # ten readings over 0.9 s: one PCIe read (two counters)
        now[0] = 100.0 + step * 0.1
        assert gpu.sample({CHILD})["gpu_pcie_tx_mbs"] == 20.0
    assert len(calls) == 2
    now[0] += PCIE_EVERY_S
    gpu.sample({CHILD})
    assert len(calls) == 4


def test_mig_device_says_what_it_cannot_show(nvml: Any) -> None:
    gpu = Gpu(nvml, 1)
    reading = gpu.sample({CHILD})
    assert "gpu_util" not in reading and "gpu_power_w" not in reading
    assert "gpu_proc_sm" not in reading
    assert reading["gpu_proc_mem_mb"] == 512.0 and reading["gpu_sm_mhz"] == 1410
    described = gpu.describe()
    assert described["mig"] is True
    assert set(described["unsupported"]) == {
        "utilization",
        "power",
        "power limit",
        "pcie",
        "process utilization",
    }
    # A call found unsupported is not asked again (each costs a driver round trip).
    nvml.nvmlDeviceGetUtilizationRates = lambda h: pytest.fail("asked again")
    gpu.sample({CHILD})


def test_no_kernel_since_last_reading_is_zero_sm(nvml: Any) -> None:
    import pynvml

    def none_since(h: Any, since: int) -> Any:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)

    nvml.nvmlDeviceGetProcessUtilization = none_since
    assert Gpu(nvml, 0).sample({CHILD})["gpu_proc_sm"] == 0.0


def test_sampler_follows_cuda_visible_devices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recording = nvml_replay.load(HANDMADE)
    fake = nvml_replay.replay(recording, pid_map={CHILD: os.getpid()})
    monkeypatch.setattr(sampler, "_nvml_state", {"module": fake, "status": "ok"})
    s = sampler.Sampler(os.getpid(), gpu_index=0, visible_devices="1")
    assert s.gpu is not None and s.gpu.describe()["name"] == "hand-made device 1 (MIG)"
    reading = s.sample()
    assert reading is not None and reading["gpu_proc_mem_mb"] == 512.0
    s = sampler.Sampler(os.getpid(), gpu_index=1, visible_devices="0")
    assert s.gpu is None  # cuda:1 does not exist for the child: no GPU readings, no failure
    reading = s.sample()
    assert reading is not None and "gpu_util" not in reading


def test_the_pane_names_the_device_its_ceilings_and_what_it_cannot_report(nvml: Any) -> None:
    from warmscope.tui.utilization import gpu_note

    full, mig = Gpu(nvml, 0), Gpu(nvml, 1)
    mig.sample({CHILD})
    sample = full.sample({CHILD})
    note = gpu_note([sample], {"gpu": full.describe()}, "cuda:0")
    assert note == ("hand-made device 0 · SM max 1,980 MHz, power limit 700 W, memory 81,920 MB")
    note = gpu_note([mig.sample({CHILD})], {"gpu": mig.describe()}, "cuda:0")
    assert note.startswith("hand-made device 1 (MIG) (a MIG slice) · SM max 1,980 MHz")
    assert note.endswith("not reported: pcie, power, power limit, process utilization, utilization")
    assert gpu_note([{"cpu": 1.0}], {"nvml": "ok"}, "cpu").startswith("GPU not sampled")
