"""Operator breakdowns, traces, graphs and the report: real runs, real torch.profiler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Result, warmscope
from warmscope.cli import make_parser
from warmscope.cli.options import build_settings
from warmscope.core.data.breakdown import UNACCOUNTED, diff, steady_reference
from warmscope.core.data.record import read_run
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings, SettingsError, parse_profile_iters
from warmscope.core.output.hints import hints

ONE_THREAD = ("--set", "intra_op_threads=1")


def profiled_run(tmp: Path, target: str, iters: int = 20, *, in_run: bool = True) -> Result:
    """Profiled inside the measured process (``--profile-in-run``), or as a user gets it by
    default, in a separate process first. No explaining process after it (``--no-explain``):
    on a busy machine a warm-up call that stands out would get one, and profiles of its own."""
    return warmscope(
        "run",
        target,
        "--iters",
        str(iters),
        "--profile-iters",
        "0,1,steady",
        *(["--profile-in-run"] if in_run else []),
        "--no-explain",
        *ONE_THREAD,
        "--record",
        str(tmp / "run.jsonl"),
        json_path=tmp / "run.json",
    )


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Result:
    return profiled_run(tmp_path_factory.mktemp("speech"), "sample:speech")


@pytest.fixture(scope="module")
def quantized(tmp_path_factory: pytest.TempPathFactory) -> Result:
    # In a separate process, as by default: profiled inside the measured one (torch 2.13, this
    # test's machine), the first call's extra time showed as time in no operator, and the
    # int8 operators' own times barely above steady.
    return profiled_run(tmp_path_factory.mktemp("quantized"), "sample:quantized_cnn", in_run=False)


def test_first_iteration_has_more_unaccounted_time_than_steady(speech: Result) -> None:
    assert speech.code == 0, speech.stderr
    profiles = {p["iteration"]: p for p in speech.doc["profiles"]}
    assert sorted(profiles) == [0, 1, 20]  # 0, 1 and one steady pass after the 20 iterations
    steady = profiles[20]
    assert speech.doc["summary"]["steady_from"] <= 20
    assert profiles[0]["unaccounted_ms"] > steady["unaccounted_ms"]
    for p in profiles.values():
        assert p["ops"] and p["wall_ms"] >= p["ops_ms"] > 0
        assert {"name", "self_ms", "total_ms", "calls", "shapes"} <= set(p["ops"][0])
    # Profiled iterations are marked and kept out of the statistics.
    rows = speech.doc["iterations"]
    assert [r["i"] for r in rows if r.get("profiled")] == [0, 1, 20]
    assert speech.doc["summary"]["count"] == 21
    assert speech.doc["summary"]["steady_count"] <= 21 - 3


def test_traces_are_valid_chrome_json(speech: Result) -> None:
    for p in speech.doc["profiles"]:
        trace = json.loads(Path(p["trace"]).read_text())
        assert trace["traceEvents"], "the trace has events"
        assert any(e.get("ph") == "X" for e in trace["traceEvents"])
    assert "trace " in speech.stdout  # `warmscope run` says where the traces are


def test_report_has_environment_warmup_table_and_reproduce_command(
    speech: Result, tmp_path: Path
) -> None:
    out = tmp_path / "report.md"
    r = warmscope("report", speech.doc["record"], "-o", str(out))
    assert r.code == 0, r.stderr
    text = out.read_text()
    assert "## Environment" in text and speech.doc["env"]["torch"] in text
    assert "## Warm-up iterations" in text and "| 0 |" in text and "profiling run" in text
    assert "## Where the time went" in text and "(not in any operator)" in text
    assert "## Reproduce" in text
    assert (
        "warmscope run sample:speech --set intra_op_threads=1 --iters 20 --profile-iters 0,1,steady"
        in text
    )


def test_reproduce_command_parses_back_to_the_runs_settings(speech: Result) -> None:
    """The line the report prints gives back the run's settings, knobs and all. (That such a
    line runs the same plan end to end: ``test_run_plan``'s reproduce test, a real child.)"""
    from warmscope.core.output.report import reproduce

    data = read_run(Path(speech.doc["record"]))
    argv = reproduce(data)
    assert argv[:3] == ["warmscope", "run", "sample:speech"]
    again = build_settings(make_parser("run").parse_args(argv[2:]))
    assert again.knobs == speech.doc["settings"]["knobs"]
    assert again == data.settings


def test_quantized_first_pass_is_named_by_its_operators(quantized: Result) -> None:
    assert quantized.code == 0, quantized.stderr
    data = read_run(Path(quantized.doc["record"]))
    ref = steady_reference(data.profiles, data.summary().steady_from)
    assert ref == 20
    rows = diff(data.profiles[0], data.profiles[ref])
    # What the run shows (not assumed): the first pass is far slower than steady state, and
    # what leads it is the int8 operators or time in no operator (weight packing and lazy
    # initialisation land in one or the other from one process to the next on this machine).
    assert data.profiles[0]["wall_ms"] > 5 * data.profiles[ref]["wall_ms"]
    first = rows[0]
    assert first.name == UNACCOUNTED or first.name.startswith(("quantized::", "aten::quant")), [
        d.name for d in rows[:3]
    ]
    assert first.slow_ms > 2 * first.steady_ms
    assert any("iteration 0" in h for h in hints(data))


