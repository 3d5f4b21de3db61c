"""What a warm-up says when no recipe cures the first call, and what a compile recipe's
processes do when serving would compile again: real children, the command line's exit code."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FACTORIES, TARGETS, Result, running, warmscope
from warmscope.core.output.recipe import Call, Recipe, emit_python, split_header
from warmscope.core.output.warmup_verdict import NOT_VERIFIED

MODELS = TARGETS / "warmup_models.py"


def end(procs: list[subprocess.Popen[Any]]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()
    procs.clear()


@pytest.fixture(scope="module")
def uncurable(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    """One warm-up of a model no warm-up can cure, two processes a cell, read by the tests of
    its verdict and of its contention: two busy processes keep both cores busy from the step
    that proposes the candidates (the baseline's processes run without them) until the step
    that runs the processes out of bound once more, each started as the warm-up says on
    stderr that the step begins."""
    folder = tmp_path_factory.mktemp("uncurable")
    emitted = folder / "r.py"
    hogs: list[subprocess.Popen[Any]] = []
    told: list[str] = []
    with running(
        "warmup", f"{FACTORIES}:first_call_per_caller", "--input", "2x8", "--repeat", "2",
        "--iters", "8", "--emit", str(emitted), "--record", str(folder / "w"),
        "--json", str(folder / "w.json"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        watchdog = threading.Timer(300, proc.kill)
        watchdog.start()
        try:
            for line in proc.stderr:
                told.append(line)
                if line.startswith("warmup     propose:"):
                    hogs = [
                        subprocess.Popen([sys.executable, "-c", "while True: pass"])
                        for _ in range(2)
                    ]
                elif line.startswith("warmup     again:"):
                    end(hogs)
            stdout = proc.stdout.read()
            code = proc.wait()
        finally:
            watchdog.cancel()
            end(hogs)
    doc_path = folder / "w.json"
    doc = json.loads(doc_path.read_text()) if doc_path.exists() else None
    return Result(code, stdout, "".join(told), doc), emitted


def test_a_model_no_warm_up_can_cure_is_not_verified_in_the_json_the_header_and_the_exit(
    uncurable: tuple[Result, Path],
) -> None:
    r, emitted = uncurable
    assert r.code == 3, r.stderr
    assert r.doc is not None and r.doc["verdict"] == NOT_VERIFIED
    assert r.stdout.startswith("answer     not verified")
    header, _ = split_header(emitted.read_text())
    assert "Verdict: NOT verified (warmscope, torch " in header
    assert "first call is" in header and "Derived by: warmscope warmup " in header
    assert "exit codes: 0 verified" in warmscope("warmup", "--help").stdout


def test_a_compile_recipe_that_would_recompile_while_serving_fails_naming_it(
    tmp_path: Path,
) -> None:
    """Its processes serve under ``fail_on_recompile``: a size the warm-up left out fails the
    call that would have compiled, with dynamo's reason, not a slow first call."""
    recipe = Recipe(
        "compile",
        "compile",
        [{"dtype": "float32", "shape": [1, 8, "T"]}],
        [{"T": 16}, {"T": 24}],
        [Call({"T": 16}, 2)],  # T=24 never warmed
        compile_options={"backend": "eager", "dynamic": False},
    )
    path = tmp_path / "r.py"
    path.write_text(emit_python(recipe))
    r = warmscope(
        "run", f"{MODELS}:conv", "--mode", "compile", "--set", "compile_backend=eager",
        "--input", "1x8xT", "--dim", "T=16,24", "--iters", "6", "--recipe", str(path),
        "--record", str(tmp_path / "run.jsonl"), "--quiet", timeout=300,
    )  # fmt: skip
    assert r.code == 1, r.stderr
    assert "recompile" in r.stderr.lower() and "fail_on_recompile" in r.stderr, r.stderr[-2000:]


def test_a_process_out_of_bound_beside_busy_processes_runs_again_and_is_named(
    uncurable: tuple[Result, Path],
) -> None:
    """Two busy processes keep both cores busy through the verification: every verification
    process is out of bound (this model's first call cannot be cured) and saw the load, so
    each runs once more, and the document and the table name the contention."""
    r, _ = uncurable
    assert r.code == 3 and r.doc is not None, r.stderr
    [cand] = r.doc["candidates"]
    assert len(cand["contended"]) == 2, cand.get("outliers")
    for x in cand["contended"]:
        assert x["load"] >= 0.5 and "verify-again" in x["again"] and Path(x["again"]).exists()
        assert x["again"] in cand["runs"] and x["record"] not in cand["runs"]
    assert "contention: a process out of bound while" in r.stdout
