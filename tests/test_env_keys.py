"""The environment declared once: every writer's keys are declared, records of every shape the
H100 runs wrote read into today's keys, and the Usage pane opens on each of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.tui_support import run
from warmscope.core.data import env_keys
from warmscope.core.data.record import read_run
from warmscope.core.output.report import report
from warmscope.core.run.sampler import host_environment
from warmscope.tui.app import build_app
from warmscope.tui.widgets.run.utilization_pane import UtilizationPane

H100_RUNS = Path(__file__).parent / "data" / "gpu_h100" / "runs"
H100_RECORDS = sorted(
    p for p in H100_RUNS.glob("*/*.jsonl") if "." not in p.stem
)  # the measured runs, not their explain/profile side records


def test_every_key_the_parent_writes_is_declared() -> None:
    assert set(host_environment()) <= set(env_keys.KEYS)


def test_every_key_of_a_real_cpu_run_is_declared() -> None:
    data = read_run(Path(__file__).parent / "data" / "speech-script.jsonl")
    assert set(data.env) <= set(env_keys.KEYS)
    assert env_keys.gpu_text(data.env).startswith("no GPU")


@pytest.mark.parametrize("record", H100_RECORDS, ids=lambda p: p.parent.name)
def test_an_h100_record_keeps_nvmls_gpu_and_the_childs_device_apart(record: Path) -> None:
    data = read_run(record)
    gpu = env_keys.nvml_gpu(data.env)
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["sm_max_mhz"] == 1980 and gpu["power_limit_w"] == 700.0
    device = env_keys.cuda_device(data.env)
    # Older records held the name, memory and cuDNN; today's child says more.
    assert {"name": "NVIDIA H100 80GB HBM3", "memory_mb": 81079, "cudnn": 91900}.items() <= (
        device.items()
    )
    assert "NVIDIA H100 80GB HBM3, driver 580.159.04" in report(data)
    assert "cuDNN 9.19.0" in report(data)


def test_a_declared_key_of_the_wrong_shape_is_dropped_and_an_unknown_one_kept() -> None:
    env: dict[str, object] = {}
    env_keys.fold(env, {"gpu": {"name": "A100", "sm_max_mhz": 1410}})
    env_keys.fold(env, {"gpu": "A100-SXM4-40GB", "cpu_logical": "many", "future": [1]})
    env_keys.fold(env, {"gpu": ["not", "an", "object"]})
    assert env == {
        "gpu": {"name": "A100", "sm_max_mhz": 1410},
        "cuda_device": {"name": "A100-SXM4-40GB"},
        "future": [1],
    }
    env_keys.fold(env, {"cuda_device": {"name": "A100-SXM4-40GB", "capability": 8, "cudnn": 8907}})
    assert env["cuda_device"] == {"name": "A100-SXM4-40GB", "cudnn": 8907}
    assert env_keys.shown(env, "cuda_device") == "A100-SXM4-40GB, cuDNN 8.9.7"


@pytest.mark.parametrize(
    "record",
    [H100_RUNS / "cnn-eager-tui-run", H100_RUNS / "transformer-compile-reduce-overhead"],
    ids=lambda p: p.name,
)
def test_the_usage_pane_of_a_cuda_record_shows_the_gpu(record: Path) -> None:
    app = build_app(records=sorted(record.glob("*.jsonl"))[:1])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("2")
        await pilot.pause()
        assert app.is_running
        pane = app.screen.query_one(UtilizationPane)
        text = "\n".join(line.plain for line in pane.build_lines(90, 30))
        assert text.startswith("GPU 0 · NVIDIA H100 80GB HBM3") and "1,980 / 1,980 MHz" in text

    run(app, scenario)
