"""The TUI's live path, driven by a fake session (no child, no torch): the controller without a
screen, then the app under Pilot through setup phases, a long iteration and a failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.fake_session import FakeSession, Moment, end, factory, iterations
from tests.tui_support import run, screen_text, wait_for
from warmscope.core.child import outcome
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.tui.app import build_app
from warmscope.tui.controller import RunController
from warmscope.tui.widgets.run.run_header import RunHeader
from warmscope.tui.widgets.run.summary_panel import SummaryPanel

SETTINGS = RunSettings(target="sample:trivial", iters=30)
WARM = [40.0, 9.0] + [2.0] * 28


HOLD = 8
"""Polls a moment lasts (0.1 s each): longer than the header's repaint interval (0.5 s)."""


def script() -> list[Moment]:
    return [
        Moment(phase="import torch"),
        *[Moment(phase="import torch")] * HOLD,
        Moment([{"type": "phase", "name": "import torch", "ms": 900.0}], phase="load"),
        *[Moment(phase="load")] * HOLD,
        *[Moment(busy={"iteration": 0, "ms": 2500.0, "activity": "compiling 0/0"})] * HOLD,
        Moment([iterations(0, WARM[:10])]),
        Moment([iterations(10, WARM[10:])]),
        Moment([end(outcome.OK, "30 iterations", 0)]),
    ]


def failing_script() -> list[Moment]:
    error = {
        "type": "error",
        "where": "forward",
        "iteration": 2,
        "exception": "RuntimeError",
        "message": "RuntimeError: shapes do not match",
        "traceback": "Traceback (most recent call last):\nRuntimeError: shapes do not match\n",
    }
    return [
        Moment([iterations(0, [30.0, 5.0])]),
        Moment([error, end(outcome.FAILED, "iteration 2: RuntimeError: shapes do not match", 1)]),
    ]


def test_the_controller_plays_a_run_without_a_screen() -> None:
    made: list[FakeSession] = []
    controller = RunController(start=factory(script(), made))
    entry = controller.start(SETTINGS)
    assert controller.live is entry and made[0].data is entry.data
    seen = []
    while (tick := controller.tick()) is not None:
        seen.append((tick.entry.view.phase, bool(tick.entry.view.busy), tick.entry.view.count))
        if tick.finished:
            break
    assert seen[0] == ("import torch", False, 0)
    assert ("load", False, 0) in seen and (None, True, 0) in seen
    assert seen[-1][2] == 30 and controller.live is None
    job = controller.summary_job(entry, force=True)
    assert job is not None
    summary, count, _, _ = job()
    assert count == 30 and summary.first_ms == 40.0 and summary.steady_from == 2
    assert controller.summary_done(entry, summary, count, 0.001) is False
    assert controller.summary_job(entry, force=True) is None, "current: nothing to do"


class FlakySummary(RunData):
    """A run whose first summary raises, as a bug in the statistics would."""

    failures = 1

    def summary(self):  # type: ignore[no-untyped-def]
        if FlakySummary.failures:
            FlakySummary.failures -= 1
            raise ZeroDivisionError("planted summary failure")
        return super().summary()


def test_a_summary_that_raises_is_shown_and_the_next_tick_recovers() -> None:
    made: list[FakeSession] = []
    steps = [Moment([iterations(0, WARM[:5])])] + [Moment() for _ in range(30)]
    steps.append(Moment([iterations(5, WARM[5:]), end(outcome.OK, "30 iterations", 0)]))
    start = factory(steps, made)

    def flaky_start(settings, record_path, command):  # type: ignore[no-untyped-def]
        session = start(settings, record_path, command)
        session.snapshot = lambda: _flaky(session.data.snapshot())  # type: ignore[method-assign]
        return session

    app = build_app(settings=SETTINGS, start=flaky_start)
    FlakySummary.failures = 1

    async def scenario(pilot: Pilot) -> None:
        panel = app.screen.query_one(SummaryPanel)
        await wait_for(pilot, lambda: "summary failed" in str(panel.render()), timeout=10)
        assert "ZeroDivisionError: planted summary failure" in str(panel.render())
        await wait_for(pilot, lambda: "summary failed" not in str(panel.render()), timeout=10)
        assert app.runs[0].view.summary is not None, "a later tick summarized the run"
        await wait_for(pilot, lambda: app.runs[0].view.finished, timeout=10)

    run(app, scenario, settled=False)


