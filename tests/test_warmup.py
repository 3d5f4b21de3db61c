"""``warmscope warmup`` end to end: real children derive, verify and emit a recipe, and the
emitted file then runs in a plain ``python`` that never imports warmscope."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.conftest import FACTORIES, TARGETS, warmscope
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.recipe import Call, Recipe, emit_python
from warmscope.core.output.warmup_verdict import OUTCOMES, WITHIN_CAP, is_verified
from warmscope.core.run.warmup import Warmup
from warmscope.core.run.warmup_handover import copy_recipe
from warmscope.core.run.warmup_progress import Progress

MODELS = TARGETS / "warmup_models.py"
SPEECH = Path(__file__).parent.parent / "sample_models" / "speech.py"

PLAIN = """
import importlib.util, sys
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

recipe = load(sys.argv[1], "recipe")
source, factory = sys.argv[2], sys.argv[3]
if source.endswith(".pt"):
    model = torch.jit.load(source)
elif source.endswith(".pt2"):
    model = torch.export.load(source).module()
else:
    model = getattr(load(source, "m"), factory)()
model = recipe.prepare(model)
assert model is not None and callable(model)
with torch.no_grad():
    for dims in list(reversed(recipe.SHAPES)) * 2:  # another order than the warm-up's
        args, kwargs = recipe.make_inputs(dims)
        out = model(*args, **kwargs)
        print("served", dims, tuple(out.shape) if hasattr(out, "shape") else sorted(out))
