"""Feeding real models (issue 12): keyword inputs, chosen values, input files, shapes that
change, idle gaps, compile events whatever the mode. Real children, real torch."""

from __future__ import annotations

import csv
import itertools
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FACTORIES, TARGETS, warmscope
from warmscope.cli import make_parser
from warmscope.cli.options import build_settings
from warmscope.core.data.record import read_run
from warmscope.core.output.export import markdown, write_csv
from warmscope.core.output.report import report

FEEDING = TARGETS / "feeding.py"
LM_INPUTS = (
    "--input",
    "input_ids=int64[1,8]:randint(0,100)",
    "--input",
    "attention_mask=int64[1,8]:ones",
)


def test_keyword_inputs_reach_a_transformers_style_model(tmp_path: Path, record_dir: Path) -> None:
    r = warmscope(
        "run", f"{FEEDING}:tiny_lm", *LM_INPUTS, "--iters", "5", json_path=tmp_path / "r.json"
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert r.doc["inputs"] == ["input_ids=int64[1,8]", "attention_mask=int64[1,8]"]
    assert r.doc["settings"]["seed"] == 0
    assert r.doc["summary"]["peak_rss_mb"] > 50
    assert "memory     peak RSS" in r.stdout


def test_integer_inputs_stay_zeros_by_default(tmp_path: Path, record_dir: Path) -> None:
    # The mask of zeros hides every token: the model's own error, and exit 1.
    r = warmscope(
        "run",
        f"{FEEDING}:tiny_lm",
        "--input",
        "input_ids=int64[1,8]",
        "--input",
        "attention_mask=int64[1,8]",
        "--iters",
        "2",
    )
    assert r.code == 1
    assert "attention_mask masks every token" in r.stderr


@pytest.mark.parametrize(
    "target",
    [
        f"{FEEDING}:lm_with_kwargs",
        f"{FEEDING}:lm_with_args_and_kwargs",
        f"{TARGETS}/lm_examples.py:model",
    ],
)
def test_a_factory_brings_keyword_inputs(target: str, tmp_path: Path, record_dir: Path) -> None:
    r = warmscope("run", target, "--iters", "3", json_path=tmp_path / "r.json")
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert r.doc["inputs"][-1] == "attention_mask=int64[1,8]"
    # The report names them, although no --input gave them.
    text = report(read_run(Path(r.doc["record"])))
    assert "`attention_mask=int64[1,8]`" in text and "example inputs" in text


def test_values_are_chosen_and_seeded(tmp_path: Path, record_dir: Path) -> None:
    r = warmscope(
        "run",
        f"{FEEDING}:lengths",
        "--input",
        "2x4:uniform(-1,1)",
        "--input",
        "lengths=int64[2]:randint(1,5)",
        "--seed",
        "7",
        "--iters",
        "3",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["settings"]["seed"] == 7
    command = r.doc["command"]
    assert "lengths=int64[2]:randint(1,5)" in command


def test_an_inputs_file_with_a_dict(tmp_path: Path, record_dir: Path) -> None:
    import torch

    path = tmp_path / "inputs.pt"
    torch.save(
        {
            "input_ids": torch.randint(0, 100, (1, 6)),
            "attention_mask": torch.ones(1, 6, dtype=torch.long),
        },
        path,
    )
    r = warmscope(
        "run",
        f"{FEEDING}:tiny_lm",
        "--inputs",
        str(path),
        "--iters",
        "3",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert r.doc["inputs"] == ["input_ids=int64[1,6]", "attention_mask=int64[1,6]"]
    assert r.doc["settings"]["inputs_file"] == str(path)


def test_a_bad_inputs_file_is_one_line_and_exit_2(tmp_path: Path, record_dir: Path) -> None:
    path = tmp_path / "inputs.pt"
    path.write_text("not a tensor file\n")
    r = warmscope("run", f"{FEEDING}:tiny_lm", "--inputs", str(path), "--iters", "3")
    assert r.code == 2, r.stderr
    assert r.stderr.count("\n") == 1
    assert "cannot load it with torch.load(weights_only=True)" in r.stderr
    missing = warmscope("run", f"{FEEDING}:tiny_lm", "--inputs", str(tmp_path / "none.pt"))
    assert missing.code == 2 and "no such file" in missing.stderr


def test_a_schedule_under_compile_pins_the_recompile_to_the_second_shape(
    tmp_path: Path, record_dir: Path
) -> None:
    r = warmscope(
        "run",
        f"{FEEDING}:rows",
        "--mode",
        "compile",
        "--set",
        "compile_backend=eager",
        "--input",
        "2xT",
        "--dim",
        "T=8,16",
        "--iters",
        "8",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert [row["shape"] for row in r.doc["iterations"]] == ["T=8", "T=16"] * 4
    recompiles = [e["iteration"] for e in r.doc["events"] if e["kind"] == "recompile"]
    assert recompiles and recompiles[0] == 1, r.doc["events"]
    rows = r.doc["summary"]["shapes"]
    assert [(s["key"], s["dims"], s["count"], s["first_iteration"]) for s in rows] == [
        ("T=8", {"T": 8}, 4, 0),
        ("T=16", {"T": 16}, 4, 1),
    ]
    assert any(e["kind"] == "compile" for e in rows[0]["events"])
    assert any(e["kind"] == "recompile" for e in rows[1]["events"])
    for row in rows:
        assert row["first_ms"] > row["p50_ms"] > 0
    assert "T=16" in r.stdout and "recompile" in r.stdout


def test_the_recompile_limit_is_a_warning_event(tmp_path: Path, record_dir: Path) -> None:
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
        "6",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert [row["shape"] for row in r.doc["iterations"]] == ["T=4"] * 2 + ["T=8"] * 2 + ["T=16"] * 2
    limit = [e for e in r.doc["events"] if "falls back to eager from here" in e["title"]]
    assert limit and limit[0]["kind"] == "warning" and limit[0]["iteration"] == 4, r.doc["events"]
    assert "recompile_limit" in limit[0]["title"]


def test_a_factory_that_compiles_by_itself_gets_labelled_compiles(
    tmp_path: Path, record_dir: Path
) -> None:
    r = warmscope(
        "run",
        f"{FEEDING}:compiles_itself",
        "--input",
        "2x8",
        "--iters",
        "4",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["mode"] == "eager"
    assert any(e["kind"] == "compile" and e["iteration"] == 0 for e in r.doc["events"])
    assert r.doc["iterations"][0]["label"] == "compile"


def test_gap_and_idle_probe(tmp_path: Path, record_dir: Path) -> None:
    r = warmscope(
        "run",
        f"{FACTORIES}:tiny",
        "--input",
        "2x8",
        "--iters",
        "12",
        "--gap",
        "0.01",
        "--idle-probe",
        "0,0.05",
        "--no-explain",
        json_path=tmp_path / "r.json",
    )
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


def test_trace_strict_off_traces_a_model_returning_a_dict(record_dir: Path) -> None:
    r = warmscope(
        "run",
        f"{FEEDING}:tiny_lm",
        *LM_INPUTS,
        "--mode",
        "trace",
        "--set",
        "trace_strict=off",
        "--iters",
        "3",
    )
    assert r.code == 0, r.stderr


def test_cpu_fusion_without_llvm_is_refused_before_the_run(record_dir: Path) -> None:
    r = warmscope(
        "run", f"{FACTORIES}:tiny", "--input", "2x8", "--set", "cpu_fusion=on", "--iters", "2"
    )
    if r.code == 0:
        pytest.skip("this torch has LLVM: cpu_fusion=on is honoured")
    assert r.code == 2, r.stderr
    assert "built without LLVM" in r.stderr and r.stderr.count("\n") == 1


def test_a_torch_config_option_this_torch_lacks_is_reported(
    tmp_path: Path, record_dir: Path
) -> None:
    r = warmscope(
        "run",
        f"{FACTORIES}:tiny",
        "--input",
        "2x8",
        "--set",
        "dynamo.no_such_option=1",
        "--iters",
        "2",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert "knob dynamo.no_such_option=1 refused" in r.stdout


def test_a_pt2_export_archive_runs_with_its_example_inputs(
    tmp_path: Path, record_dir: Path
) -> None:
    path = tmp_path / "tiny.pt2"
    script = (
        "import sys, torch; sys.path.insert(0, sys.argv[2]); from factories import Tiny; "
        "torch.export.save(torch.export.export(Tiny(), (torch.randn(2, 8),)), sys.argv[1])"
    )
    subprocess.run([sys.executable, "-c", script, str(path), str(TARGETS)], check=True)
    r = warmscope("run", str(path), "--iters", "3", json_path=tmp_path / "r.json")
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["inputs"] == ["float32[2,8]"]


def test_module_factory_resolves_from_the_current_folder(tmp_path: Path, record_dir: Path) -> None:
    (tmp_path / "mymodel.py").write_text(
        "import torch\n\ndef build():\n    return torch.nn.Linear(8, 2)\n"
    )
    r = warmscope("run", "mymodel:build", "--input", "2x8", "--iters", "2", cwd=tmp_path)
    assert r.code == 0, r.stderr


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


def test_the_json_document_reads_back_with_its_shapes(tmp_path: Path, record_dir: Path) -> None:
    r = warmscope(
        "run",
        f"{FEEDING}:rows",
        "--input",
        "2xT",
        "--dim",
        "T=4,8",
        "--iters",
        "6",
        "--idle-probe",
        "0",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    from_doc = read_run(tmp_path / "r.json")
    from_record = read_run(Path(json.loads((tmp_path / "r.json").read_text())["record"]))
    assert from_doc.shape_rows() == from_record.shape_rows()
    assert list(from_doc.shape_of) == list(from_record.shape_of) == [0, 1] * 3
    assert from_doc.idle_probe_rows() == from_record.idle_probe_rows()
    text = markdown(from_record)
    assert "| `T=4` | #0 |" in text and "| `T=8` | #1 |" in text and "| 0 |" in text
    write_csv(tmp_path / "r.csv", from_record)
    with (tmp_path / "r.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["shape"] for r in rows[:2]] == ["T=4", "T=8"]
