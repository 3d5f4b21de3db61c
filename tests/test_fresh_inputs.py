"""``--fresh-inputs``: every call gets a new copy of its inputs (as warm-up verification serves)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from warmscope.core.data.record import side_file_path

FACTORIES = Path(__file__).parent / "targets" / "factories.py"


def printed(tmp_path: Path, *extra: str) -> str:
    record = tmp_path / "r.jsonl"
    r = subprocess.run(
        [
            *(sys.executable, "-m", "warmscope.cli", "run", f"{FACTORIES}:counts_inputs"),
            *("--input", "16:zeros", "--iters", "12", "--record", str(record), "--quiet"),
            "--no-explain",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return side_file_path(record).read_text()


def test_each_call_meets_a_new_tensor_only_with_fresh_inputs(tmp_path: Path) -> None:
    assert "input held 0 at call 10" in printed(tmp_path, "--fresh-inputs")
    (tmp_path / "again").mkdir()
    assert "input held 9 at call 10" in printed(tmp_path / "again")
