"""A run's plan: the TUI, the CLI and the sweep start the same processes for the same settings.

Real children, real torch: each run pays the torch import, so the scenarios are few.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.conftest import FACTORIES, TARGETS, run_id_of, survivors, wait_gone, warmscope
from warmscope.core.child import outcome
from warmscope.core.data.record import read_run
from warmscope.core.data.run import Cursor
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.report import reproduce
from warmscope.core.run.run_plan import EXPLAINING, PROFILING, WARMING, PlannedRun, start_run
from warmscope.tui.controller import RunController

RUN_S = 90.0


def small(target: str = "sample:trivial", iters: int = 6) -> RunSettings:
    settings = RunSettings(target=target)
    settings.iters = iters
    settings.set("intra_op_threads=1")
    return settings


def phases_until_done(controller: RunController) -> list[str | None]:
    """Tick the controller as the app does until its live run ends; the phases it showed."""
    seen: list[str | None] = []
    deadline = time.monotonic() + RUN_S
    while time.monotonic() < deadline:
        tick = controller.tick()
        assert tick is not None, "the run is live until its end"
        seen.append(tick.entry.view.phase)
        if tick.finished:
            return seen
        time.sleep(0.05)
    raise AssertionError("the run did not end")


def test_a_tui_run_profiles_apart_and_its_reproduce_line_runs_the_same_plan(
    tmp_path: Path,
) -> None:
    record = tmp_path / "tui.jsonl"
    settings = small(iters=8)
    settings.profile_iters = "0,steady"
    settings.explain = False  # no explaining process: its profiles would join the record's
    controller = RunController(record_path=record)
    t0 = time.monotonic()
    entry = controller.start(settings)
    assert time.monotonic() - t0 < 1.0, "starting returns at once: the profile runs on a thread"
    plan = entry.session
    assert isinstance(plan, PlannedRun) and plan.steps == ["profile", "measure"]
    seen = phases_until_done(controller)
    assert PROFILING in seen, "the view says the profile runs in a separate process"
    assert seen.index(PROFILING) < len(seen) - 1
    assert plan.wait(30)

    measured = read_run(record)
    assert measured.status == outcome.OK and measured.count == 8
    assert measured.profiled_here() == [], "the measured process ran no iteration profiled"
    profile_record = tmp_path / "tui.profile.jsonl"
    assert sorted(measured.profiles) == [0, 8]
    assert all(p["source"] == str(profile_record) for p in measured.profiles.values())
    profiled = read_run(profile_record)
    assert profiled.profiled_here() == [0, 8] and profiled.settings.profile_in_run is True

    # What `report` prints to reproduce the run, run as a user would.
    line = reproduce(measured)
    assert line[:2] == ["warmscope", "run"] and "--profile-in-run" not in line
    again = tmp_path / "again.jsonl"
    r = warmscope(*line[1:], "--record", str(again), "--quiet")
    assert r.code == 0, r.stderr
    rerun = read_run(again)
    assert rerun.settings == measured.settings
    assert rerun.count == measured.count
    assert rerun.profiled_here() == []
    assert sorted(rerun.profiles) == sorted(measured.profiles)
    assert read_run(tmp_path / "again.profile.jsonl").profiled_here() == profiled.profiled_here()


MARKS_ITS_CACHE = """
import os
import pathlib

import torch


def marked():
    # What a compile leaves on disk, without paying for inductor: a file in the cache.
    folder = pathlib.Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"left-by-{os.getpid()}").write_text("compiled code")
    return torch.nn.Linear(4, 4), (torch.randn(2, 4),)
