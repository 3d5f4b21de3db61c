"""Every ``WARMSCOPE_*`` variable is checked where it is read: a wrong one is one line naming
it, exit 2, no traceback (real commands, real files)."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.conftest import warmscope


def one_line(result: object) -> str:
    stderr = result.stderr  # type: ignore[attr-defined]
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_ssh_options_with_an_unbalanced_quote(tmp_path: Path) -> None:
    r = warmscope(
        "run", "sample:trivial", "--host", "localhost", "--iters", "2", "--quiet",
        env={"WARMSCOPE_SSH_OPTIONS": "-o 'ProxyJump=x"},
    )  # fmt: skip
    assert r.code == 2
    assert one_line(r).startswith("warmscope: WARMSCOPE_SSH_OPTIONS=")
    assert "no closing quotation" in r.stderr


def test_a_record_folder_that_is_a_file(tmp_path: Path) -> None:
    afile = tmp_path / "records"
    afile.write_text("not a folder")
    r = warmscope(
        "run", "sample:trivial", "--iters", "2", "--quiet",
        env={"WARMSCOPE_RECORD_DIR": str(afile)},
    )  # fmt: skip
    assert r.code == 2
    assert f"WARMSCOPE_RECORD_DIR={afile}: not a folder" in one_line(r)


def test_a_cache_folder_that_is_a_file(tmp_path: Path) -> None:
    archive = tmp_path / "linear.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(8, 4)), str(archive))
    afile = tmp_path / "cache"
    afile.write_text("not a folder")
    r = warmscope(
        "run", str(archive), "--runtime", "cpp", "--input", "2x8", "--iters", "2", "--quiet",
        "--record", str(tmp_path / "run.jsonl"), env={"WARMSCOPE_CACHE_DIR": str(afile)},
        timeout=300,
    )  # fmt: skip
    assert r.code == 2
    assert "WARMSCOPE_CACHE_DIR=" in one_line(r) and "not a folder" in r.stderr


def test_a_document_nested_too_deeply_says_so(tmp_path: Path) -> None:
    deep = tmp_path / "sweep.json"
    deep.write_text('{"format": "warmscope-sweep", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    r = warmscope("export", str(deep))
    assert r.code == 2
    assert "nested too deeply" in one_line(r) and "recursion" not in r.stderr.lower()
