"""A slow first call that no event explains is explained without a flag: one more process
profiles it against steady state, only where needed; its label is in the summary, the record
and the report."""

from __future__ import annotations

import json
import time
from pathlib import Path

from warmscope.core.data import first_call, stats
from warmscope.core.data.breakdown import UNACCOUNTED, first_call_label
from warmscope.core.data.record import read_run
from warmscope.core.data.run import Event, RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.report import report

from .conftest import TARGETS, warmscope

MODELS = TARGETS / "first_calls.py"


def run_of(ms: list[float]) -> RunData:
    data = RunData(settings=RunSettings(target="sample:trivial", iters=len(ms)), mode="eager")
    data.add_iterations(0, ms, [float(i) for i in range(len(ms))])
    data.status, data.status_detail = "ok", f"{len(ms)} iterations"
    return data


def steady_ms(n: int) -> list[float]:
    return [1.0 + 0.01 * (i % 4) for i in range(n)]


# -- the rule ------------------------------------------------------------------------------


def test_a_first_call_is_slow_beyond_twice_the_p50_and_the_noise_band() -> None:
    assert stats.first_call_slow(2.5, 1.0, 0.01)
    assert not stats.first_call_slow(1.8, 1.0, 0.0)  # under twice the p50
    assert not stats.first_call_slow(3.0, 1.0, 0.6)  # within a wide noise band (5σ = 3 ms)
    assert stats.first_call_slow(5.0, 1.0, 5.0)  # five times the p50: slow whatever the noise
    assert not stats.first_call_slow(None, 1.0) and not stats.first_call_slow(5.0, None)


def test_a_first_call_many_times_steady_is_warm_up_on_a_busy_machine() -> None:
    # Noise so wide (a busy machine) that its band swallows a first call 9× the median.
    busy = [9.0] + [1.0, 3.5, 0.4, 1.2, 5.0, 0.6, 1.0, 2.0] * 6
    s = stats.summarize(busy)
    assert s.steady_from == 1 and s.warmup_excess_ms > 0


def test_which_first_calls_need_explaining() -> None:
    slow = run_of([30.0, *steady_ms(40)])
    (call,) = first_call.unexplained(slow)
    assert call.iteration == 0 and call.against >= 1 and call.shape is None
    assert first_call.unexplained(run_of(steady_ms(40))) == []  # not slow
    assert first_call.unexplained(run_of([30.0, *steady_ms(3)])) == []  # no steady p50 to hold to
    labelled = run_of([30.0, *steady_ms(40)])
    labelled.add_event(Event("compile", "compile", iteration=0))
    assert first_call.unexplained(labelled) == []  # its events say why
    failed = run_of([30.0, *steady_ms(40)])
    failed.status = "failed"
    assert first_call.unexplained(failed) == []


def test_each_shapes_slow_first_call_is_held_to_a_steady_call_of_its_shape() -> None:
    data = RunData(settings=RunSettings(target="sample:trivial", iters=60), mode="eager")
    data.shape_keys = ["T=1", "T=4"]
    ms = [30.0, 4.0] + [1.0 if i % 2 == 0 else 4.0 for i in range(2, 60)]
    data.add_iterations(0, ms, [float(i) for i in range(60)], [i % 2 for i in range(60)])
    data.status = "ok"
    (call,) = first_call.unexplained(data)  # T=4's first call is not slow
    assert (call.iteration, call.shape) == (0, "T=1")
    assert call.against % 2 == 0 and call.against > 0
    settings = first_call.explaining_settings(data.settings, [call])
    assert settings.profile_iters == f"0,{call.against}" and settings.profile_in_run
    assert settings.iters == call.against + 1 + first_call.REFERENCE_CALLS
    assert not settings.explain