"""


def test_a_warm_compile_cache_is_filled_by_a_warming_process_first(tmp_path: Path) -> None:
    target = tmp_path / "marks.py"
    target.write_text(MARKS_ITS_CACHE)
    settings = small(f"{target}:marked", iters=3)
    settings.set("mode=compile")
    settings.set("compile_backend=eager")
    settings.compile_cache = "warm"
    controller = RunController(record_path=tmp_path / "warm.jsonl")
    entry = controller.start(settings)
    plan = entry.session
    assert isinstance(plan, PlannedRun) and plan.steps == ["warm", "measure"]
    seen = phases_until_done(controller)
    assert WARMING in seen
    assert plan.wait(30)
    data = read_run(tmp_path / "warm.jsonl")
    assert data.status == outcome.OK, data.status_detail
    cache = data.env["compile_cache"]
    assert cache["mode"] == "warm" and "note" not in cache
    assert cache["had_entries"] is True and cache["entries_before"] == 1, (
        "the measured process found what the warming one left, and only that"
    )
    folder = Path(cache["folders"]["inductor"])
    assert not folder.exists(), "the warmed scratch cache goes when the run ends"


def test_stop_while_profiling_ends_it_and_starts_nothing_after(tmp_path: Path) -> None:
    record = tmp_path / "stopped.jsonl"
    settings = small(str(FACTORIES) + ":tiny_with_inputs", iters=5)
    settings.profile_iters = "0"
    plan = start_run(settings, record_path=record)
    deadline = time.monotonic() + RUN_S
    while plan.proc is None and time.monotonic() < deadline:
        time.sleep(0.02)
    child = plan.proc
    assert child is not None and plan.note == PROFILING and not plan.measuring
    profile_record = tmp_path / "stopped.profile.jsonl"
    run_id = run_id_of(profile_record)
    plan.stop()
    assert plan.wait(30), "stopped within its grace"
    assert not plan.measuring, "the measured process never started"
    assert plan.data.status == outcome.STOPPED and plan.data.exit_code == outcome.EXIT_STOPPED
    assert "profiling" in plan.data.status_detail
    assert not record.exists(), "the measured run's record is not left empty"
    assert read_run(profile_record).status == outcome.STOPPED
    assert child.returncode is not None
    assert wait_gone(run_id, 2) == [] and survivors(run_id) == []
    cursor = Cursor()
    update = plan.poll(cursor)
    assert update.finished and cursor.iterations == 0 and update.phase is None


def test_stop_while_explaining_a_first_call_keeps_the_measured_run(tmp_path: Path) -> None:
    record = tmp_path / "explained.jsonl"
    settings = small(str(TARGETS / "first_calls.py") + ":lazy_table", iters=20)
    plan = start_run(settings, record_path=record, explain=True)
    assert plan.steps == ["measure"], "the explaining process is decided after the measured one"
    deadline = time.monotonic() + RUN_S

    def explaining_child() -> object:
        return plan.explaining.proc if plan.explaining is not None else None

    while explaining_child() is None and not plan.is_finished() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert plan.note == EXPLAINING, "its first call is slow and no event explains it"
    assert plan.measuring and plan.session.is_finished()
    child = plan.proc
    assert child is not None and child is explaining_child()
    run_id = run_id_of(tmp_path / "explained.explain.jsonl")
    plan.stop()
    assert plan.wait(30), "stopped within its grace"
    assert child.returncode is not None
    assert wait_gone(run_id, 2) == [] and survivors(run_id) == []
    measured = read_run(record)
    assert measured.status == outcome.OK and measured.count == 20, "the measured run stands"
    assert not measured.profiles, "nothing of a stopped explanation joins the record"
    assert plan.poll(Cursor()).finished


def test_a_plan_explains_only_where_its_caller_asks_and_the_settings_allow(
    tmp_path: Path,
) -> None:
    """Whether a plan will start a process to explain a slow first call is decided as it is
    made: where its caller asks (the command line and the TUI, not a sweep: its processes are
    samples) and ``--no-explain`` does not say no. Planned here, never started; a real run
    whose slow first call goes unexplained, as asked: ``test_first_call_explained``'s
    ``--no-explain`` run."""
    settings = small(str(TARGETS / "first_calls.py") + ":lazy_table", iters=10)
    refused = settings.copy()
    refused.explain = False
    cases = [(settings, False, False), (settings, True, True), (refused, True, False)]
    for n, (chosen, asked, explains) in enumerate(cases):
        plan = PlannedRun(chosen, record_path=tmp_path / f"plan{n}.jsonl", explain=asked)
        try:
            assert plan.explains is explains and plan.steps == ["measure"]
        finally:
            plan.session.discard()
