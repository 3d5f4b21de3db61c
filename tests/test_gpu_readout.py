"""The GPU readout (what the Usage pane shows of a device), from real H100 records' ``env``."""

from __future__ import annotations

from pathlib import Path

import pytest

from warmscope.core.data import env_keys
from warmscope.core.data.reading import read_run
from warmscope.core.output import gpu_readout

RUN = Path(__file__).parent / "data" / "gpu_h100" / "runs" / "cnn-eager"
ENV = read_run(next(p for p in RUN.glob("*.jsonl") if "." not in p.stem)).env
CUDA = {  # what today's child writes as cuda_device on that H100 (loading.environment)
    "name": "NVIDIA H100 80GB HBM3",
    "capability": "9.0",
    "cuda": "13.0",
    "cudnn": 91900,
    "module_loading": "LAZY",
    "cudnn_benchmark": False,
    "tf32_matmul": False,
}


@pytest.mark.parametrize(
    ("value", "limit", "text"),
    [
        (672.003, 700.0, "672 / 700 W"),
        (672.0, None, "672 W / N/A"),
        (None, 700.0, "N/A / 700 W"),
        (None, None, "N/A"),
    ],
)
def test_a_reading_against_its_ceiling(value: float | None, limit: float | None, text: str) -> None:
    assert gpu_readout.against(value, limit, " W")[0] == text


def test_the_columns_width_follows_the_ceiling_not_the_value() -> None:
    # 480 MB and 81,000 MB used of the same device: the same room, so the column stays put.
    assert gpu_readout.against(480.0, 81559.0, " MB")[1] == len("81,559 / 81,559 MB")
    assert gpu_readout.against(81000.0, 81559.0, " MB")[1] == len("81,559 / 81,559 MB")


def test_the_header_names_the_device_and_the_childs_cuda_facts() -> None:
    env = dict(ENV)
    assert gpu_readout.device_line(env) == (
        "GPU 0 · NVIDIA H100 80GB HBM3, cuDNN 9.19.0 · driver 580.159.04"
    )  # an older child's facts: its device's name and cuDNN
    env_keys.fold(env, {"cuda_device": CUDA})
    assert gpu_readout.device_line(env) == (
        "GPU 0 · NVIDIA H100 80GB HBM3 (sm 9.0), CUDA 13.0, cuDNN 9.19.0, module loading LAZY,"
        " cuDNN autotuning off, TF32 matmul off · driver 580.159.04"
    )
    no_nvml = {"cuda_device": CUDA, "nvml": "no GPU: NVML unavailable"}
    assert gpu_readout.device_line(no_nvml, "cuda:1").startswith(
        "cuda:1 · NVIDIA H100 80GB HBM3 (sm 9.0), CUDA 13.0"
    )
    other = {"gpu": {"name": "NVIDIA H100 PCIe", "index": 2}, "cuda_device": CUDA}
    assert gpu_readout.device_line(other).startswith(
        "GPU 2 · NVIDIA H100 PCIe · NVIDIA H100 80GB HBM3 (sm 9.0)"
    )  # two names that differ are both said


def test_compact_readings_pair_temperature_with_pcie_and_the_childs_shares() -> None:
    sample = read_run(next(p for p in RUN.glob("*.jsonl") if "." not in p.stem)).samples[-1]
    roomy = gpu_readout.readings(sample, ENV)
    compact = gpu_readout.readings(sample, ENV, compact=True)
    assert [r.label for r in compact] == ["util", "memory", "SM clock", "power", "temp", "child"]
    assert compact[:4] == roomy[:4]
    by = {r.label: r.text for r in roomy}
    assert compact[4].text == f"{by['temp']} · PCIe tx {by['PCIe tx']} · rx {by['PCIe rx']}"
    assert compact[5].text == f"SM {by['child SM']} · memory {by['child mem']}"