def test_the_label_leads_with_what_the_first_call_costs_most() -> None:
    steady = {"wall_ms": 1.0, "unaccounted_ms": 0.1, "ops": [{"name": "aten::mm", "self_ms": 0.3}]}
    slower = {"wall_ms": 6.0, "unaccounted_ms": 0.2, "ops": [{"name": "aten::mm", "self_ms": 4.2}]}
    assert first_call_label(slower, steady) == (
        "first call: aten::mm 14× steady — kernel selection (its first call at this shape)"
    )
    new_op = {**slower, "ops": [{"name": "aten::copy_", "self_ms": 5.0}]}
    assert "aten::copy_ only in the first call" in str(first_call_label(new_op, steady))
    outside = {**steady, "wall_ms": 9.0, "unaccounted_ms": 8.0}
    label = str(first_call_label(outside, steady))
    assert "in no operator" in label and UNACCOUNTED not in label
    assert first_call_label(steady, steady) is None


# -- real runs -----------------------------------------------------------------------------


def test_a_slow_first_call_is_explained_in_one_more_process(
    record_dir: Path, tmp_path: Path
) -> None:
    record = tmp_path / "lazy.jsonl"
    args = ("run", f"{MODELS}:lazy_table", "--iters", "30", "--record", str(record))
    r = warmscope(*args, json_path=tmp_path / "lazy.json")
    assert r.code == 0, r.stderr
    assert "explaining the slow first call #0 in a separate process" in r.stderr
    assert r.doc is not None
    (documented,) = r.doc["summary"]["first_calls"]
    assert documented["iteration"] == 0 and documented["label"].startswith("first call: ")
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("explained  #0 "))
    assert "first call: aten::mm only in the first call" in line, r.stdout
    assert "one more process, " in r.stdout
    assert record.with_name("lazy.explain.jsonl").exists()
    # The record keeps the profiles, so a later reader says the same.
    lines = [json.loads(ln) for ln in record.read_text().splitlines()]
    first = [ln for ln in lines if ln["type"] == "profile" and ln.get("explains")]
    assert [ln["iteration"] for ln in first] == [0]
    assert first[0]["separate"] and first[0]["explain_s"] > 0
    data = read_run(record)
    (note,) = first_call.notes(data)
    assert note["label"] in r.stdout and note["against"] == first[0]["against"]
    assert note["label"] in report(data)
    assert data.summary().steady_from is not None
    # The measured run's own figures stand: none of its iterations was profiled.
    assert data.profiled_here() == []


def test_a_first_call_that_is_not_slow_starts_no_extra_process(
    record_dir: Path, tmp_path: Path
) -> None:
    record = tmp_path / "even.jsonl"
    r = warmscope("run", f"{MODELS}:even_sleeper", "--iters", "15", "--record", str(record))
    assert r.code == 0, r.stderr
    assert "explaining" not in r.stderr and "explained  #" not in r.stdout
    assert not record.with_name("even.explain.jsonl").exists()
    assert not read_run(record).profiles


def test_no_explain_skips_it(record_dir: Path, tmp_path: Path) -> None:
    record = tmp_path / "lazy.jsonl"
    args = ("run", f"{MODELS}:lazy_table", "--iters", "20", "--record", str(record))
    r = warmscope(*args, "--no-explain")
    assert r.code == 0, r.stderr
    assert "explaining" not in r.stderr and "explained  #" not in r.stdout
    assert not record.with_name("lazy.explain.jsonl").exists()
    assert "--no-explain" in read_run(record).settings.command_line()


def test_the_tui_shows_the_explanation_in_its_summary_panel(tmp_path: Path) -> None:
    from warmscope.core.run.run_plan import EXPLAINING
    from warmscope.tui.controller import RunController
    from warmscope.tui.widgets.run.summary_panel import summary_content

    settings = RunSettings(target=f"{MODELS}:lazy_table")
    settings.iters = 20
    controller = RunController(record_path=tmp_path / "tui.jsonl")
    entry = controller.start(settings)
    phases = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        tick = controller.tick()
        assert tick is not None, "the run is live until its end"
        phases.append(tick.entry.view.phase)
        if tick.finished:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the run did not end")
    assert EXPLAINING in phases, "the view says a first call is being explained"
    text = summary_content(entry.view).plain
    assert "1st call" in text and "aten::mm only in the first call" in text, text
