"""Events lead with their reason, with real torch.compile and torch.jit.trace children: a
recompile's guard failure first and its place last, a dimension it made dynamic said, and
warmscope's own knob where torch's message suggests a fix."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import FACTORIES, warmscope
from warmscope.core.data.record import read_run
from warmscope.core.output.report import report
from warmscope.core.run.jitlog import StderrParser, stderr_title

RESIZED = (
    "--input", "2xNx8", "--dim", "N=24,48,96", "--mode", "compile",
    "--set", "compile_backend=eager",
)  # fmt: skip
ROW_COLUMNS = 80


def test_a_recompile_leads_with_its_guard_failure_and_says_what_became_dynamic(
    tmp_path: Path, record_dir: Path
) -> None:
    r = warmscope(
        "run", f"{FACTORIES}:tiny", *RESIZED, "--iters", "6", json_path=tmp_path / "r.json"
    )
    assert r.code == 0, r.stderr
    recompiles = r.events("recompile")
    assert len(recompiles) == 1, recompiles
    title = recompiles[0]["title"]
    assert title.startswith("size mismatch x[1]: 24 → 48")
    assert " — dim 1 now dynamic " in title
    assert re.search(r"\(forward, factories\.py:\d+\)$", title), title
    assert "--set compile_dynamic=true" in recompiles[0]["text"]
    # The N=96 call met the dynamic graph: no further recompile, as the title said.
    assert recompiles[0]["iteration"] == 1
    row = next(ln for ln in r.stdout.splitlines() if ln.lstrip().startswith("#1 "))
    # The reason, not the function's path, is what an 80-column row keeps.
    assert "size mismatch x[1]: 24 → 48" in row[:ROW_COLUMNS] and "Recompiling" not in row, row

    assert "`--set compile_dynamic=true`" in report(read_run(next(record_dir.glob("*.jsonl"))))


def test_compile_dynamic_set_gets_no_hint_to_set_it(tmp_path: Path, record_dir: Path) -> None:
    r = warmscope(
        "run", f"{FACTORIES}:tiny", *RESIZED, "--set", "compile_dynamic=false", "--iters", "4",
        json_path=tmp_path / "r.json",
    )  # fmt: skip
    assert r.code == 0, r.stderr
    titles = [e["title"] for e in r.events("recompile")]
    assert titles and all("now dynamic" not in t for t in titles), titles
    assert "compile_dynamic=true" not in report(read_run(next(record_dir.glob("*.jsonl"))))


def test_a_strict_trace_refusal_names_warmscopes_knob(tmp_path: Path, record_dir: Path) -> None:
    args = (f"{FACTORIES}:dict_output", "--input", "2x8", "--mode", "trace", "--iters", "2")
    r = warmscope("run", *args)
    assert r.code == 2
    line = r.stderr.strip().splitlines()[-1]
    assert "Encountering a dict at the output of the tracer" in line
    assert line.endswith("--set trace_strict=off traces it with strict=False")
    assert warmscope("run", *args, "--set", "trace_strict=off").code == 0


def test_a_torch_log_line_titles_its_event_by_its_message_then_its_place() -> None:
    warning = (
        "W1124 03:36:02.817000 18395 torch/export/__init__.py:348] Ran into the following "
        "error when deserializing"
    )
    assert stderr_title(warning) == (
        "Ran into the following error when deserializing (__init__.py:348)"
    )
    tagged = (
        "V1124 03:36:37.268000 18711 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] "
        "triggered by the following guard failure(s):"
    )
    assert stderr_title(tagged).startswith("triggered by the following guard failure(s):")
    assert stderr_title("  a model's own print  ") == "a model's own print"
    parser = StderrParser()
    parser.feed(warning, "load")
    (ev,) = parser.flush()
    assert ev.title.startswith("Ran into the following error") and ev.text == warning