# (the editable install's path finder is loaded at start-up, before any of this)
loaded = [m for m in sys.modules if m.split(".")[0] in ("warmscope", "_warmscope_child")]
assert not loaded, f"the recipe pulled in {loaded}"
print("plain ok")
"""


def run_plain(recipe: Path, source: Path, factory: str = "") -> str:
    """The emitted recipe in a fresh, isolated ``python``, outside warmscope, as a server on a
    new machine starts: the model as the target makes it (eager from a factory), and empty
    compile caches (nothing compiled before it)."""
    caches = recipe.parent / f"{recipe.stem}-empty-caches"
    shutil.rmtree(caches, ignore_errors=True)
    env = dict(
        os.environ,
        TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
        TRITON_CACHE_DIR=str(caches / "triton"),
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-c", PLAIN, str(recipe), str(source), factory],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=recipe.parent,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "plain ok" in proc.stdout
    return proc.stdout


def cache_of(record: str) -> dict[str, Any]:
    """The compile cache a process had, as its record says."""
    from warmscope.core.data.record import read_run

    return read_run(Path(record)).env["compile_cache"]


def check_document(doc: dict[str, Any], code: int | None, processes: int) -> None:
    """What every warmup document promises, whatever the verdict (``code``: the command
    line's exit code, where it ran)."""
    assert doc["format"] == "warmscope-warmup"
    assert doc["verdict"] in OUTCOMES
    if code is not None:
        assert code == (0 if is_verified(doc["verdict"]) else 3)
    assert doc["baseline"]["runs"] and len(doc["baseline"]["processes"]) == processes
    for shape in doc["baseline"]["shapes"]:
        assert len(shape["ratio"]["values"]) == processes
    for c in doc["candidates"]:
        assert c["verdict"] in OUTCOMES
        if is_verified(c["verdict"]):
            assert all(
                s["ratio"]["median"] <= doc["max_ratio"]
                or (s["ratio"]["lo"] <= doc["max_ratio"] and s["ratio"]["median"] <= WITHIN_CAP)
                or (s["ratio"]["median"] - 1.0) * s["p50_ms"]["median"] <= doc["tolerance_ms"]
                for s in c["shapes"]
            )
            assert c["startup_ms"]["median"] > 0  # the recipe phase was timed
        else:
            assert c["why"] and "\n" not in c["why"]
        for p in c["processes"]:
            assert Path(p["record"]).exists()
    for p in doc["baseline"]["processes"]:
        assert Path(p["record"]).exists()
    if doc["chosen"] is not None:
        assert doc["answer"].startswith(doc["verdict"])


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One warm-up of the speech sample over two lengths, run by ``Warmup`` as the command
    line runs it, its progress hook listening: read by the recipe's tests and the hook's."""
    folder = tmp_path_factory.mktemp("speech")
    settings = RunSettings(target="sample:speech", inputs=["1xTx40"], dims=["T=20,40"], iters=16)
    settings.set("intra_op_threads=1")
    told: list[Progress] = []
    job = Warmup(settings=settings, repeat=1, folder=folder / "w", on_progress=told.append)
    doc = job.run()
    emitted = copy_recipe(doc, folder / "speech_recipe.py")  # what --emit does
    return {"doc": doc, "told": told, "emitted": emitted}


def test_speech_recipe_is_derived_verified_and_runs_outside_warmscope(
    speech: dict[str, Any],
) -> None:
    doc = speech["doc"]
    check_document(doc, None, 1)
    assert doc["mode"] == "script" and doc["served_order"] == ["T=40", "T=20"]
    labels = [c["label"] for c in doc["candidates"]]
    assert labels == ["warm-up calls", "profiling off"]
    # The shape served first paid for the profiling executor's profiling run, and said so.
    first = next(o for o in doc["observed"] if o["key"] == "T=40")
    assert "profiling run" in first["why"]
    # The warm-up went through the shapes in the declared order: not the one served.
    calls = doc["candidates"][0]["recipe"]["calls"]
    assert [c["dims"] for c in calls] == [{"T": 20}, {"T": 40}]
    assert len({c["count"] for c in calls}) == 1  # the shape warmed first pays the most
    assert doc["candidates"][1]["recipe"]["settings"]["profiling_executor"] is False
    emitted: Path = speech["emitted"]
    text = emitted.read_text()
    assert "profiling run" in text and "def prepare(model" in text
    out = run_plain(emitted, SPEECH, "make_model")
    assert "served {'T': 40} (1, 20, 29)" in out


def test_progress_tells_each_step_and_process_as_it_happens(speech: dict[str, Any]) -> None:
    """``Warmup.on_progress``: each step as it begins, each process as it starts and ends."""
    assert speech["told"][0].phase == "plan" and "processes" in speech["told"][0].note
    told = [p for p in speech["told"] if p.phase not in ("plan", "estimate")]
    doc = speech["doc"]
    steps = [(p.phase, p.cell, p.repeat, p.facts is not None) for p in told]
    labels = [c["label"] for c in doc["candidates"]]
    assert told[0].phase == "observe" and told[0].cells == ["no recipe"]
    # The baseline's process started, then ended with its cell's figures.
    assert steps[1:3] == [("observe", "no recipe", 0, False), ("observe", "no recipe", 0, True)]
    ended = told[2].facts
    assert ended is not None and len(ended["processes"]) == 1
    assert ended["shapes"] == doc["baseline"]["shapes"]
    assert [p.cells for p in told if p.phase == "propose"] == [labels]
    verify = [p for p in told if p.phase == "verify"]
    assert verify[0].cells == labels
    for label in labels:  # each candidate's process: started, then ended
        mine = [(p.repeat, p.facts is not None) for p in verify if p.cell == label]
        assert mine == [(0, False), (0, True)]
    last = next(p for p in verify if p.cell == labels[-1] and p.facts is not None)
    assert last.facts is not None
    # The figures told are those the answer judged (the judge adds its verdict per shape).
    told_ratios = [(s["key"], s["ratio"]) for s in last.facts["shapes"]]
    assert told_ratios == [(s["key"], s["ratio"]) for s in doc["candidates"][-1]["shapes"]]


def test_torchscript_archive_served_in_cycle_order(tmp_path: Path) -> None:
    sys.path.insert(0, str(TARGETS))
    try:
        import warmup_models
    finally:
        sys.path.remove(str(TARGETS))
    archive = tmp_path / "conv.pt"
    torch.jit.script(warmup_models.conv()).save(str(archive))
    emitted = tmp_path / "conv_recipe.py"
    result = warmscope(
        "warmup", str(archive), "--input", "1xTx16", "--dim", "T=8,16", "--iters", "16",
        "--repeat", "1", "--serve", "cycle", "--emit", str(emitted), "--quiet",
        "--emit-cpp", str(tmp_path / "conv_recipe.cpp"),
        json_path=tmp_path / "w.json", timeout=300,
    )  # fmt: skip
    doc = result.doc
    assert doc is not None, result.stderr
    check_document(doc, result.code, 1)
    assert result.stdout.startswith("answer     " + doc["verdict"])
    assert doc["served_order"] == ["T=8", "T=16"]
    # Served in the declared order, so the warm-up runs backwards.
    assert [c["dims"] for c in doc["candidates"][0]["recipe"]["calls"]] == [{"T": 16}, {"T": 8}]
    run_plain(emitted, archive)
    # The same recipe for libtorch (built and run outside warmscope in test_cpp_warmup).
    source = tmp_path / "conv_recipe.cpp"
    assert doc["emitted_cpp"] == str(source) and "torch::jit::Module prepare(" in source.read_text()
    # Derived in Python, never run in C++: its header says so, whatever the Python verdict.
    cpp_header = "".join(ln for ln in source.read_text().splitlines() if ln.startswith("//"))
    assert "Verdict: NOT verified" in cpp_header and "not run in C++" in cpp_header


def test_exported_program(tmp_path: Path) -> None:
    sys.path.insert(0, str(TARGETS))
    try:
        import warmup_models
    finally:
        sys.path.remove(str(TARGETS))
    frames = torch.export.Dim("T", min=4, max=64)
    program = torch.export.export(
        warmup_models.conv(), (torch.randn(1, 8, 16),), dynamic_shapes={"x": {1: frames}}
    )
    archive = tmp_path / "conv.pt2"
    torch.export.save(program, str(archive))
    emitted = tmp_path / "exported_recipe.py"
    result = warmscope(
        "warmup", str(archive), "--input", "1xTx16", "--dim", "T=8,16", "--iters", "12",
        "--repeat", "1", "--emit", str(emitted), "--quiet",
        json_path=tmp_path / "w.json", timeout=300,
    )  # fmt: skip
    doc = result.doc
    assert doc is not None, result.stderr
    check_document(doc, result.code, 1)
    run_plain(emitted, archive)


def test_a_traced_recipe_takes_the_eager_module_it_was_derived_from(tmp_path: Path) -> None:
    """A BERT-shaped encoder that torch.jit.script refuses: the recipe traces it as the runs
    did (strict off), says so in its header, and serves from the eager module."""
    emitted = tmp_path / "bert_recipe.py"
    result = warmscope(
        "warmup", f"{MODELS}:bert_like", "--mode", "trace", "--set", "trace_strict=off",
        "--input", "int64[1,L]", "--dim", "L=8,16", "--iters", "12", "--repeat", "1",
        "--serve", "random", "--emit", str(emitted), "--quiet",
        json_path=tmp_path / "w.json", timeout=400,
    )  # fmt: skip
    doc = result.doc
    assert doc is not None, result.stderr
    check_document(doc, result.code, 1)
    assert doc["mode"] == "trace" and sorted(doc["served_order"]) == ["L=16", "L=8"]
    for c in doc["candidates"]:  # every candidate ran: none failed at torch.jit.script
        assert all(p["status"] == "ok" for p in c["processes"]), c["processes"]
    text = emitted.read_text()
    assert "torch.jit.trace(" in text and "strict=False" in text
    assert "torch.jit.script" not in text
    assert "model: the eager module; this recipe traces it" in text
    out = run_plain(emitted, MODELS, "bert_like")
    assert "served {'L': 16} ['last_hidden_state', 'pooler_output']" in out


def test_compile_factory_dynamic_and_a_cache_artifact_that_torch_does_not_make(
    tmp_path: Path,
) -> None:
    """A compile warm-up (the convolution: a compile's every process costs its tracing),
    verified in fresh processes, each on a cold cache and again on the user's own. Their
    records say which cache each had: a cold one empty and gone with its process, the user's
    as it was found, and left alone."""
    emitted = tmp_path / "compiled_recipe.py"
    # The user keeps a compile cache: something is in it.
    yours = tmp_path / "user-inductor"
    (yours / "fxgraph").mkdir(parents=True)
    (yours / "fxgraph" / "entry").write_text("compiled before")
    result = warmscope(
        "warmup", f"{MODELS}:conv", "--mode", "compile", "--set", "compile_backend=eager",
        "--input", "1xLx16", "--dim", "L=8,16", "--iters", "8", "--repeat", "1",
        "--guard", "--cache-artifact", "--emit", str(emitted), "--quiet",
        json_path=tmp_path / "w.json", timeout=600,
        env={"TORCHINDUCTOR_CACHE_DIR": str(yours)},
    )  # fmt: skip
    doc = result.doc
    assert doc is not None, result.stderr
    check_document(doc, result.code, 1)
    # Measured as a fresh server starts: every process a cold cache; the user's beside it.
    assert doc["compile_cache"] == "cold"
    cells = [doc["baseline"], *(c for c in doc["candidates"] if c["processes"])]
    for cell in cells:
        for p in cell["processes"]:
            cold = cache_of(p["record"])
            assert cold["mode"] == "cold", p["record"]
            assert cold["had_entries"] is False and cold["entries_before"] == 0
            folder = Path(cold["folders"]["inductor"]).parent
            assert folder.name.startswith("warmscope-compile-cache-")
            assert not folder.exists(), "a cold cache is the process's own and goes with it"
    mine = doc["your_cache"]["baseline"]["processes"]
    assert [cache_of(p["record"])["mode"] for p in mine] == ["user"]
    user = cache_of(mine[0]["record"])
    assert user["had_entries"] is True and user["entries_before"] >= 1
    assert user["folders"]["inductor"] == str(yours)
    assert (yours / "fxgraph" / "entry").exists(), "the user's cache is left alone"
    assert doc["candidates"][0]["your_cache"]["startup_ms"]["median"] > 0
    assert "with your compile cache: L=" in doc["answer"] and "cold cache" in doc["answer"]
    assert "your cache" in result.stdout
    each, marked, cached = doc["candidates"]
    # As the runs compiled it, then one call of each size; one symbolic size over the range.
    assert each["label"] == "compile, then each size"
    assert each["recipe"]["compile_options"] == {"backend": "eager"}
    assert [c["count"] for c in each["recipe"]["calls"]] == [1, 1]
    assert marked["recipe"]["mark_dynamic"] == [{"input": 0, "axis": 1, "min": 8, "max": 16}]
    assert each["recipe"]["guard_recompile"] is True
    # The eager backend compiles nothing to disk: no artifact, the candidate is dropped.
    assert cached["verdict"] == "not verified" and "artifact" in cached["why"]
    assert cached["recipe"]["compile_options"] == {"backend": "eager", "dynamic": True}
    # Told before the first process ended: the processes to come, then their time.
    assert result.stderr.startswith("warmup     plan: 9 processes: 2 observe, 1 makes a cache")
    assert "of them in your own compile cache" in result.stderr
    assert "warmup     estimate: about " in result.stderr and doc["estimate_s"] > 0
    if doc["chosen"] == each["label"]:
        text = emitted.read_text()
        assert "fail_on_recompile" in text and "torch.compile(model" in text
        run_plain(emitted, MODELS, "conv")


# -- bad input ----------------------------------------------------------------------------------


def test_a_run_serving_a_shape_the_recipe_does_not_declare_is_refused(
    tmp_path: Path, record_dir: Path
) -> None:
    recipe = tmp_path / "r.py"
    recipe.write_text(
        emit_python(
            Recipe(
                "warm-up calls",
                "script",
                [{"dtype": "float32", "shape": [1, "T", 40]}],
                [{"T": 20}, {"T": 30}],
                [Call({"T": 20}, 1), Call({"T": 30}, 1)],
            )
        )
    )
    record = tmp_path / "run.jsonl"
    result = warmscope(
        "run", "sample:speech", "--input", "1xTx40", "--dim", "T=20,50", "--iters", "4",
        "--recipe", str(recipe), "--record", str(record), "--quiet",
    )  # fmt: skip
    assert result.code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "T=50, which it does not declare" in lines[0], result.stderr
    assert record.exists()


def test_a_model_that_fails_leaves_no_recipe_to_verify(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    result = warmscope(
        "warmup", f"{FACTORIES}:raises_at_3", "--input", "2x8", "--iters", "10",
        "--repeat", "1", "--record", str(folder), "--quiet", timeout=200,
    )  # fmt: skip
    assert result.code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "every baseline process failed" in lines[0], result.stderr
    assert list((folder / "observe").glob("*.jsonl"))  # the measured process is kept


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--emit-cpp", "x.cpp"], "libtorch loads TorchScript archives"),
        (["--emit", "nowhere/x.py"], "no such folder"),
        (["--serve", "sideways"], "invalid choice"),
        (["--emit", "x.txt"], "a recipe is a .py file"),
        (["--recipe", "nothere.py"], "--recipe"),
    ],
)
def test_bad_usage_is_one_line(
    tmp_path: Path,
    args: list[str],
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Refused as the command line is read, before any process starts: the command line's
    own ``main``, here (a refusal's way out of the process: the other tests' commands)."""
    from warmscope.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["warmup", f"{MODELS}:conv", "--input", "1x8x16", *args]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], err
