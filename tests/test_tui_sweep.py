"""Repeats and sweeps started from the TUI's settings screen: real child processes, real torch.

The sweep screen fills in live (each process's first iteration as a point of its cell, the
intervals as processes finish), ends with the sweep digest's answer, and is the screen
``warmscope open sweep.json`` shows. Each process is a run of the session, tagged with its cell.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, DataTable

from tests.test_tui_messages import SWEEP
from tests.tui_support import SharedApp, fill, run, screen_text, wait_for
from warmscope.cli.view import open_records
from warmscope.core.data.record import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.sweep_document import read_sweep
from warmscope.core.data.sweep_plan import SweepPlan
from warmscope.core.output.sweep_digest import iv_text
from warmscope.core.run.sweep import grid
from warmscope.tui import sweep_runner
from warmscope.tui.app import WarmscopeApp, build_app
from warmscope.tui.drawing.sweep_strips import draw
from warmscope.tui.screens import compare_screen
from warmscope.tui.screens.compare_screen import CompareScreen
from warmscope.tui.screens.sweep_screen import SweepScreen
from warmscope.tui.sweep_runner import RunnerState, Started
from warmscope.tui.widgets.sweep_chart import SweepChart

SIZE = (110, 40)
ITERS = 5


@pytest.fixture(autouse=True)
def records_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))


def ready_app() -> WarmscopeApp:
    """An app with nothing run yet; its next run: ``sample:trivial``, a few iterations."""
    app = build_app()
    app.state.next_settings = RunSettings(target="sample:trivial", iters=ITERS)
    app.state.next_settings.knobs["intra_op_threads"] = 1
    return app


@pytest.fixture(scope="module")
def ready() -> Iterator[SharedApp]:
    """One ``ready_app`` for the tests that start sweeps from the form, one after the other
    (each starts from the first frame's screen and the next run's settings: ``SharedApp``)."""
    with SharedApp(ready_app(), SIZE) as shared:
        yield shared


def chart_text(screen: SweepScreen) -> str:
    return "\n".join(line.plain for line in draw(screen.query_one(SweepChart).rows, 90))


def test_a_preset_sweep_fills_in_live_and_ends_with_the_answer(ready: SharedApp) -> None:
    app = ready.app
    seen: dict[str, object] = {}
    sweeps, runs = len(app.state.sweeps), len(app.runs)

    async def scenario(pilot: Pilot) -> None:
        assert app.state.next_settings is not None
        # A pass every 0.2 s: each process runs a second after its first iteration, so the
        # screen (which takes the runner's news every 0.25 s) sees one running on a busy machine.
        app.state.next_settings.gap = 0.2
        settings = await fill(pilot, processes="2", sweep_presets="torchscript no-profiling")
        assert "Sweep ×2" in str(settings.query_one("#apply-run", Button).label)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, SweepScreen))
        screen = app.screen
        assert isinstance(screen, SweepScreen) and screen.running
        # Live: a point for the process in progress, drawn while it runs.
        await wait_for(
            pilot,
            lambda: any(s.running for s in screen.query_one(SweepChart).rows),
            timeout=60,
        )
        seen["live"] = chart_text(screen)
        seen["live rows"] = list(screen.query_one(SweepChart).rows)
        assert "so far" in screen_text(app) or "waiting" in screen_text(app)
        # The processes became runs of the session, followed live by the main screen.
        assert app.runs and app.runs[-1].sweep is not None
        # Two processes of each cell: the intervals appear, then the answer.
        await wait_for(pilot, lambda: not screen.running, timeout=180)
        seen["end"] = chart_text(screen)
        seen["rows"] = list(screen.query_one(SweepChart).rows)
        seen["answer"] = str(screen.query_one("#sweep-answer").render())
        seen["screen"] = screen_text(app)
        await pilot.press("escape")  # ended: Esc shows the runs
        await pilot.pause()
        assert not isinstance(app.screen, SweepScreen)
        await pilot.press("w")  # and w shows the sweep again
        await pilot.pause()
        assert isinstance(app.screen, SweepScreen)
        await pilot.press("escape")

    ready.run(scenario)
    live_strips = str(seen["live"]).splitlines()[1:]  # the legend names the glyphs too
    assert any("○" in line for line in live_strips)  # the process in progress, on its strip
    # Intervals come as processes finish: none for a cell with fewer than two finished then.
    live_rows = seen["live rows"]
    assert isinstance(live_rows, list) and live_rows
    assert all(s.interval is None for s in live_rows if len(s.done) < 2), live_rows
    # The document on disk is the one the screen shows.
    assert len(app.state.sweeps) == sweeps + 1
    doc = app.state.sweeps[-1]
    path = Path(doc["folder"]) / "sweep.json"
    on_disk = read_sweep(path)
    assert on_disk["answer"] == doc["answer"] == seen["answer"]
    assert doc["finished"] == 4 and not doc["stopped"]
    assert [c["label"] for c in doc["cells"]] == ["torchscript", "no-profiling"]
    assert doc["answer"].startswith("by first iteration")
    # Each cell: two points and its median with its interval, on the screen.
    end = str(seen["end"])
    rows = seen["rows"]
    assert isinstance(rows, list)
    for cell in doc["cells"]:
        assert len(cell["first_ms"]["values"]) == 2
        line = next(ln for ln in end.splitlines() if ln.startswith(cell["label"]))
        assert line.endswith(iv_text(cell["first_ms"]))
        strip = next(s for s in rows if s.label == cell["label"])
        assert strip.done == cell["first_ms"]["values"] and not strip.running
        iv = cell["first_ms"]
        assert strip.interval == (iv["median"], iv["lo"], iv["hi"])
        plot = line[len(strip.label) : -len(strip.figure)]
        assert plot.count("●") == 2 or "2" in plot  # two processes (or both in one column)
    assert "torchscript" in str(seen["screen"]) and "no-profiling" in str(seen["screen"])
    # Every process is a run of the session, tagged with its sweep and cell.
    tagged = [e for e in app.runs[runs:] if e.sweep is not None]
    assert len(tagged) == 4
    assert {(e.sweep.cell, e.sweep.repeat) for e in tagged if e.sweep} == {
        (0, 0),
        (1, 0),
        (0, 1),
        (1, 1),
    }
    first = tagged[0]
    same = app.state.controller.cell_runs(first)
    assert len(same) == 2 and all(e.data.settings.preset == "torchscript" for e in same)
    records = {str(e.data.record_path) for e in tagged}
    in_doc = {p["record"] for c in doc["cells"] for p in c["processes"]}
    assert records == in_doc
    for e in tagged:
        assert e.data.status == "ok"
        assert read_run(Path(e.data.record_path)).count == ITERS
    opened_shows_the_same(path, seen)


def opened_shows_the_same(path: Path, seen: dict[str, object]) -> None:
    """``warmscope open sweep.json``: the same screen, the same answer and strips, and the
    opened runs tagged with their cells."""
    records, sweeps = open_records([path])
    app = build_app(records=records, sweeps=sweeps)

    async def scenario(pilot: Pilot) -> None:
        screen = app.screen
        assert isinstance(screen, SweepScreen) and not screen.running
        assert str(screen.query_one("#sweep-answer").render()) == seen["answer"]
        assert chart_text(screen) == seen["end"]
        assert screen.query_one(SweepChart).rows == seen["rows"]
        # Compare two of its processes: each stands for its cell's processes, with intervals.
        await pilot.press("escape")
        one = next(e for e in app.runs if e.sweep and e.sweep.cell == 0)
        other = next(e for e in app.runs if e.sweep and e.sweep.cell == 1)
        compare_screen.compare(app, app.state, [one, other])
        await pilot.pause(0.3)
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        table = compare.query_one("#compare-metrics", DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert f"A #{one.number} ×2" in labels and f"B #{other.number} ×2" in labels, labels
        assert any("medians across each side's processes" in n for n in compare._notes)

    run(app, scenario, size=SIZE)
    assert len(app.runs) == 4
    tags = sorted((e.sweep.cell, e.sweep.repeat, e.sweep.of) for e in app.runs if e.sweep)
    assert tags == [(0, 0, 2), (0, 1, 2), (1, 0, 2), (1, 1, 2)]
    assert len(app.state.controller.cell_runs(app.runs[0])) == 2


def test_esc_stops_a_repeat_cleanly_and_keeps_the_finished_process(ready: SharedApp) -> None:
    app = ready.app
    seen: dict[str, object] = {}
    sweeps = len(app.state.sweeps)

    async def scenario(pilot: Pilot) -> None:
        assert app.state.next_settings is not None
        app.state.next_settings.gap = 0.4  # each process takes a few seconds: the stop lands in one
        settings = await fill(pilot, processes="3")
        assert "Run ×3" in str(settings.query_one("#apply-run", Button).label)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, SweepScreen))
        screen = app.screen
        assert isinstance(screen, SweepScreen)
        # The second process has measured its first iteration: it is mid-run. Asked of the
        # state the chart is drawn from (the chart itself may still show the first process's
        # point as running, drawn before the state said it finished).
        await wait_for(
            pilot,
            lambda: (
                screen.state is not None
                and screen.state.finished == 1
                and any(
                    p.repeat == 1 and not p.done and p.first_ms is not None
                    for p in screen.state.points
                )
            ),
            timeout=120,
        )
        await wait_for(pilot, lambda: any(s.running for s in screen.query_one(SweepChart).rows))
        await pilot.press("escape")
        assert isinstance(app.screen, SweepScreen)  # Esc stops; the screen stays
        await wait_for(pilot, lambda: not screen.running, timeout=30)
        seen["screen"] = screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SweepScreen)

    ready.run(scenario)
    assert len(app.state.sweeps) == sweeps + 1
    doc = read_sweep(Path(app.state.sweeps[-1]["folder"]) / "sweep.json")
    assert doc["stopped"] is True
    assert doc["planned"] == 3 and doc["finished"] == 2
    (cell,) = doc["cells"]
    assert [p["status"] for p in cell["processes"]] == ["ok", "stopped"]
    assert len(cell["runs"]) == 1  # the finished one is kept, the stopped one left out
    assert doc["answer"].startswith("stopped after 2 of 3 processes")
    assert "stopped" in str(seen["screen"])
    assert all(e.session is not None and e.session.is_finished() for e in app.runs)
    stopped = read_run(Path(cell["processes"][1]["record"]))
    assert stopped.status == "stopped" and stopped.count >= 1


class HeldSweep:
    """What the sweep screen reads of a runner: a sweep whose process goes on until it is
    stopped, with no child (a real sweep's stop, and what it keeps, is the Esc test's)."""

    def __init__(self, plan: SweepPlan) -> None:
        self.doc = json.loads(SWEEP.read_text())
        self.plan = plan
        self.folder = Path(self.doc["folder"])
        self.error = ""
        self.stopping = False
        self.ended = False
        self._stop = threading.Event()

    def run(self) -> dict[str, Any]:
        self._stop.wait(60)
        self.ended = True
        return self.doc

    def take_started(self) -> list[Started]:
        return []

    def state(self) -> RunnerState:
        return RunnerState(self.doc, [], None, 0, 2, self.ended, self.stopping, "")

    def stop(self) -> None:
        self.stopping = True
        self._stop.set()


def test_ctrl_c_stops_a_sweep_before_it_closes_anything(
    ready: SharedApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[tuple[RunSettings, HeldSweep]] = []

    def make_runner(settings: RunSettings, plan: SweepPlan, folder: Path | None = None) -> Any:
        made.append((settings, HeldSweep(plan)))
        return made[-1][1]

    monkeypatch.setattr(sweep_runner, "make_runner", make_runner)
    app = ready.app
    sweeps = list(app.state.sweeps)

    async def scenario(pilot: Pilot) -> None:
        await fill(pilot, processes="1", vary="grad_mode=no_grad,inference_mode")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, SweepScreen))
        screen = app.screen
        assert isinstance(screen, SweepScreen) and screen.running
        ((settings, runner),) = made
        labels = [c.label for c in grid(settings, runner.plan.presets, runner.plan.varies)]
        assert labels == ["grad_mode=no_grad", "grad_mode=inference_mode"], "the form's cells"
        await pilot.press("ctrl+c")
        assert isinstance(app.screen, SweepScreen) and runner.stopping, "stopped, not closed"
        await wait_for(pilot, lambda: not screen.running, timeout=10)
        await pilot.press("ctrl+c")  # ended: Ctrl+C closes the screen as q does
        await pilot.pause()
        assert not isinstance(app.screen, SweepScreen)

    ready.run(scenario)
    assert app.state.sweeps == [*sweeps, made[0][1].doc] and app.state.controller.sweeping is None


# -- without processes: the plan, the form's fields, the strips --------------------------------


def test_the_plan_builds_cells_as_warmscope_sweep_does() -> None:
    from warmscope.core.child.outcome import UsageError
    from warmscope.core.data.sweep_plan import (
        SweepPlan,
        check_presets,
        check_varies,
        parse_repeat,
        split_names,
    )
    from warmscope.tui.sweep_runner import make_runner

    def parse_presets(text: str) -> tuple[str, ...]:
        return check_presets(split_names(text))

    def parse_varies(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return check_varies(text.split())

    base = RunSettings(target="sample:trivial", iters=ITERS)
    base.knobs["intra_op_threads"] = 1
    base.knobs["profiling_executor"] = False  # torchscript names it on; no-profiling, off
    plan = SweepPlan(
        3, parse_presets("torchscript, no-profiling"), parse_varies("grad_mode=no_grad,enabled")
    )
    cells = grid(base, plan.presets, plan.varies)
    assert [c.label for c in cells] == [
        "torchscript grad_mode=no_grad",
        "torchscript grad_mode=enabled",
        "no-profiling grad_mode=no_grad",
        "no-profiling grad_mode=enabled",
    ]
    assert all(c.settings.knobs["intra_op_threads"] == 1 for c in cells)  # how it runs: kept
    assert cells[0].settings.knobs["profiling_executor"] is None
    assert cells[2].settings.knobs["profiling_executor"] is False
    assert plan.describe(len(cells)) == "4 settings × 3 processes"
    runner = make_runner(base, SweepPlan(4, ("torchscript", "frozen"), adaptive=True))
    assert runner.sweep.adaptive and runner.sweep.repeat == 4
    command = runner.sweep.command
    assert command[:3] == ["warmscope", "sweep", "sample:trivial"] and "--adaptive" in command
    assert "profiling_executor=off" not in " ".join(command)  # each preset sets its own
    assert runner.folder is not None and runner.folder.is_dir()
    (one,) = grid(base, (), ())
    assert one.settings.knobs == base.knobs and not SweepPlan(1).many and SweepPlan(2).many
    for bad, parse in (
        ("0", parse_repeat),
        ("x", parse_repeat),
        ("101", parse_repeat),
        ("frozen frozen", parse_presets),
        ("nonesuch", parse_presets),
        ("grad_mode=sideways", parse_varies),
        ("grad_mode", parse_varies),
    ):
        with pytest.raises(UsageError):
            parse(bad)  # type: ignore[operator]


def test_strips_share_one_axis_and_show_each_interval_under_its_points() -> None:
    from warmscope.core.output.sweep_stats import stat_json
    from warmscope.tui import glyphs
    from warmscope.tui.drawing.sweep_strips import strips

    doc = {
        "cells": [
            {"index": 0, "label": "a", "first_ms": stat_json([10.0, 11.0, 12.0])},
            {"index": 1, "label": "bb", "first_ms": stat_json([100.0])},
        ],
        "ranking": [{"cell": 0, "vs_best": "best"}, {"cell": 1, "vs_best": "not measured"}],
    }
    rows = strips(doc, running=[(1, 120.0)])
    assert rows[0].style == ""  # lowest, but not beyond noise better than the rest: no best
    assert rows[0].interval == (11.0, 10.0, 12.0) and rows[1].interval is None
    assert rows[1].running == [120.0] and rows[1].figure == "100 ms"
    lines = [t.plain for t in draw(rows, 80)]
    assert len(lines) == 5  # legend, a and its interval, bb (one process: no interval), axis
    assert all(len(line) <= 80 for line in lines)
    a, bar, bb, axis = lines[1:]
    assert a.startswith("a  ") and "├" in bar and "┼" in bar and "┤" in bar
    assert bb.index("○") > bb.index("●") > a.rindex("●")  # one axis: 120 > 100 > 12
    assert axis.strip().startswith("10.0 ms") and axis.endswith("log scale")
    glyphs.set_ascii(True)
    try:
        plain = [t.plain for t in draw(rows, 80)]
    finally:
        glyphs.set_ascii(False)
    assert plain[1].startswith("a  o o o") and plain[2].strip() == "[-|-]"
    assert "o   * 100 ms" in plain[3]  # ASCII points; the rest the app's ASCII filter takes
