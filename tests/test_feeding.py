"""Feeding real models (issue 12): keyword inputs, chosen values, input files, shapes that
change, idle gaps, compile events whatever the mode. Real children, real torch, a child shared
by the tests that read the same run; what the child's loader and input maker decide on their
own is called here directly, the same code a child runs."""

from __future__ import annotations

import csv
import itertools
import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FACTORIES, TARGETS, Result, warmscope
from warmscope.cli import make_parser
from warmscope.cli.options import build_settings
from warmscope.core.child.inputs import build_inputs
from warmscope.core.child.loading import describe, load_inputs_file, load_model
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.record import read_run
from warmscope.core.data.summary_rows import idle_probe_rows, shape_rows
from warmscope.core.data.targets import parse_input
from warmscope.core.output.export import markdown, write_csv
from warmscope.core.output.report import report

FEEDING = TARGETS / "feeding.py"
LM_INPUTS = (
    "--input",
    "input_ids=int64[1,8]:randint(0,100)",
    "--input",
    "attention_mask=int64[1,8]:ones",
)


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """A transformers-style model fed keyword inputs of chosen, seeded values, traced with
    ``trace_strict=off`` (it returns a dict): one child for the tests that read it."""
    tmp = tmp_path_factory.mktemp("lm")
    return warmscope(
        "run",
        f"{FEEDING}:tiny_lm",
        *LM_INPUTS,
        "--mode",
        "trace",
        "--set",
        "trace_strict=off",
        "--seed",
        "7",
        "--iters",
        "3",
        "--no-explain",
        "--record",
        str(tmp / "r.jsonl"),
        json_path=tmp / "r.json",
    )


def test_keyword_inputs_reach_a_transformers_style_model(lm_run: Result) -> None:
    r = lm_run
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert r.doc["inputs"] == ["input_ids=int64[1,8]", "attention_mask=int64[1,8]"]
    assert r.doc["summary"]["peak_rss_mb"] > 50
    assert "memory     peak RSS" in r.stdout


def test_trace_strict_off_traces_a_model_returning_a_dict(lm_run: Result) -> None:
    assert lm_run.code == 0, lm_run.stderr
    assert lm_run.doc is not None and lm_run.doc["mode"] == "trace"


def test_values_are_chosen_and_seeded(lm_run: Result) -> None:
    """The seed and the chosen values are the run's settings, and the command keeps them (the
    mask of ones is what lets the model run at all: zeros hide every token)."""
    assert lm_run.code == 0, lm_run.stderr
    assert lm_run.doc is not None and lm_run.doc["settings"]["seed"] == 7
    assert "input_ids=int64[1,8]:randint(0,100)" in lm_run.doc["command"]
    unseeded = build_settings(make_parser("run").parse_args([f"{FEEDING}:tiny_lm"]))
    assert unseeded.to_json()["seed"] == 0


def specs(*texts: str) -> list[dict[str, Any]]:
    return [parse_input(t).to_json() for t in texts]


@pytest.fixture
def feeding_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Loading a target in this process puts its folder on ``sys.path`` and its module in
    ``sys.modules``, as the child does: both are put back after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("_warmscope_target_") or name in ("feeding", "factories"):
            del sys.modules[name]


def test_values_are_drawn_from_their_ranges_and_the_seed_repeats_them(
    feeding_module: None,
) -> None:
    import torch

    from tests.targets.feeding import Lengths

    chosen = specs("2x4:uniform(-1,1)", "lengths=int64[2]:randint(1,5)")
    (x,), kw = build_inputs(torch, chosen, "cpu", None, seed=7)
    assert bool((x >= -1).all()) and bool((x <= 1).all())
    assert kw["lengths"].dtype == torch.int64 and bool((kw["lengths"] >= 1).all())
    assert bool((kw["lengths"] < 5).all())
    Lengths()(x, **kw)  # refuses a length of 0: the values are what was chosen
    (again,), kw_again = build_inputs(torch, chosen, "cpu", None, seed=7)
    assert torch.equal(x, again) and torch.equal(kw["lengths"], kw_again["lengths"])
    (other,), _ = build_inputs(torch, chosen, "cpu", None, seed=8)
    assert not torch.equal(x, other)


