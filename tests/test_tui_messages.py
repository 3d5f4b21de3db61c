"""The app's message flow: screens and workers tell the app what happened with messages, and the
app's handlers own the UI state (its runs, its sweeps, what it shows). No screen reaches into
the app. Torch-free: a fake session, a sweep runner that plays one process, records."""

from __future__ import annotations

import asyncio
import importlib
import json
import pkgutil
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Input

from tests.fake_session import FakeSession, Moment, end, iterations
from tests.tui_support import SharedApp, settle, wait_for
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.sweep_plan import SweepPlan
from warmscope.tui import screens
from warmscope.tui.app import WarmscopeApp, build_app
from warmscope.tui.messages import Exported, RecordsRead, ToApp
from warmscope.tui.screens.compare_screen import CompareScreen
from warmscope.tui.screens.export_screen import ExportScreen
from warmscope.tui.screens.sweep_screen import SweepScreen
from warmscope.tui.sweep_runner import RunnerState, Started

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "speech-script.jsonl"
NO_PROFILING = DATA / "speech-no-profiling.jsonl"
SWEEP = DATA / "gpu_h100" / "runs" / "warmup-cnn-script-cudnn-3shapes" / "observe" / "sweep.json"


def run_seeing(app: WarmscopeApp, scenario: Callable[[Pilot], Awaitable[None]]) -> list[Message]:
    """Run ``scenario`` and return every message the app and its screens handled, in order."""
    seen: list[Message] = []

    async def main() -> None:
        async with app.run_test(size=(100, 30), message_hook=seen.append) as pilot:
            await settle(pilot)
            await scenario(pilot)

    asyncio.run(main())
    return seen


@dataclass
class Heard:
    """An app shared by the tests below, and every message it and its screens handled."""

    shared: SharedApp
    seen: list[Message]

    def run(self, scenario: Callable[[Pilot], Awaitable[None]]) -> list[Message]:
        """Run ``scenario`` (from the first frame's screen) and return the messages handled
        meanwhile, in order."""
        start = len(self.seen)
        self.shared.run(scenario)
        return self.seen[start:]


@pytest.fixture(scope="module")
def heard() -> Iterator[Heard]:
    """``warmscope open speech-script.jsonl speech-no-profiling.jsonl``, its messages heard."""
    seen: list[Message] = []
    with SharedApp(build_app(records=[SCRIPT, NO_PROFILING]), message_hook=seen.append) as shared:
        yield Heard(shared, seen)


def kinds(seen: list[Message], *types: type[Message]) -> list[Message]:
    """The messages of ``types``, each once (a bubbling message is seen by each handler)."""
    unique = {id(m): m for m in seen if isinstance(m, types)}
    return list(unique.values())


class PlayedSweep:
    """What ``SweepScreen`` reads of a ``SweepRunner``: one process that starts, then the end
    (when the test says so), with a real sweep document."""

    def __init__(self, doc: dict[str, Any], session: FakeSession) -> None:
        self.doc = doc
        self.plan = SweepPlan(repeat=1)
        self.folder = Path(doc["folder"])
        self.error = ""
        self.stopping = False
        self.ended = False
        self._started = [Started(session, 0, doc["cells"][0]["label"], 0)]

    def take_started(self) -> list[Started]:
        started, self._started = self._started, []
        return started

    def state(self) -> RunnerState:
        finished = self.doc["finished"] if self.ended else 0
        return RunnerState(self.doc, [], None, finished, 1, self.ended, False, "")

    def stop(self) -> None:
        self.stopping = True


