"""``warmscope exec`` on a GPU: a program whose model runs on CUDA has each call's device time
(CUDA events around it on the calling thread's stream), beside its host time; its CPU calls
have none."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

PROGRAM = textwrap.dedent(
    """
    import torch
    gpu = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU()).cuda()
    cpu = torch.nn.Linear(8, 8)
    with torch.no_grad():
        for b in (1, 64, 1, 64, 1, 64):
            gpu(torch.randn(b, 256, device="cuda"))
            cpu(torch.randn(b, 8))
        torch.cuda.synchronize()
    """
)


def test_gpu_calls_have_device_times_and_cpu_calls_none(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    doc_path = tmp_path / "doc.json"
    r = subprocess.run(
        [sys.executable, "-m", "warmscope.cli", "exec", "--headless", "--record",
         str(tmp_path / "r.jsonl"), "--json", str(doc_path), "--", sys.executable, "prog.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = json.loads(doc_path.read_text())["iterations"]
    assert len(rows) == 12
    gpu = [row for row in rows if "@cuda" in row["shape"]]
    cpu = [row for row in rows if "@cuda" not in row["shape"]]
    assert len(gpu) == 6 and len(cpu) == 6
    assert all(row.get("device_ms", -1) > 0 for row in gpu), gpu
    assert all("device_ms" not in row for row in cpu), cpu
