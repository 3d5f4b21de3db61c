"""The GPU paths on a real GPU: the Usage pane over a CUDA run, every first-call cause named,
device time beside host time, and a warm-up recipe that verifies (``make test-gpu``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu


def warmscope(tmp_path: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "warmscope.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def run(tmp_path: Path, *args: str) -> dict[str, Any]:
    """One run whose record and summary replace the last one's (a test's runs share its folder)."""
    warmscope(tmp_path, "run", *args, "--json", "run.json", "--record", "run.jsonl", "--overwrite")
    return json.loads((tmp_path / "run.json").read_text())


def causes_of(doc: dict[str, Any], record: Path) -> dict[object, set[str]]:
    """Each iteration's cause names, as the reader derives them from the record."""
    from warmscope.core.data import causes, trace_evidence
    from warmscope.core.data.record import read_run

    data = read_run(record)
    out: dict[object, set[str]] = {}
    for c in causes.run_causes(data, trace_evidence.for_run(data)):
        out.setdefault(c.phase or c.iteration, set()).add(c.name)
    return out


def test_a_cuda_run_has_device_time_beside_host_time(tmp_path: Path) -> None:
    doc = run(tmp_path, "sample:cnn", "--mode", "eager", "--device", "cuda", "--iters", "300")
    timed = [r for r in doc["iterations"] if "device_ms" in r]
    assert len(timed) == len(doc["iterations"])
    # The start event is recorded just before the host's clock starts, the end one is what the
    # call waits on: the device's span is the host's, give or take that record.
    assert all(r["device_ms"] <= r["ms"] + 0.05 and 0 <= r["launch_ms"] <= r["ms"] for r in timed)
    device = doc["summary"]["device"]
    assert device["bound"] in ("launch-bound", "device-bound", "mixed")
    cuda = doc["env"]["cuda_device"]
    # CUDA_MODULE_LOADING as set in the child; unset (None), CUDA's own default (lazy) holds.
    assert cuda["capability"] and cuda["module_loading"] in ("LAZY", "EAGER", None)
    assert isinstance(doc["env"]["gpu"], dict) and doc["env"]["gpu"]["sm_max_mhz"] > 0
    off = run(
        tmp_path, "sample:cnn", "--device", "cuda", "--iters", "50", "--set", "device_time=off"
    )
    assert not any("device_ms" in r for r in off["iterations"]) and "device" not in off["summary"]


def test_a_cnns_first_cuda_call_is_explained_by_its_causes(tmp_path: Path) -> None:
    doc = run(tmp_path, "sample:cnn", "--mode", "eager", "--device", "cuda", "--iters", "100")
    found = causes_of(doc, tmp_path / "run.jsonl")
    first = found.get(0, set())
    assert {"cuBLAS first use", "cuDNN first use"} & first, first
    assert "CUDA context creation" in found.get("cuda init", set())
    report = warmscope(tmp_path, "report", "run.jsonl").stdout
    assert "## Why the slow calls were slow" in report


def test_cudnn_autotuning_is_named_at_each_new_shape(tmp_path: Path) -> None:
    shapes = ("--input", "1x3xSxS", "--dim", "S=64,96,128")
    doc = run(
        tmp_path,
        "sample:cnn",
        "--mode",
        "eager",
        "--device",
        "cuda",
        *shapes,
        "--set",
        "cudnn_benchmark=on",
        "--iters",
        "90",
        "--profile-iters",
        "0,1,2,steady",
    )
    found = causes_of(doc, tmp_path / "run.jsonl")
    for i in (1, 2):
        assert any(name.startswith("cuDNN autotuning") for name in found.get(i, set())), found


def test_cuda_graph_warm_up_and_recording_are_told_from_the_compile(tmp_path: Path) -> None:
    doc = run(
        tmp_path,
        "sample:transformer",
        "--mode",
        "compile",
        "--set",
        "compile_mode=reduce-overhead",
        "--device",
        "cuda",
        "--iters",
        "40",
        "--compile-cache",
        "cold",
    )
    found = causes_of(doc, tmp_path / "run.jsonl")
    assert "the compile" in found.get(0, set())
    assert "CUDA graph recording" in found.get(1, set()), found
    kinds = {(e["kind"], e["iteration"]) for e in doc["events"]}
    assert ("cudagraph", 0) in kinds or ("compile", 1) in kinds


def test_the_usage_pane_shows_the_gpu_of_a_real_cuda_run(tmp_path: Path) -> None:
    from tests.tui_support import run as run_app
    from warmscope.tui.app import build_app
    from warmscope.tui.widgets.run.utilization_pane import UtilizationPane

    run(tmp_path, "sample:cnn", "--device", "cuda", "--iters", "2000")
    app = build_app(records=[tmp_path / "run.jsonl"])

    async def scenario(pilot: Any) -> None:
        await pilot.press("2")
        await pilot.pause()
        assert app.is_running
        text = "\n".join(
            line.plain for line in app.screen.query_one(UtilizationPane).build_lines(100, 30)
        )
        assert "GPU util" in text or "util" in text, text

    run_app(app, scenario)


def test_the_cudnn_recipe_verifies_on_the_gpu(tmp_path: Path) -> None:
    proc = warmscope(
        tmp_path,
        "warmup",
        "sample:cnn",
        "--device",
        "cuda",
        "--input",
        "1x3xSxS",
        "--dim",
        "S=64,96,128",
        "--set",
        "cudnn_benchmark=on",
        "--repeat",
        "3",
        "--json",
        "warmup.json",
        "--emit",
        "recipe.py",
        timeout=900,
    )
    keep = os.environ.get("WARMSCOPE_GPU_OUT")  # device_checks.sh keeps what it printed
    doc = json.loads((tmp_path / "warmup.json").read_text())
    if keep:
        verdicts = [
            {k: c.get(k) for k in ("label", "verdict", "why", "held", "break_even")}
            for c in doc["candidates"]
        ]
        Path(keep, "warmup.txt").write_text(
            proc.stdout
            + proc.stderr[-3000:]
            + "\n--- candidates\n"
            + json.dumps(verdicts, indent=1)
            + "\n--- recipe.py\n"
            + (tmp_path / "recipe.py").read_text()
        )
    assert doc["verdict"] == "verified", proc.stdout
    text = (tmp_path / "recipe.py").read_text()
    assert "torch.backends.cudnn.benchmark" in text and "import warmscope" not in text
