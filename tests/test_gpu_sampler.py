"""The GPU sampler against NVML played back from a real H100's answers (no GPU here).

The real NVML path runs in tests/gpu/ on a GPU machine; here the answers it gave there are
replayed, and pynvml's own error classes are raised where a derived case says a call failed,
as the library raises them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests import nvml_replay
from warmscope.core.child.gpu_sampler import PCIE_EVERY_S, Gpu, nvml_handle, visible_devices
from warmscope.core.data import env_keys
from warmscope.core.data.record import read_run
from warmscope.core.run import sampler

H100 = nvml_replay.load(nvml_replay.H100)
CHILD = H100["child_pid"]
DEVICE = H100["devices"][0]["calls"]
RUN = Path(__file__).parent / "data" / "gpu_h100" / "runs" / "cnn-eager"
RUN_ENV = read_run(next(p for p in RUN.glob("*.jsonl") if "." not in p.stem)).env
"""A record of a real run on the same H100: its ``env`` is what the sampler wrote there."""

# A MIG slice, derived from the H100's answers (the recording is of a whole device): NVML
# refuses the device-wide readings a slice does not have, and reports MIG mode on.
MIG_REFUSES = (
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetProcessUtilization",
)
MIG = nvml_replay.answered(
    nvml_replay.not_supported(H100, *MIG_REFUSES), "nvmlDeviceGetMigMode", [1, 1]
)["devices"][0]["calls"]
SECOND_UUID = "GPU-11111111-2222-3333-4444-555555555555"
TWO = nvml_replay.with_device(
    H100, {**MIG, "nvmlDeviceGetIndex": 1, "nvmlDeviceGetUUID": SECOND_UUID}
)
"""The H100 and, as a second device, its MIG slice under another UUID (CUDA_VISIBLE_DEVICES)."""


@pytest.fixture
def nvml() -> Any:
    return nvml_replay.replay(TWO)


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
        (0, "GPU-f3cba784", 0),  # a prefix of the H100's UUID, as CUDA accepts
        (0, SECOND_UUID[:8], 1),
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
    # The recording's answers in the sampler's units (MB, W, MB/s from NVML's B, mW, KB/s).
    assert reading == {
        "gpu_util": 99,
        "gpu_mem_util": 8,
        "gpu_mem_mb": 1326.8,  # 1,391,263,744 B
        "gpu_power_w": 672.0,  # 672,003 mW
        "gpu_sm_mhz": 1980,
        "gpu_temp_c": 63,
        "gpu_pcie_tx_mbs": 3.1,  # 3,163 KB/s
        "gpu_pcie_rx_mbs": 6.5,  # 6,693 KB/s
        "gpu_proc_mem_mb": 838.0,  # the child's 878,706,688 B
        "gpu_proc_sm": 93.0,
    }
    # The device as the sampler described it in a real run on this H100.
    assert gpu.describe() == env_keys.nvml_gpu(RUN_ENV)


def test_only_the_childs_own_share_is_counted() -> None:
    # The recorded child's pid read as another process's: on the device, but not the run's.
    fake = nvml_replay.replay(H100, pid_map={CHILD: os.getpid()})
    reading = Gpu(fake, 0).sample({CHILD})
    assert reading["gpu_proc_mem_mb"] == 0.0 and reading["gpu_proc_sm"] == 0.0
    assert reading["gpu_util"] == 99  # the device's own figures are the device's


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
        assert gpu.sample({CHILD})["gpu_pcie_tx_mbs"] == 3.1
    assert len(calls) == 2
    now[0] += PCIE_EVERY_S
    gpu.sample({CHILD})
    assert len(calls) == 4


def test_mig_device_says_what_it_cannot_show(nvml: Any) -> None:
    gpu = Gpu(nvml, 1)
    reading = gpu.sample({CHILD})
    assert "gpu_util" not in reading and "gpu_power_w" not in reading
    assert "gpu_proc_sm" not in reading and "gpu_pcie_tx_mbs" not in reading
    assert reading["gpu_proc_mem_mb"] == 838.0 and reading["gpu_sm_mhz"] == 1980
    described = gpu.describe()
    assert described["mig"] is True and "power_limit_w" not in described
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


def test_no_kernel_since_last_reading_is_zero_sm() -> None:
    # NVML answers NOT_FOUND when no process ran a kernel since the timestamp asked about.
    import pynvml

    error = {"error_code": pynvml.NVML_ERROR_NOT_FOUND, "error": "Not Found"}
    idle = nvml_replay.answered(H100, "nvmlDeviceGetProcessUtilization", error)
    assert Gpu(nvml_replay.replay(idle), 0).sample({CHILD})["gpu_proc_sm"] == 0.0


def test_sampler_follows_cuda_visible_devices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = nvml_replay.replay(TWO, pid_map={CHILD: os.getpid()})
    monkeypatch.setattr(sampler, "_nvml_state", {"module": fake, "status": "ok"})
    s = sampler.Sampler(os.getpid(), gpu_index=0, visible_devices="1")
    assert s.gpu is not None and s.gpu.describe()["uuid"] == SECOND_UUID
    reading = s.sample()
    assert reading is not None and reading["gpu_proc_mem_mb"] == 838.0
    assert "gpu_util" not in reading  # the MIG slice's, not the H100's
    s = sampler.Sampler(os.getpid(), gpu_index=1, visible_devices="0")
    assert s.gpu is None  # cuda:1 does not exist for the child: no GPU readings, no failure
    reading = s.sample()
    assert reading is not None and "gpu_util" not in reading


def test_the_readout_shows_each_reading_against_the_devices_own_ceiling(nvml: Any) -> None:
    from warmscope.core.output import gpu_readout
    from warmscope.tui.widgets.run.utilization_pane import gpu_note

    full, mig = Gpu(nvml, 0), Gpu(nvml, 1)
    sample = full.sample({CHILD})
    env = {"gpu": full.describe(), "driver": H100["driver"]}
    assert gpu_readout.device_line(env) == "GPU 0 · NVIDIA H100 80GB HBM3 · driver 580.159.04"
    shown = {r.label: r.text for r in gpu_readout.readings(sample, env)}
    assert shown == {
        "util": "99%",
        "memory": "1,327 / 81,559 MB",
        "SM clock": "1,980 / 1,980 MHz",
        "power": "672 / 700 W",
        "temp": "63°C",
        "PCIe tx": "3.1 MB/s",
        "PCIe rx": "6.5 MB/s",
        "child SM": "93%",
        "child mem": "838 MB",
    }
    assert gpu_note([sample], env, "cuda:0") == ""  # it reports every reading
    mig.sample({CHILD})
    sample, env = mig.sample({CHILD}), {"gpu": mig.describe()}
    assert gpu_readout.device_line(env).startswith("GPU 1 (MIG slice) · NVIDIA H100 80GB HBM3")
    shown = {r.label: r.text for r in gpu_readout.readings(sample, env)}
    assert shown["util"] == shown["power"] == shown["PCIe tx"] == shown["child SM"] == "N/A"
    assert shown["memory"] == "1,327 / 81,559 MB" and shown["child mem"] == "838 MB"
    assert gpu_note([sample], env, "cuda:0") == (
        "not reported by the device: pcie, power, power limit, process utilization, utilization"
    )
    assert gpu_note([{"cpu": 1.0}], {"nvml": "ok"}, "cpu").startswith("GPU not sampled")
