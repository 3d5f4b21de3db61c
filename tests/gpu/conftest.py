"""GPU tests: real CUDA children and real NVML; skipped, with the reason, where either is absent.

Run them with ``make test-gpu`` on a machine with an NVIDIA GPU and a CUDA build of torch.
"""

from __future__ import annotations

import glob
import subprocess
import sys

import pytest


def _cuda_reason() -> str | None:
    """Why CUDA cannot run here (asked in a child: importing torch in pytest is not ours to do)."""
    if not glob.glob("/dev/nvidia[0-9]*"):
        return "no NVIDIA device here (/dev/nvidia* absent)"  # no torch import to find that
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch; print(torch.cuda.is_available(), torch.version.cuda)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if probe.returncode != 0:
        return f"torch does not import: {probe.stderr.strip().splitlines()[-1:]}"
    available, version = probe.stdout.split()
    if available != "True":
        return f"no CUDA device for this torch (built for CUDA {version})"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _cuda_reason()
    if reason is not None:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=reason))