def _flaky(data: RunData) -> RunData:
    flaky = FlakySummary()
    flaky.__dict__.update(data.__dict__)
    return flaky


@dataclass
class Played:
    """What the screen showed of one run of ``script`` to its end, written to ``record``."""

    record: Path
    first_frame: dict[str, object]
    headers: list[str]
    """The header at every check while the run went, then once it ended."""
    header_at_end: str
    history: list[str] = field(default_factory=list)
    """The history screen's first row (``[]``: the screen did not open)."""
    on_exit: list[str] = field(default_factory=list)
    """What the app says of its runs as it ends (``record_lines``)."""


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    """One app plays ``script`` to its end, a record path given: its first frame, its header as
    the run goes, its history and what it says on exit, read by the tests below."""
    from warmscope.tui.run_view import record_lines
    from warmscope.tui.screens.history_screen import HistoryScreen

    record = tmp_path_factory.mktemp("played") / "kept-here.jsonl"
    app = build_app(settings=SETTINGS, record_path=record, start=factory(script()))
    seen = Played(record, {}, [], "")

    async def scenario(pilot: Pilot) -> None:
        # As the scenario starts, the first frame is drawn: the panes come a moment later.
        seen.first_frame.update(
            panes=bool(app.main.query("#panes")),
            header=app.main.query_one(RunHeader).plain,
            runs=len(app.runs),
            text=screen_text(app),
        )
        header = app.screen.query_one(RunHeader)

        def ended() -> bool:
            seen.headers.append(header.plain)
            return bool(app.runs) and app.runs[0].view.finished

        await wait_for(pilot, ended, timeout=10)
        await pilot.pause()
        seen.header_at_end = header.plain
        seen.headers.append(header.plain)
        await pilot.press("h")
        if isinstance(app.screen, HistoryScreen):
            table = app.screen.query_one("DataTable")
            seen.history = [str(cell) for cell in table.get_row_at(0)]  # type: ignore[attr-defined]

    run(app, scenario, settled=False)
    seen.on_exit = record_lines(app.runs)
    return seen


def test_the_header_follows_phases_a_long_iteration_and_the_end(played: Played) -> None:
    text = "\n".join(played.headers)
    assert "import torch…" in text and "load…" in text
    assert "iteration 0 compiling 0/0 for 2.5 s" in text
    assert "✓ ok" in played.headers[-1] and "30 it" in played.headers[-1]


def test_a_failure_reaches_the_header_and_the_stderr_pane() -> None:
    app = build_app(settings=SETTINGS, start=factory(failing_script()))

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished, timeout=10)
        await pilot.pause()
        header = app.screen.query_one(RunHeader).plain
        assert "failed" in header and "shapes do not match" in header
        stderr = "\n".join(str(line) for line in app.runs[0].view.stderr)
        assert "run failed at iteration 2" in stderr and "RuntimeError" in stderr

    run(app, scenario, settled=False)


def test_the_record_path_is_shown_in_the_header_the_history_and_on_exit(played: Played) -> None:
    assert "kept-here.jsonl" in played.header_at_end
    assert played.history, "h opens the history"
    assert any("kept-here.jsonl" in cell for cell in played.history)
    assert played.on_exit == [f"run #1 ok: {played.record}"]


def test_the_first_frame_names_the_run_starting_and_shows_the_keys(played: Played) -> None:
    """Readable at once: before the panes below mount and before the run exists, the header
    says what is starting and the footer lists the keys (``benchmarks/tui_startup.py`` times
    this frame against a minimal Textual app)."""
    seen = played.first_frame
    assert seen["panes"] is False and seen["runs"] == 0, "the frame before the run and panes"
    assert "#1 sample:trivial" in str(seen["header"]) and "starting" in str(seen["header"])
    assert "Quit" in str(seen["text"]) and "Settings" in str(seen["text"])
