"""Unit tests of the pure core pieces: specs, knobs, settings, the log parser, the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warmscope.core.child import protocol
from warmscope.core.child.knobs import KNOBS, KnobError, knob, parse_fusion_strategy
from warmscope.core.data.labels import label_for
from warmscope.core.data.record import RecordError, RecordWriter, read_run
from warmscope.core.data.settings import PRESETS, RunSettings, SettingsError
from warmscope.core.data.targets import (
    DTYPES,
    InputSpec,
    TargetError,
    parse_dim,
    parse_input,
    resolve_target,
)
from warmscope.core.run.jitlog import StderrParser

FAST = settings(derandomize=True, deadline=None, database=None)


# -- input specs ------------------------------------------------------------------------------


@FAST
@given(st.sampled_from(DTYPES), st.lists(st.integers(0, 4096), min_size=0, max_size=5))
def test_input_spec_round_trips(dtype: str, shape: list[int]) -> None:
    spec = InputSpec(dtype, tuple(shape))
    if dtype == "float32" and not shape:
        return  # a float32 scalar has no plain form; float32[] is its spelling
    assert parse_input(str(spec)) == spec


def test_input_spec_forms() -> None:
    assert parse_input("1x300x40") == InputSpec("float32", (1, 300, 40))
    assert parse_input("int64[1,128]") == InputSpec("int64", (1, 128))
    assert parse_input("bfloat16[2, 3]") == InputSpec("bfloat16", (2, 3))
    assert parse_input("long[4]") == InputSpec("int64", (4,))


def test_input_spec_names_values_and_symbols() -> None:
    spec = parse_input("input_ids=int64[1,L]:randint(0,30522)")
    assert spec == InputSpec("int64", (1, "L"), "input_ids", "randint", (0.0, 30522.0))
    assert str(spec) == "input_ids=int64[1,L]:randint(0,30522)"
    assert spec.symbols == ("L",)
    assert parse_input("1xTx40") == InputSpec("float32", (1, "T", 40))
    assert parse_input("mask=int64[1,128]:ones").gen == "ones"
    assert parse_input("2x3:fill(0.5)").args == (0.5,)
    assert parse_input("2x3:uniform(-1,1)").args == (-1.0, 1.0)
    for spec in ("2x3:normal", "x=2x3:zeros", "int8[4]:fill(-3)", "float16[2,T]:uniform(0,0.25)"):
        assert str(parse_input(spec)) == spec
        assert parse_input(str(parse_input(spec))) == parse_input(spec)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("int64[2]:normal", "needs a floating dtype"),
        ("2x3:randint(5,1)", "lo < hi"),
        ("2x3:randint(0.5,2)", "takes integers"),
        ("2x3:fill", "takes 1 number"),
        ("2x3:zeros(1)", "takes no numbers"),
        ("2x3:gauss", "unknown values"),
        ("2x3:uniform(0,nan)", "finite"),
    ],
)
def test_bad_values_are_named(text: str, says: str) -> None:
    with pytest.raises(TargetError, match=r"--input") as err:
        parse_input(text)
    assert says in str(err.value)


def test_dims_lists_and_ranges() -> None:
    assert parse_dim("T=200,300,400") == ("T", (200, 300, 400))
    assert parse_dim("L=32..128:32") == ("L", (32, 64, 96, 128))
    assert parse_dim("B=1,4..6") == ("B", (1, 4, 5, 6))
    for bad in ("T", "T=", "T=a", "T=5..1", "T=1..4:0", "T=2,2", "1=2", "T=0..100000"):
        with pytest.raises(TargetError, match="--dim"):
            parse_dim(bad)


def test_shape_plan_checks_names_and_combines(tmp_path: Path) -> None:
    target = resolve_target("sample:speech")
    s = RunSettings(target="sample:speech", inputs=["1xTx40"], dims=["T=2,3"])
    assert s.shape_plan(target) == [{"T": 2}, {"T": 3}]
    s = RunSettings(target="sample:speech", inputs=["BxTx40"], dims=["B=1,2", "T=5,6"])
    assert s.shape_plan(target) == [
        {"B": 1, "T": 5},
        {"B": 1, "T": 6},
        {"B": 2, "T": 5},
        {"B": 2, "T": 6},
    ]
    for inputs, dims, says in (
        (["1xTx40"], [], "no --dim T"),
        (["1x5x40"], ["T=1,2"], "no --input has a dimension named T"),
        (["x=2x3", "x=2x3"], [], "given twice"),
    ):
        with pytest.raises(SettingsError, match=says):
            RunSettings(target="sample:speech", inputs=inputs, dims=dims).resolve()
    ramp = RunSettings(
        target="sample:speech", inputs=["1xTx40"], dims=["T=2,3"], schedule="ramp", duration=1.0
    )
    with pytest.raises(SettingsError, match="ramp"):
        ramp.resolve()
    both = RunSettings(target="sample:speech", inputs=["1x2x40"], inputs_file=str(tmp_path))
    with pytest.raises(SettingsError, match="not both"):
        both.resolve()


@FAST
@given(st.text(max_size=20))
def test_input_spec_never_crashes(text: str) -> None:
    try:
        parse_input(text)
    except TargetError as exc:
        assert "--input" in str(exc)


def test_samples_resolve_with_their_inputs() -> None:
    target = resolve_target("sample:speech")
    assert target.kind == "sample" and target.default_inputs == ("1x300x40",)
    assert Path(target.path or "").is_file()


def test_module_target_is_left_to_the_child() -> None:
    target = resolve_target("mypkg.models:build")
    assert (target.kind, target.module, target.factory) == ("module", "mypkg.models", "build")


# -- knobs and settings ---------------------------------------------------------------------


def test_every_knob_parses_its_default_and_shows_it_back() -> None:
    for k in KNOBS:
        assert k.check(k.default) == k.default
        if k.default is not None:
            assert k.parse(k.show(k.default)) == k.default


def test_bool_knob_words() -> None:
    k = knob("profiling_executor")
    assert k.parse("off") is False and k.parse("ON") is True and k.parse("default") is None
    with pytest.raises(KnobError, match="profiling_executor"):
        k.parse("2")


def test_fusion_strategy() -> None:
    assert parse_fusion_strategy("STATIC,2;dynamic,10") == [("STATIC", 2), ("DYNAMIC", 10)]
    with pytest.raises(KnobError):
        parse_fusion_strategy("STATIC")


def test_presets_only_name_real_knobs_with_valid_values() -> None:
    for preset in PRESETS.values():
        for name, value in preset.knobs.items():
            assert knob(name).check(value) == value


def test_settings_layering_and_json_round_trip() -> None:
    s = RunSettings(target="sample:speech")
    s.apply_preset("no-profiling")
    s.set("num_profiled_runs=2")
    s.set("env.OMP_NUM_THREADS=1")
    assert s.changed_knobs() == {
        "mode": "script",
        "profiling_executor": False,
        "num_profiled_runs": 2,
    }
    again = RunSettings.from_json(json.loads(json.dumps(s.to_json())))
    assert again == s
    assert again.resolve().kind == "sample"


def test_settings_errors_name_the_problem() -> None:
    s = RunSettings(target="sample:speech")
    with pytest.raises(SettingsError, match="expected KEY=VALUE"):
        s.set("profiling_executor")
    with pytest.raises(SettingsError, match="unknown preset"):
        s.apply_preset("turbo")


def test_jit_log_is_automatic_for_torchscript_only() -> None:
    s = RunSettings(target="sample:speech")
    target = s.resolve()
    assert s.effective_jit_log(target) == "profiling_graph_executor_impl"
    s.knobs["mode"] = "eager"
    assert s.effective_jit_log(target) == ""
    s.jit_log = ">>tensorexpr_fuser"
    assert s.effective_jit_log(target) == ">>tensorexpr_fuser"


# -- the stderr parser ------------------------------------------------------------------------

DUMP = "[DUMP profiling_graph_executor_impl.cpp:677] "


def feed_all(lines: list[tuple[str, tuple[str, object]]]) -> list:
    parser = StderrParser()
    out = []
    for line, ctx in lines:
        out += parser.feed(line, ctx)
    return out + parser.flush()


def test_dump_blocks_become_one_event_each() -> None:
    it0, it1 = ("it", 0), ("it", 1)
    events = feed_all(
        [
            (DUMP + "Profiled Graph: ", it0),
            (DUMP + "graph(%x : Tensor):", it0),
            (DUMP + "  return (%x)", it0),
            ("[DUMP profiling_graph_executor_impl.cpp:695] Optimized Graph: ", it1),
            ("[DUMP profiling_graph_executor_impl.cpp:695] graph(%x : Tensor):", it1),
            ("some other line", it1),
        ]
    )
    assert [(e.kind, e.title, e.context) for e in events] == [
        ("jit", "Profiled Graph", it0),
        ("jit", "Optimized Graph", it1),
        ("stderr", "some other line", it1),
    ]
    assert events[0].text == "graph(%x : Tensor):\n  return (%x)"


def test_consecutive_dumps_from_one_source_line_are_split_at_headings() -> None:
    prefix = "[DUMP profiling_graph_executor_impl.cpp:636] "
    lines = [prefix + t for t in ("NoOpt Graph: ", "graph():", "  return (%0)")] * 3
    events = feed_all([(line, ("phase", "script")) for line in lines])
    assert [e.title for e in events] == ["NoOpt Graph"] * 3


def test_stderr_flood_is_bounded_and_counted() -> None:
    events = feed_all([("x" * 99, ("it", 5))] * 5000)
    assert len(events) == 1
    assert len(events[0].text) < 70_000
    assert events[0].data["lines"] == 5000 and events[0].data["dropped_lines"] > 0


def test_labels_follow_precedence() -> None:
    assert label_for([("jit", "Profiled Graph")]) == "profiling run"
    assert label_for([("jit", "Optimized Graph"), ("jit", "Profiled Graph")]) == "optimization"
    assert label_for([("compile", "compile 0/0")]) == "compile"
    assert label_for([("compile", "compile 0/1"), ("recompile", "Recompiling")]) == "recompile"
    assert label_for([("warning", "UserWarning: x")]) is None


def test_marker_lines() -> None:
    assert protocol.parse_marker(protocol.MARKER + b"it 12\n") == ("it", "12")
    assert protocol.parse_marker(b"[DUMP x.cpp:1] hi") is None
    assert protocol.decode(protocol.encode({"t": "iters", "i0": 0})) == {"t": "iters", "i0": 0}


# -- the record -----------------------------------------------------------------------------


def write_record(path: Path, *, end: bool) -> None:
    w = RecordWriter(path)
    w.write(
        {"type": "header", "format": "warmscope-record", "version": 1, "settings": {"target": "t"}}
    )
    w.write({"type": "iters", "i0": 0, "ms": [5.0, 2.0], "start_ms": [0.0, 5.0]})
    w.write(
        {"type": "event", "iteration": 0, "kind": "jit", "title": "Profiled Graph", "text": "g"}
    )
    if end:
        w.write({"type": "end", "status": "ok", "exit_code": 0})
    w.close()


def test_record_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    write_record(path, end=True)
    data = read_run(path)
    assert data.status == "ok" and list(data.ms) == [5.0, 2.0] and data.label(0) == "profiling run"


def test_torn_record_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    write_record(path, end=False)
    with path.open("a") as f:
        f.write('{"type":"iters","i0":2,"ms":[1.0')  # killed mid-write
    data = read_run(path)
    assert data.count == 2 and data.status == "crashed"
    assert "before the run did" in data.status_detail


def test_not_a_record(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(RecordError, match="not a warmscope record"):
        read_run(path)
    with pytest.raises(RecordError, match="no such file"):
        read_run(tmp_path / "missing.jsonl")


def test_shape_schedules() -> None:
    from warmscope.core.child.loading import shape_schedule

    def take(schedule: str, n: int = 8, count: int = 3, seed: int = 0) -> list[int | None]:
        at = shape_schedule({"schedule": schedule, "iters": n, "seed": seed}, count)
        assert at is not None
        return [at(i) for i in range(n)]

    assert take("cycle") == [0, 1, 2, 0, 1, 2, 0, 1]
    assert take("ramp", n=7) == [0, 0, 0, 1, 1, 1, 2]
    assert take("once") == [0, 1, 2, None, None, None, None, None]
    rand = take("random", n=50, seed=4)
    assert rand == take("random", n=50, seed=4) != take("random", n=50, seed=5)
    assert set(rand) == {0, 1, 2}
    assert shape_schedule({"schedule": "cycle", "iters": 5}, 1) is None
