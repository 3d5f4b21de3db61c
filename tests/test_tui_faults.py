"""Faults in the TUI: the screen stays up with the status and the child's last stderr lines;
a killed TUI leaves no child behind and a record that reads back (a hung-up one:
``test_tui_hostile``).

Real children, real torch: the planted faults of tests/faults/planted.py strike in iteration 3.
What each fault ends as (its status, exit code, timeout, memory limit) is the run's, checked for
every planted fault by ``test_reliability``; the TUI shows whatever a run ends with, so here a
child that dies mid-run and one that fails before its first iteration.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Log

from tests.test_reliability import PLANTED, K, run_id_of, survivors, wait_gone
from tests.tui_support import run, tui_iterating, wait_for
from warmscope.core.data.record import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.tui.app import build_app
from warmscope.tui.widgets.run.run_header import RunHeader

SIZE = (100, 30)


@pytest.fixture(autouse=True)
def records_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("FAULT_MEMORY_LIMIT", str(3 * 2**30))


FAULTS = [
    # (factory, status, a line the stderr pane must show, iterations kept)
    ("segfault", "crashed", "Segmentation fault", K),
    ("raises_while_loading", "failed", "planted failure while building the model", 0),
]


@pytest.mark.parametrize(("factory", "status", "shown", "kept"), FAULTS, ids=[f[0] for f in FAULTS])
def test_fault_keeps_the_screen_with_status_and_last_stderr(
    factory: str, status: str, shown: str, kept: int
) -> None:
    settings = RunSettings(target=f"{PLANTED}:{factory}", inputs=["4"], iters=20)
    app = build_app(settings=settings)
    seen: dict[str, object] = {}

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished)
        entry = app.runs[0]
        log = app.screen.query_one("#stderr", Log)
        await wait_for(pilot, lambda: any(shown in line for line in log.lines), timeout=10)
        seen["record"] = entry.data.record_path
        assert entry.data.status == status
        assert entry.view.count == kept
        await wait_for(pilot, lambda: status in app.screen.query_one(RunHeader).plain, timeout=5)
        assert app.screen.query_one("TabbedContent").active == "tab-stderr"  # type: ignore[attr-defined]
        assert not app.screen.query("Toast"), "nothing covers the child's last lines"
        assert app.is_running  # the screen stays up

    run(app, scenario, SIZE, settled=False, notifications=True)
    record = Path(str(seen["record"]))
    assert read_run(record).count == kept
    assert survivors(run_id_of(record)) == []


def test_a_stderr_flood_in_the_tui_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2 MB of stderr in one iteration, some 20,000 lines (the child's 50 MB, unblocked and in
    # bounded memory, is test_reliability's).
    monkeypatch.setenv("FLOOD_MB", "2")
    # explain=False: its slow first call would have a second process explain it, flooding again.
    settings = RunSettings(target=f"{PLANTED}:floods", inputs=["4"], iters=20, explain=False)
    app = build_app(settings=settings)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished)
        entry = app.runs[0]
        assert entry.data.status == "ok" and entry.view.count == 20
        assert any(line.startswith("flood flood") for line in entry.view.stderr)
        assert len(entry.view.stderr) <= (entry.view.stderr.maxlen or 0)
        log = app.screen.query_one("#stderr", Log)
        assert log.max_lines is not None and len(log.lines) <= log.max_lines
        await pilot.press("q")

    run(app, scenario, SIZE, settled=False)


def test_a_killed_tui_leaves_no_child(tmp_path: Path) -> None:
    record = tmp_path / "tui.jsonl"
    with tui_iterating(record) as terminal:
        run_id = run_id_of(record)
        assert survivors(run_id), "the child is running"
        terminal.proc.send_signal(signal.SIGKILL)
        assert wait_gone(run_id, 2) == [], "the child is gone within 2 s"
        terminal.proc.wait(timeout=10)
    data = read_run(record)
    assert data.count > 0
    # SIGKILL gives no chance to finish the record: it says warmscope stopped.
    assert data.status == "crashed"
    header = json.loads(record.read_text().splitlines()[0])
    assert header["type"] == "header"