def test_a_running_sweeps_screen_tells_the_app_of_each_process_and_of_its_end() -> None:
    doc = json.loads(SWEEP.read_text())
    app = build_app()
    script = [Moment([iterations(0, [9.0, 2.0, 2.0])]), Moment([end()])]
    session = FakeSession(RunSettings(target="sample:trivial"), script)
    runner = PlayedSweep(doc, session)

    async def scenario(pilot: Pilot) -> None:
        app.state.controller.sweeping = runner  # type: ignore[assignment]  # as the app's start sets it
        await app.push_screen(SweepScreen(runner=runner))  # type: ignore[arg-type]
        await wait_for(pilot, lambda: app.runs, timeout=10)
        (entry,) = app.runs
        assert entry.session is session and app.state.viewed is entry, "followed under the sweep"
        assert entry.sweep is not None and entry.sweep.label == "no recipe"
        assert entry.sweep.sweep == doc["folder"]
        assert app.state.sweeps == [] and app.state.controller.sweeping is runner
        runner.ended = True
        await wait_for(pilot, lambda: app.state.sweeps, timeout=10)
        assert app.state.sweeps == [doc] and app.state.controller.sweeping is None
        assert isinstance(app.screen, SweepScreen), "the screen stays, to show the answer"

    seen = run_seeing(app, scenario)
    told = kinds(seen, SweepScreen.ProcessStarted, SweepScreen.Ended)
    assert [type(m) for m in told] == [SweepScreen.ProcessStarted, SweepScreen.Ended]
    assert all(m.runner is runner for m in told)  # type: ignore[attr-defined]


def test_x_on_the_compare_screen_asks_the_app_whose_worker_tells_what_it_wrote(
    heard: Heard, tmp_path: Path
) -> None:
    app = heard.shared.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("c")
        assert isinstance(app.screen, CompareScreen)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen), timeout=5)
        app.screen.query_one("#export-dir", Input).value = str(tmp_path)
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(list(tmp_path.iterdir())) == 2, timeout=10)
        await pilot.pause(0.1)

    seen = heard.run(scenario)
    (asked,) = kinds(seen, CompareScreen.ExportAsked)
    assert [e.number for e in asked.entries] == [1, 2]  # type: ignore[attr-defined]
    (exported,) = kinds(seen, Exported)
    assert isinstance(exported, Exported) and exported.error == ""
    assert sorted(p.name for p in exported.paths) == [
        "warmscope-compare-1-2.json",
        "warmscope-compare-1-2.md",
    ]
    assert seen.index(asked) < seen.index(exported)


def test_an_export_that_cannot_write_is_told_in_a_message_not_raised(
    heard: Heard, tmp_path: Path
) -> None:
    app = heard.shared.app
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen), timeout=5)
        app.screen.query_one("#export-dir", Input).value = str(blocked / "under")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, ExportScreen), timeout=5)
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)

    seen = heard.run(scenario)
    (exported,) = kinds(seen, Exported)
    assert isinstance(exported, Exported) and exported.paths == [] and exported.error


def test_records_opened_short_are_read_at_once_with_no_worker_message(heard: Heard) -> None:
    """A short record is read before the first frame's runs are shown: no worker, so no
    ``RecordsRead`` (the long ones' path is ``test_big_record``)."""
    app = heard.shared.app

    async def scenario(pilot: Pilot) -> None:
        assert [e.record_name for e in app.runs] == [SCRIPT.name, NO_PROFILING.name]

    heard.run(scenario)
    assert kinds(heard.seen, RecordsRead) == [], "none since the app started"


def test_every_message_for_the_app_has_a_part_that_handles_it() -> None:
    """The app hands each ``ToApp`` to the part with a handler of its name: a message no part
    handles would be dropped without a word."""
    for module in pkgutil.iter_modules(screens.__path__):  # the messages declared on screens
        importlib.import_module(f"{screens.__name__}.{module.name}")
    app = build_app()
    kinds, unhandled = [ToApp], []
    while kinds:
        kind = kinds.pop()
        kinds += kind.__subclasses__()
        if kind is not ToApp and not any(hasattr(p, kind.handler_name) for p in app.parts):
            unhandled.append(kind.__qualname__)
    assert unhandled == []