def test_integer_inputs_stay_zeros_by_default(feeding_module: None) -> None:
    """Integers default to zeros (valid indices for embeddings): the mask of zeros hides
    every token, which the model refuses in its own words."""
    import torch

    from tests.targets.feeding import TinyLM

    _, kw = build_inputs(
        torch, specs("input_ids=int64[1,8]", "attention_mask=int64[1,8]"), "cpu", None
    )
    assert set(kw) == {"input_ids", "attention_mask"}
    assert all(t.dtype == torch.int64 and not bool(t.any()) for t in kw.values())
    with pytest.raises(ValueError, match="attention_mask masks every token"):
        TinyLM()(**kw)


def test_a_factory_brings_keyword_inputs(tmp_path: Path, record_dir: Path) -> None:
    """A module's ``example_inputs()`` with keywords, through a real child to the report."""
    r = warmscope(
        "run",
        f"{TARGETS}/lm_examples.py:model",
        "--iters",
        "3",
        "--no-explain",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert r.doc["inputs"][-1] == "attention_mask=int64[1,8]"
    # The report names them, although no --input gave them.
    text = report(read_run(Path(r.doc["record"])))
    assert "`attention_mask=int64[1,8]`" in text and "example inputs" in text


@pytest.mark.parametrize(
    ("factory", "described"),
    [
        ("lm_with_kwargs", ["input_ids=int64[1,8]", "attention_mask=int64[1,8]"]),
        ("lm_with_args_and_kwargs", ["int64[1,8]", "attention_mask=int64[1,8]"]),
    ],
)
def test_a_factory_returning_its_inputs_brings_keyword_inputs(
    factory: str, described: list[str], feeding_module: None
) -> None:
    """``(model, kwargs)`` and ``(model, args, kwargs)``: what the child's loader makes of a
    factory's own inputs, the same code that runs in a child."""
    import torch

    target = {"kind": "file", "path": str(FEEDING), "factory": factory, "spec": factory}
    model, examples = load_model(torch, target, "cpu", None)
    assert isinstance(model, torch.nn.Module) and examples is not None
    assert describe(torch, examples) == described
    args, kwargs = examples
    model(*args, **kwargs)  # the model takes them as they are split


MYMODEL = f"""
import sys

sys.path.insert(0, {str(TARGETS)!r})
from feeding import tiny_lm as build  # noqa: E402
"""


@pytest.fixture(scope="module")
def inputs_file_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    """A module target found in the current folder (``mymodel:build``, as ``python -m`` finds
    it), fed a dict of inputs from a file: one child for the tests of both."""
    import torch

    folder = tmp_path_factory.mktemp("inputs_file")
    (folder / "mymodel.py").write_text(MYMODEL)
    path = folder / "inputs.pt"
    torch.save(
        {
            "input_ids": torch.randint(0, 100, (1, 6)),
            "attention_mask": torch.ones(1, 6, dtype=torch.long),
        },
        path,
    )
    r = warmscope(
        "run",
        "mymodel:build",
        "--inputs",
        str(path),
        "--iters",
        "3",
        "--no-explain",
        "--record",
        str(folder / "r.jsonl"),
        json_path=folder / "r.json",
        cwd=folder,
    )
    return r, path


def test_an_inputs_file_with_a_dict(inputs_file_run: tuple[Result, Path]) -> None:
    r, path = inputs_file_run
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert r.doc["inputs"] == ["input_ids=int64[1,6]", "attention_mask=int64[1,6]"]
    assert r.doc["settings"]["inputs_file"] == str(path)


def test_module_factory_resolves_from_the_current_folder(
    inputs_file_run: tuple[Result, Path],
) -> None:
    r, _ = inputs_file_run
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["settings"]["target"] == "mymodel:build"


def test_a_bad_inputs_file_is_a_one_line_usage_error(tmp_path: Path) -> None:
    """Refused by the child's loader in one line (a child's usage error is one line and exit 2:
    test_bad_input); a missing file is refused by the parent, before any child."""
    import torch

    path = tmp_path / "inputs.pt"
    path.write_text("not a tensor file\n")
    with pytest.raises(UsageError) as refused:
        load_inputs_file(torch, str(path), "cpu")
    assert "cannot load it with torch.load(weights_only=True)" in str(refused.value)
    assert "\n" not in str(refused.value)
    missing = warmscope("run", f"{FEEDING}:tiny_lm", "--inputs", str(tmp_path / "none.pt"))
    assert missing.code == 2 and "no such file" in missing.stderr
    assert missing.stderr.count("\n") == 1


@pytest.fixture(scope="module")
def schedule_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    """Three shapes in a ramp under compile, static, with a recompile limit of two (the third
    shape falls back to eager), and an idle probe after: the run whose --json and record the
    schedule's, the limit's and the read-back's tests share."""
    tmp = tmp_path_factory.mktemp("schedule")
    r = warmscope(
        "run",
        f"{FEEDING}:rows",
        "--mode",
        "compile",
        "--set",
        "compile_backend=eager",
        "--set",
        "compile_dynamic=off",
        "--set",
        "dynamo.recompile_limit=2",
        "--input",
        "2xT",
        "--dim",
        "T=4,8,16",
        "--schedule",
        "ramp",
        "--iters",
        "9",
        "--idle-probe",
        "0",
        "--no-explain",
        "--record",
        str(tmp / "r.jsonl"),
        json_path=tmp / "r.json",
    )
    return r, tmp / "r.json"


def test_a_schedule_under_compile_pins_the_recompile_to_the_second_shape(
    schedule_run: tuple[Result, Path],
) -> None:
    r, _ = schedule_run
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert [row["shape"] for row in r.doc["iterations"]] == ["T=4"] * 3 + ["T=8"] * 3 + ["T=16"] * 3
    recompiles = [e["iteration"] for e in r.doc["events"] if e["kind"] == "recompile"]
    assert recompiles and recompiles[0] == 3, r.doc["events"]
    rows = r.doc["summary"]["shapes"]
    assert [(s["key"], s["dims"], s["count"], s["first_iteration"]) for s in rows] == [
        ("T=4", {"T": 4}, 3, 0),
        ("T=8", {"T": 8}, 3, 3),
        ("T=16", {"T": 16}, 3, 6),
    ]
    assert any(e["kind"] == "compile" for e in rows[0]["events"])
    assert any(e["kind"] == "recompile" for e in rows[1]["events"])
    for row in rows:
        assert row["first_ms"] > row["p50_ms"] > 0
    assert "T=16" in r.stdout and "recompile" in r.stdout


def test_compile_event_with_duration_in_iteration_0(schedule_run: tuple[Result, Path]) -> None:
    # The eager backend keeps the run cheap; dynamo still compiles the frame.
    r, _ = schedule_run
    assert r.code == 0, r.stderr
    compiles = r.events("compile")
    assert compiles and compiles[0]["iteration"] == 0
    assert compiles[0]["ms"] > 0
    assert r.doc is not None and r.doc["iterations"][0]["label"] == "compile"


def test_the_recompile_limit_is_a_warning_event(schedule_run: tuple[Result, Path]) -> None:
    r, _ = schedule_run
    assert r.code == 0, r.stderr
    assert r.doc is not None
    limit = [e for e in r.doc["events"] if "falls back to eager from here" in e["title"]]
    assert limit and limit[0]["kind"] == "warning" and limit[0]["iteration"] == 6, r.doc["events"]
    assert "recompile_limit" in limit[0]["title"]


@pytest.fixture(scope="module")
def gap_run(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """A factory that compiles its model itself, run in eager mode with gaps before each pass,
    an idle probe after, and a torch config option this torch lacks: one child (one import of
    dynamo) for the tests that read them."""
    tmp = tmp_path_factory.mktemp("gap")
    return warmscope(
        "run",
        f"{FEEDING}:compiles_itself",
        "--input",
        "2x8",
        "--iters",
        "12",
        "--gap",
        "0.01",
        "--idle-probe",
        "0,0.05",
        "--set",
        "dynamo.no_such_option=1",
        "--no-explain",
        "--record",
        str(tmp / "r.jsonl"),
        json_path=tmp / "r.json",
    )


def test_gap_and_idle_probe(gap_run: Result) -> None:
    r = gap_run
    assert r.code == 0, r.stderr
    assert r.doc is not None
    starts = [row["start_ms"] for row in r.doc["iterations"]]
    assert all(b - a >= 10 for a, b in itertools.pairwise(starts))
    probe = r.doc["summary"]["idle_probe"]
    assert [p["idle_s"] for p in probe] == [0, 0.05]
    assert all(len(p["ms"]) == 3 and all(t > 0 for t in p["ms"]) for p in probe)
    assert probe[0]["steady_p50_ms"] == r.doc["summary"]["p50_ms"]
    assert "idle probe" in r.stdout
    text = report(read_run(Path(r.doc["record"])))
    assert "## After idle gaps" in text and "| 0.05 |" in text
    assert "--gap 0.01 --idle-probe 0,0.05" in text


def test_cpu_fusion_without_llvm_is_refused_before_the_run(record_dir: Path) -> None:
    r = warmscope(
        "run",
        f"{FACTORIES}:tiny",
        *("--input", "2x8", "--set", "cpu_fusion=on", "--iters", "2", "--no-explain"),
    )
    if r.code == 0:
        pytest.skip("this torch has LLVM: cpu_fusion=on is honoured")
    assert r.code == 2, r.stderr
    assert "built without LLVM" in r.stderr and r.stderr.count("\n") == 1


def test_a_factory_that_compiles_by_itself_gets_labelled_compiles(gap_run: Result) -> None:
    r = gap_run
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["mode"] == "eager"
    assert any(e["kind"] == "compile" and e["iteration"] == 0 for e in r.doc["events"])
    assert r.doc["iterations"][0]["label"] == "compile"


def test_a_torch_config_option_this_torch_lacks_is_reported(gap_run: Result) -> None:
    assert gap_run.code == 0, gap_run.stderr
    assert "knob dynamo.no_such_option=1 refused" in gap_run.stdout


def test_a_pt2_export_archive_runs_with_its_example_inputs(
    tmp_path: Path, record_dir: Path
) -> None:
    import torch

    from tests.targets.factories import Tiny

    path = tmp_path / "tiny.pt2"
    torch.export.save(torch.export.export(Tiny(), (torch.randn(2, 8),)), path)
    r = warmscope("run", str(path), "--iters", "3", "--no-explain", json_path=tmp_path / "r.json")
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["inputs"] == ["float32[2,8]"]


def test_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "warmscope.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("warmscope ")


NEW_OPTIONS = [
    "--input input_ids=int64[1,L]:randint(0,30522) --input attention_mask=int64[1,L]:ones --dim L=32..128:32",
    "--input 1xTx40 --input mask=int64[1,T]:ones --dim T=200,300 --schedule random --seed 3",
    "--inputs some.pt --gap 0.5 --idle-probe 1,5",
    "--input 2x8:fill(0.5) --input normal=2x3:uniform(-1,1.5) --set trace_strict=off",
    "--input 2x8:normal --set dynamo.cache_size_limit=4 --set inductor.max_autotune=1",
]


@pytest.mark.parametrize("options", NEW_OPTIONS)
def test_the_reproduce_command_parses_back_to_the_same_settings(options: str) -> None:
    argv = ["run", "model.py:build", *shlex.split(options)]
    settings = build_settings(make_parser("run").parse_args(argv[1:]))
    again = settings.command_line()
    assert again[:2] == ["warmscope", "run"]
    back = build_settings(make_parser("run").parse_args(again[2:]))
    assert back.to_json() == settings.to_json()


def test_new_options_are_in_help_and_knobs() -> None:
    text = make_parser("run").format_help()
    for flag in ("--inputs", "--dim", "--schedule", "--seed", "--gap", "--idle-probe", "--version"):
        assert flag in text
    knobs = subprocess.run(
        [sys.executable, "-m", "warmscope.cli", "knobs"], capture_output=True, text=True
    ).stdout
    assert (
        "trace_strict" in knobs and "dynamo.NAME=VALUE" in knobs and "inductor.NAME=VALUE" in knobs
    )


def test_the_json_document_reads_back_with_its_shapes(
    schedule_run: tuple[Result, Path], tmp_path: Path
) -> None:
    r, json_path = schedule_run
    assert r.code == 0, r.stderr
    from_doc = read_run(json_path)
    from_record = read_run(Path(json.loads(json_path.read_text())["record"]))
    assert shape_rows(from_doc) == shape_rows(from_record)
    assert list(from_doc.shape_of) == list(from_record.shape_of) == [0] * 3 + [1] * 3 + [2] * 3
    assert idle_probe_rows(from_doc) == idle_probe_rows(from_record)
    text = markdown(from_record)
    assert "| `T=4` | #0 |" in text and "| `T=8` | #3 |" in text and "| 0 |" in text
    write_csv(tmp_path / "r.csv", from_record)
    with (tmp_path / "r.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["shape"] for r in rows[:4]] == ["T=4"] * 3 + ["T=8"]
