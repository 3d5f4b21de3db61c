"""The TUI driving real runs: a real child process, real torch, the real record.

Each child pays the torch import (a few seconds), so the scenarios share runs, and a run to
compare with is a record of a real run. A run that fails live: ``test_tui_faults``; what a
failed run shows, from its record: ``test_tui_records``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from tests.tui_support import SharedApp, run, wait_for
from warmscope.core.data.record import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.tui.app import WarmscopeApp, build_app
from warmscope.tui.run_view import RunEntry
from warmscope.tui.screens.compare_screen import CompareScreen
from warmscope.tui.screens.confirm_screen import ConfirmScreen
from warmscope.tui.screens.export_screen import ExportScreen
from warmscope.tui.screens.settings_screen import SettingsScreen
from warmscope.tui.widgets.choice_field import ChoiceField
from warmscope.tui.widgets.run.iteration_table import IterationTable
from warmscope.tui.widgets.run.run_header import RunHeader

SCRIPT = Path(__file__).parent / "data" / "speech-script.jsonl"
SIZE = (100, 30)


@pytest.fixture(autouse=True)
def records_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))


@pytest.fixture(scope="module")
def opened() -> Iterator[SharedApp]:
    """``warmscope open speech-script.jsonl``: one app for the tests that start from a record
    of a real run (each starts from the first frame's screen, the record viewed: ``SharedApp``)."""
    with SharedApp(build_app(records=[SCRIPT]), SIZE) as shared:
        yield shared


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def live_entry(app: WarmscopeApp) -> RunEntry:
    entry = app.runs[-1]
    assert entry.session is not None and entry.session.proc is not None
    return entry


def test_iterations_appear_live_then_stop_kill_and_quit_leave_no_process() -> None:
    # Until ended, a hundred iterations a second (a gap before each): live, but not a core's
    # worth of CPU for each of the three children.
    app = build_app(settings=RunSettings(target="sample:trivial", duration=120, gap=0.01))
    pids: list[int] = []

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs)
        entry = live_entry(app)
        pids.append(entry.session.proc.pid)  # type: ignore[union-attr]
        table = app.screen.query_one(IterationTable)
        await wait_for(pilot, lambda: len(table.rows) > 0)
        seen = table.rows[-1][0]
        await wait_for(pilot, lambda: table.rows[-1][0] > seen + 100)
        assert entry.view.status == "running" and not entry.view.finished
        assert "running" in app.screen.query_one(RunHeader).plain

        await pilot.press("s")
        await wait_for(pilot, lambda: entry.view.finished, timeout=10)
        assert entry.data.status == "stopped"
        assert gone(pids[0])

        await pilot.press("r")
        await wait_for(pilot, lambda: len(app.runs) == 2 and app.runs[1].view.count > 0)
        second = live_entry(app)
        pids.append(second.session.proc.pid)  # type: ignore[union-attr]
        await pilot.press("k")  # moves up in the list, as in vim and htop: kills nothing
        await pilot.pause()
        assert not second.view.finished
        await pilot.press("K")  # kills, after a yes
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: second.view.finished, timeout=10)
        assert second.data.status == "stopped" and "killed" in second.data.status_detail
        assert gone(pids[1])

        await pilot.press("r")
        await wait_for(pilot, lambda: len(app.runs) == 3 and app.runs[2].view.count > 0)
        pids.append(live_entry(app).session.proc.pid)  # type: ignore[union-attr]
        await pilot.press("q")  # a run is going: asks first
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")  # stops the child first, then exits
        await wait_for(pilot, lambda: not app.is_running, timeout=10)

    run(app, scenario, SIZE, settled=False)
    assert all(gone(pid) for pid in pids)
    assert read_run(Path(app.runs[2].data.record_path or "")).status == "stopped"


def test_settings_reach_the_next_run_then_compare_and_export(
    opened: SharedApp, tmp_path: Path
) -> None:
    # The run before is a record of a real run; the next run is sample:trivial, as the form
    # leaves it.
    app = opened.app
    # explain=False: its slow first call would have one more process explain it after the run;
    # nothing here reads the explanation (the command line's --no-explain, which the form keeps).

    async def scenario(pilot: Pilot) -> None:
        app.state.next_settings = RunSettings(target="sample:trivial", iters=30, explain=False)
        await wait_for(pilot, lambda: app.runs)
        first = app.runs[0]
        before = len(app.runs)

        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen))
        form = app.screen
        knob = form.query_one("#knob-num_profiled_runs", Input)
        knob.focus()
        await pilot.press("x")  # refused in place, with the knob's own reason
        error = form.query_one("#help-num_profiled_runs", Static)
        assert error.has_class("-error") and "expected an integer" in str(error.render())
        await pilot.press("ctrl+s")
        assert app.screen is form  # not applied
        await pilot.press("backspace", "2")
        assert not error.has_class("-error")
        form.query_one("#knob-profiling_executor", ChoiceField).value = "off"
        iters = form.query_one("#field-iters", Input)
        iters.value = "25"
        await pilot.press("ctrl+r")  # apply and run
        await wait_for(pilot, lambda: len(app.runs) == before + 1 and app.runs[-1].view.finished)

        second = app.runs[-1]
        record = read_run(Path(second.data.record_path or ""))
        assert record.status == "ok" and record.count == 25
        assert not record.settings.explain, "the form keeps what it does not show"
        assert record.settings.knobs["num_profiled_runs"] == 2
        assert record.settings.knobs["profiling_executor"] is False

        await pilot.press("c")
        assert isinstance(app.screen, CompareScreen)
        compare = app.screen
        assert compare.chosen == [first, second], "the newest run against the one before"
        await pilot.pause()
        diff = str(compare.query_one("#compare-settings-text", Static).render())
        assert "num_profiled_runs" in diff and "profiling_executor" in diff
        assert compare.query_one("#compare-metrics").row_count == 12  # type: ignore[attr-defined]  # set-up too
        await pilot.press("escape")

        await pilot.press("x")
        assert isinstance(app.screen, ExportScreen)
        proposed = app.screen.query_one("#export-dir", Input).value
        assert proposed == str(Path.cwd()), "in the folder the app was started in"
        app.screen.query_one("#export-dir", Input).value = str(tmp_path / "exports")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(list((tmp_path / "exports").glob("*"))) == 4)
        suffixes = sorted("".join(p.suffixes) for p in (tmp_path / "exports").iterdir())
        assert suffixes == [".csv", ".json", ".md", ".report.md"]

    opened.run(scenario)


def test_bad_settings_are_shown_not_raised(
    opened: SharedApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = opened.app
    shown: list[str] = []
    notify = app.notify
    monkeypatch.setattr(
        app, "notify", lambda message, **kw: (shown.append(str(message)), notify(message, **kw))[1]
    )

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs)
        before = len(app.runs)
        entry = app.control.start_run(RunSettings(target="no/such/file.py:make"))
        assert entry is None and len(app.runs) == before, "no run"
        assert any("no such file: no/such/file.py" in m for m in shown)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen))
        app.screen.query_one("#field-target", Input).value = "no/such/file.py:make"
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, SettingsScreen)
        assert "no/such/file.py" in str(app.screen.query_one("#form-error", Static).render())

    opened.run(scenario)
