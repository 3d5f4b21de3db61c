"""A real CUDA run: the CUDA start-up phase, the GPU samples and the child's share of the GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def run(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "run.json"
    proc = subprocess.run(
        [sys.executable, "-m", "warmscope.cli", "run", *args, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_cuda_run_has_its_start_up_phase_and_gpu_samples(tmp_path: Path) -> None:
    doc = run(tmp_path, "sample:cnn", "--device", "cuda", "--iters", "200")
    phases = {p["name"] for p in doc["phases"]}
    assert "cuda init" in phases
    samples = doc["samples"]
    assert samples, "the sampler took no reading"
    assert any("gpu_util" in s for s in samples)
    # The child's own memory on the device: it holds a CUDA context and the model.
    assert max(s.get("gpu_proc_mem_mb", 0) for s in samples) > 0


def test_cuda_visible_devices_picks_the_sampled_device(tmp_path: Path) -> None:
    doc = run(
        tmp_path,
        "sample:cnn",
        "--device",
        "cuda:0",
        "--iters",
        "100",
        "--set",
        "env.CUDA_VISIBLE_DEVICES=0",
    )
    assert any("gpu_proc_mem_mb" in s for s in doc["samples"])


def test_cudnn_benchmark_run_completes(tmp_path: Path) -> None:
    doc = run(
        tmp_path,
        "sample:cnn",
        "--device",
        "cuda",
        "--iters",
        "60",
        "--set",
        "cudnn_benchmark=on",
    )
    assert doc["summary"]["first_ms"] > doc["summary"]["p50_ms"]