def test_optimized_graph_differs_from_loaded_graph(speech: Result) -> None:
    graphs = speech.doc["graphs"]
    assert graphs["code"] and graphs["graph"] and graphs["optimized"]
    assert graphs["optimized"] != graphs["graph"]
    assert "prim::CallMethod" in graphs["graph"]  # as loaded: submodules are calls
    assert "prim::CallMethod" not in graphs["optimized"]  # once warm: inlined


# -- pure pieces ------------------------------------------------------------------------------


def test_profile_iters_parsing() -> None:
    assert parse_profile_iters("0,1,2,50") == ([0, 1, 2, 50], False)
    assert parse_profile_iters("0-3,steady") == ([0, 1, 2, 3], True)
    assert parse_profile_iters("") == ([], False)
    with pytest.raises(SettingsError, match="expected N, N-M or steady"):
        parse_profile_iters("first")
    with pytest.raises(SettingsError, match="only 10 iterations"):
        parse_profile_iters("12", iters=10)


def op(name: str, self_ms: float, calls: int = 1) -> dict[str, object]:
    return {"name": name, "self_ms": self_ms, "total_ms": self_ms, "calls": calls, "shapes": ""}


def test_diff_finds_new_and_slower_operators_and_unaccounted_time() -> None:
    slow = {
        "wall_ms": 30.0,
        "ops_ms": 12.0,
        "unaccounted_ms": 18.0,
        "ops": [op("aten::conv2d", 10.0), op("aten::copy_", 1.5), op("aten::relu", 0.5)],
    }
    steady = {
        "wall_ms": 3.0,
        "ops_ms": 2.9,
        "unaccounted_ms": 0.1,
        "ops": [op("aten::conv2d", 2.0), op("aten::relu", 0.45)],
    }
    rows = diff(slow, steady)
    assert [r.name for r in rows] == [UNACCOUNTED, "aten::conv2d", "aten::copy_"]
    assert rows[2].kind == "only here" and rows[1].kind == "slower"
    assert rows[0].added_ms == pytest.approx(17.9)


def test_no_hint_without_data() -> None:
    data = RunData(settings=RunSettings(target="x"))
    data.add_iterations(0, [5.0, 1.0, 1.0, 1.0, 1.0], [0, 5, 6, 7, 8])
    assert hints(data) == []


def test_profiled_iterations_counted_when_asked(speech: Result) -> None:
    data = read_run(Path(speech.doc["record"]))
    assert data.summary().steady_count < data.count  # by default the profiled ones are left out
    data.settings.profiled_in_stats = True
    counted = data.summary()
    assert counted.count == data.count and counted.first_ms == data.ms[0]
    assert counted.steady_count == data.count - (counted.steady_from or 0)
    back = build_settings(make_parser("run").parse_args(["sample:speech", "--profiled-in-stats"]))
    assert back.profiled_in_stats and "--profiled-in-stats" in back.command_line()


def test_a_separate_profile_process_leaves_the_headline_unchanged(quantized: Result) -> None:
    """By default the profile comes from a process of its own (trtexec's
    --separateProfileRun): the measured run has no profiled iteration, so its first iteration
    and warm-up excess are the real ones, and it still carries the operator breakdowns."""
    from warmscope.core.data import stats
    from warmscope.core.output.report import report

    assert quantized.code == 0, quantized.stderr
    doc = quantized.doc
    assert doc is not None
    rows = doc["iterations"]
    assert len(rows) == 20 and not any(row.get("profiled") for row in rows)
    summary = doc["summary"]
    assert summary["first_ms"] == rows[0]["ms"]
    labelled = [row["i"] for row in rows if row.get("label")]
    expected = stats.summarize([row["ms"] for row in rows], known_warmup=labelled)
    assert summary["steady_count"] == expected.steady_count == 20 - expected.steady_from
    assert summary["warmup_excess_ms"] == pytest.approx(expected.warmup_excess_ms)
    assert summary["warmup_excess_ms"] > 0, "iteration 0's excess is counted, not profiled away"
    # The profiles came from the other process, which has its own record.
    record = Path(doc["record"])
    source = record.with_name("run.profile.jsonl")
    assert sorted(p["iteration"] for p in doc["profiles"]) == [0, 1, 20]
    assert all(p["separate"] and p["source"] == str(source) for p in doc["profiles"])
    profiled = read_run(source)
    assert profiled.profiled_here() == [0, 1, 20] and profiled.settings.profile_in_run is True
    assert "(separate process)" in quantized.stdout
    assert "come from a separate process" in report(read_run(record))


DATA = Path(__file__).parent / "data"


def test_the_profiling_hint_claims_only_what_the_records_support() -> None:
    """The presets run without the profiling executor's warm-up by construction; what that
    costs or saves is not claimed from one process each, nor from a run of the same
    settings."""
    script = read_run(DATA / "speech-script.jsonl")
    no_profiling = read_run(DATA / "speech-no-profiling.jsonl")

    def profiling_hint(compared: RunData | None) -> str:
        return next(h for h in hints(script, compared) if "profiling executor's warm-up" in h)

    alone = profiling_hint(None)
    assert "trades" not in alone and "warmscope sweep sample:speech" in alone
    against = profiling_hint(no_profiling)
    assert "one process each cannot tell a first iteration apart" in against
    assert "(within noise)" in against, "the steady p50 by the within-run rule"
    assert not any(word in against for word in ("better", "worse", "sooner", "faster"))
    same = profiling_hint(read_run(DATA / "speech-script.jsonl"))
    assert "same settings, so it cannot tell" in same and "×" not in same
