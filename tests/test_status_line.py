"""A failure's status detail is one line, however long the model's message (issue: a
TorchScript error put 40 lines of its traceback into the status line and the header)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FACTORIES, warmscope
from warmscope.core.run.ending import one_line


def test_one_line_keeps_the_first_line_and_says_there_is_more() -> None:
    assert one_line("ValueError: x") == "ValueError: x"
    assert one_line("\n\nRuntimeError: failed\nTraceback of TorchScript\n  x") == (
        "RuntimeError: failed …"
    )
    long = one_line("y" * 500, limit=50)
    assert len(long) == 50 and long.endswith("…")


def test_a_torchscript_error_is_one_status_line(tmp_path: Path) -> None:
    r = warmscope(
        "run",
        f"{FACTORIES}:tiny",
        "--mode",
        "script",
        "--input",
        "2x3",  # the wrong width: the scripted module raises with a TorchScript traceback
        "--record",
        str(tmp_path / "r.jsonl"),
        json_path=tmp_path / "r.json",
    )
    assert r.code == 1 and r.doc is not None
    detail = r.doc["status_detail"]
    assert "\n" not in detail and len(detail) <= 220
    status_line = r.stdout.splitlines()[0]
    assert "status=failed" in status_line and "mat1 and mat2" in r.stderr  # torch's own words
    assert r.doc["error"]["message"].count("\n") >= 1, "the full message stays in the record"
