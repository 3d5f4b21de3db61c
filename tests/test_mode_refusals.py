"""A mode the model cannot take is refused in one line, exit 2, with the next thing to try:
``torch.jit.script`` as ``torch.jit.trace`` already was (real children, real torch)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TARGETS, warmscope

MODELS = TARGETS / "warmup_models.py"


def test_a_model_torch_jit_script_refuses_is_one_line_and_exit_2(tmp_path: Path) -> None:
    r = warmscope(
        "run", f"{MODELS}:bert_like", "--mode", "script", "--input", "int64[1,8]",
        "--iters", "3", "--record", str(tmp_path / "run.jsonl"), "--quiet", timeout=180,
    )  # fmt: skip
    assert r.code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "torch.jit.script refuses this model" in lines[0]
    assert "--mode trace" in lines[0] and "--mode eager" in lines[0]
    assert "Traceback" not in r.stderr
