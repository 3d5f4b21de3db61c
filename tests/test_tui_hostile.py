"""The TUI against hostile input: records and children whose strings look like markup, records
that ask for an interpreter, an environment or pickle trust, and a terminal that goes away.

Records are built in ``tmp_path`` from a checked-in record of a real run, with the strings a
stranger could put there; live runs are fake sessions (no torch) except the hang-up test, which
runs the real program in a real pseudo-terminal.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from tests.conftest import run_id_of, survivors, wait_gone
from tests.fake_session import FakeSession, Moment, end, factory, iterations
from tests.tui_support import SharedApp, run, screen_text, settle, tui_iterating, wait_for
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.record import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.tui.app import WarmscopeApp, build_app
from warmscope.tui.screens.compare_screen import CompareScreen
from warmscope.tui.screens.event_screen import EventDetailScreen
from warmscope.tui.screens.export_screen import ExportScreen
from warmscope.tui.screens.graphs_screen import GraphsScreen
from warmscope.tui.screens.help_screen import HelpScreen
from warmscope.tui.screens.history_screen import HistoryScreen
from warmscope.tui.screens.iteration_screen import IterationScreen
from warmscope.tui.screens.main_screen import MainScreen
from warmscope.tui.screens.settings_screen import SettingsScreen
from warmscope.tui.screens.trust_screen import TrustScreen
from warmscope.tui.widgets.run.iteration_table import IterationTable
from warmscope.tui.widgets.run.run_header import RunHeader
from warmscope.tui.widgets.run.summary_panel import SummaryPanel

DATA = Path(__file__).parent / "data"
PROFILED = DATA / "quantized-profiled.jsonl"
SCRIPT = DATA / "speech-script.jsonl"

MARKUP = "[/]"  # closes a tag never opened: a MarkupError wherever it is taken for markup
TARGET = "sample:[/]x[bold]"
DETAIL = "[/]stopped[bold] at [red]once"
VALUE = "[/][$accent]x\\"  # a tag, a variable, and a backslash that would escape what follows
STEM = "[bold]rec[b]"  # a file name cannot hold "/", but it can hold tags
RECORD_NAME = STEM + ".jsonl"


SHOWN = (120, 36)  # room for the toasts


def rewrite(src: Path, dst: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """``src`` with each line passed through ``change``, written to ``dst``."""
    lines = []
    for raw in src.read_text().splitlines():
        line = json.loads(raw)
        change(line)
        lines.append(json.dumps(line))
    dst.write_text("\n".join(lines) + "\n")
    return dst


def poison(line: dict[str, Any]) -> None:
    """Markup in every string a record holds that the TUI shows."""
    kind = line["type"]
    if kind == "header":
        line["settings"]["target"] = line["target"]["spec"] = TARGET
        line["settings"]["knobs"]["compile_backend"] = VALUE
    elif kind == "event":
        line["title"] = f"{MARKUP}{line['title']}[bold]"
        line["text"] = f"{MARKUP}{line.get('text', '')}"
    elif kind == "phase":
        line["name"] = ("[$accent]\\" if line["name"] == "load" else MARKUP) + line["name"]
    elif kind == "profile":
        for op in line["ops"]:
            op["name"], op["shapes"] = MARKUP + op["name"], MARKUP
    elif kind == "graphs":
        for key, value in line.items():
            if key != "type" and isinstance(value, str):
                line[key] = MARKUP + value
    elif kind == "end":
        line["status"], line["detail"] = outcome.STOPPED, DETAIL


def hostile_record(folder: Path) -> Path:
    return rewrite(PROFILED, folder / RECORD_NAME, poison)


def visible(app: WarmscopeApp) -> str:
    return screen_text(app)


def notes(app: WarmscopeApp) -> list[str]:
    """Every notification's message from now on (they are drawn too: see ``run_shown``)."""
    seen: list[str] = []
    notify = app.notify

    def keep(message: str, **kw: Any) -> None:
        seen.append(message)
        notify(message, **kw)

    app.notify = keep  # type: ignore[method-assign]
    return seen


# -- 1. no MarkupError: strings from records, the child and the user show as they are ----------


def test_a_record_full_of_markup_shows_literally_on_every_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the export's default folder: where the app was started
    record = hostile_record(tmp_path)
    other = rewrite(SCRIPT, tmp_path / "other.jsonl", lambda line: None)
    app = build_app(records=[record, other])
    shown_notes = notes(app)

    async def scenario(pilot: Pilot) -> None:
        assert isinstance(app.screen, MainScreen)
        header = app.screen.query_one(RunHeader).plain
        assert TARGET in header and f"compile_backend={VALUE}" in header
        assert RECORD_NAME in header and DETAIL in header
        shown = visible(app)
        assert TARGET in shown and f"{MARKUP}import torch" in shown
        summary = str(app.screen.query_one(SummaryPanel).render())
        assert "[$accent]\\load" in summary and f"{MARKUP}script" in summary

        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        shown = visible(app)
        assert TARGET in shown and RECORD_NAME in shown
        await pilot.press("escape")

        await pilot.press("c")
        assert isinstance(app.screen, CompareScreen)
        shown = visible(app)
        assert TARGET in shown, shown
        diff = str(app.screen.query_one("#compare-settings-text", Static).render())
        assert f"{VALUE} → inductor" in diff
        await pilot.press("escape")

        table = app.screen.query_one(IterationTable)
        table.focus()
        await pilot.press("home", "enter")  # iteration 0: profiled, its events
        assert isinstance(app.screen, IterationScreen)
        await pilot.pause()
        shown = visible(app)
        assert f"{MARKUP}quantized::" in shown and TARGET in shown
        await pilot.press("3", "enter")
        assert isinstance(app.screen, EventDetailScreen)
        title = app.screen.query_one("#detail-title", Static)
        assert f": {MARKUP}" in str(title.render()) and str(title.render()).endswith("[bold]")
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, MainScreen)

        await pilot.press("g")
        assert isinstance(app.screen, GraphsScreen)
        assert TARGET in visible(app)
        await pilot.press("escape")

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")

        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen))
        await pilot.pause()
        assert app.screen.query_one("#knob-compile_backend", Input).value == VALUE
        await pilot.press("ctrl+s")  # the target is no sample: refused, with its name
        await pilot.pause()
        error = app.screen.query_one("#form-error", Static)
        assert "unknown sample '[/]x[bold]'" in str(error.render())
        await pilot.press("escape")

        await pilot.press("x")
        assert isinstance(app.screen, ExportScreen)
        assert TARGET in visible(app)
        await pilot.press("enter")
        await settle(pilot)
        await wait_for(pilot, lambda: any(STEM in message for message in shown_notes))
        await pilot.pause(0.1)
        assert STEM + ".csv" in visible(app)  # in the toast: the header names the .jsonl
        assert app.is_running

    run(app, scenario, SHOWN, notifications=True)
    assert (tmp_path / (STEM + ".csv")).exists()


HOSTILE_ERROR = {
    "type": "error",
    "where": "forward",
    "iteration": 1,
    "exception": "RuntimeError",
    "message": "RuntimeError: [/]bad[bold] shapes",
    "traceback": "Traceback (most recent call last):\nRuntimeError: [/]bad[bold] shapes\n",
}


def hostile_live_script() -> list[Moment]:
    event = {
        "type": "event",
        "kind": "warning",
        "title": "[/]UserWarning[bold] from [red]the model",
        "text": "[/]text",
        "iteration": 0,
        "phase": None,
        "ms": None,
        "t": 0.1,
    }
    stderr = {**event, "kind": "stderr", "title": "[/]stderr", "text": "[/]a stderr line[b]"}
    return [
        Moment([{"type": "phase", "name": "[/]import torch", "ms": 900.0}], phase="[/]load"),
        Moment(busy={"iteration": 0, "ms": 2500.0, "activity": "[/]compiling"}),
        Moment([iterations(0, [30.0]), event, stderr]),
        Moment([HOSTILE_ERROR, end(outcome.FAILED, "iteration 1: [/]bad[bold] shapes", 1)]),
    ]


def test_a_live_run_whose_child_writes_markup_fails_on_screen(tmp_path: Path) -> None:
    settings = RunSettings(target="sample:trivial", iters=10)
    settings.set(f"compile_backend={MARKUP}")
    made: list[FakeSession] = []
    app = build_app(settings=settings, start=factory(hostile_live_script(), made))
    shown_notes = notes(app)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished)
        await pilot.pause(0.2)
        entry = app.runs[0]
        assert entry.data.status == outcome.FAILED
        header = app.screen.query_one(RunHeader).plain
        assert "[/]bad[bold] shapes" in header and f"compile_backend={MARKUP}" in header
        # Failed in front of the user: said in the header, no toast over the stderr pane.
        assert not any("bad" in message for message in shown_notes), shown_notes
        await pilot.press("1")
        shown = visible(app)
        assert "[/]UserWarning[bold] from [red]the model" in shown
        await pilot.press("3")
        assert "[/]a stderr line[b]" in visible(app)
        assert app.is_running

    run(app, scenario, SHOWN, settled=False, notifications=True)


def test_a_run_that_cannot_start_says_why_in_plain_text() -> None:
    def refuse(settings: RunSettings, record: Path | None, command: list[str]) -> FakeSession:
        raise UsageError(f"unknown sample {settings.target!r}")

    app = build_app(settings=RunSettings(target=TARGET), start=refuse)
    shown_notes = notes(app)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: shown_notes)
        await pilot.pause(0.1)
        assert any(TARGET in message for message in shown_notes)
        assert "unknown sample" in visible(app) and MARKUP in visible(app)
        assert app.is_running and not app.runs

    run(app, scenario, SHOWN, settled=False, notifications=True)


# -- 2. records are data: their interpreter, environment and pickle trust need a yes ----------


def asking_record(folder: Path, python: str = "/x/bin/python") -> Path:
    def ask(line: dict[str, Any]) -> None:
        if line["type"] == "header":
            line["settings"].update(
                python=python, env={"LD_PRELOAD": "/tmp/evil.so"}, trust_pickle=True
            )

    return rewrite(SCRIPT, folder / "asks.jsonl", ask)


def recording(made: list[RunSettings]) -> Callable[..., FakeSession]:
    """A fake session factory that keeps the settings each run was started with."""
    start = factory([Moment([iterations(0, [3.0, 2.0]), end(outcome.OK, "2 iterations", 0)])])

    def record(settings: RunSettings, path: Path | None, command: list[str]) -> FakeSession:
        made.append(settings)
        return start(settings, path, command)

    return record


TRUST_ITEMS = (
    "interpreter /x/bin/python",
    "environment LD_PRELOAD=/tmp/evil.so",
    "trust pickle: loads code from the file",
)


@dataclass
class Asking:
    """An app over ``asks.jsonl`` (``asking_record``), and the settings each run it started
    was given."""

    shared: SharedApp
    made: list[RunSettings]


@pytest.fixture(scope="module")
def asking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Asking]:
    """One app for the answers below: each test starts from the record as opened, its
    settings not yet answered for (``SharedApp`` puts the next run's settings back)."""
    made: list[RunSettings] = []
    record = asking_record(tmp_path_factory.mktemp("asking"))
    with SharedApp(build_app(records=[record], start=recording(made))) as shared:
        yield Asking(shared, made)


@pytest.mark.parametrize("key", ["n", "y", "enter", "escape"])
def test_a_records_interpreter_environment_and_pickle_trust_need_a_yes(
    key: str, asking: Asking
) -> None:
    app = asking.shared.app
    runs = len(app.runs)
    made = asking.made
    made.clear()

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("r")
        assert isinstance(app.screen, TrustScreen)
        items = str(app.screen.query_one("#trust-items", Static).render())
        assert all(item in items for item in TRUST_ITEMS), items
        assert "asks.jsonl" in visible(app)
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        if key == "escape":
            assert made == [] and len(app.runs) == runs, "nothing ran"
            return
        await wait_for(pilot, lambda: app.runs[-1].view.finished)
        [settings] = made
        assert settings.target == "sample:speech" and settings.knobs["intra_op_threads"] == 1
        if key == "n":
            assert settings.untrusted() == {}
            assert (settings.python, settings.env, settings.trust_pickle) == (None, {}, False)
        else:
            assert settings.python == "/x/bin/python" and settings.trust_pickle
            assert settings.env == {"LD_PRELOAD": "/tmp/evil.so"}
        await pilot.press("r")  # answered once: the next run does not ask again
        await wait_for(pilot, lambda: len(made) == 2)
        assert made[1].untrusted() == settings.untrusted()

    asking.shared.run(scenario)


def test_settings_edited_from_a_record_still_ask_and_the_users_own_do_not(
    tmp_path: Path,
) -> None:
    made: list[RunSettings] = []
    # An interpreter that is there: the form checks the settings before it lets them run.
    app = build_app(records=[asking_record(tmp_path, sys.executable)], start=recording(made))

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen))
        await pilot.pause()
        await pilot.press("ctrl+r")  # the form hides them, but they are the record's still
        await wait_for(pilot, lambda: isinstance(app.screen, TrustScreen), timeout=10)
        await pilot.press("n")
        await wait_for(pilot, lambda: len(made) == 1)
        assert made[0].untrusted() == {}

    run(app, scenario)

    made.clear()
    own = RunSettings(target="sample:trivial", python="/usr/bin/python3", trust_pickle=True)
    own.set("env.OMP_NUM_THREADS=1")
    app = build_app(settings=own, start=recording(made))

    async def again(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished)
        await pilot.press("r")
        await wait_for(pilot, lambda: len(made) == 2)
        assert not isinstance(app.screen, TrustScreen)
        assert [s.untrusted() for s in made] == [own.untrusted()] * 2

    run(app, again, settled=False)


# -- 3. --overwrite: the first run replaces the --record file, later ones get new names ---------


def test_overwrite_goes_to_the_first_run_only(tmp_path: Path) -> None:
    calls: list[tuple[Path | None, dict[str, Any]]] = []
    start = factory([Moment([iterations(0, [3.0]), end(outcome.OK, "1 iteration", 0)])])

    def replacing(
        settings: RunSettings, path: Path | None, command: list[str], **options: Any
    ) -> FakeSession:
        calls.append((path, options))
        return start(settings, path, command)

    record = tmp_path / "run.jsonl"
    app = build_app(
        settings=RunSettings(target="sample:trivial"),
        record_path=record,
        start=replacing,
        overwrite=True,
    )

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished)
        await pilot.press("r")
        await wait_for(pilot, lambda: len(app.runs) == 2 and app.runs[1].view.finished)

    run(app, scenario, settled=False)
    assert calls == [(record, {"overwrite": True}), (tmp_path / "run-2.jsonl", {})]


# -- 4. the terminal goes away: out within 2 s, nothing left running ----------------------------


HANGUPS = [
    # (seconds between the terminal going and SIGHUP, seconds the TUI may take after SIGHUP)
    (0.0, 2.5),  # as the kernel does: the app gets out by itself
    # The UI's writes wedged on the dead terminal before the signal came: the watchdog ends it.
    (4.0, 3.0),
]


@pytest.mark.parametrize(("late", "within"), HANGUPS, ids=["at-once", "wedged-first"])
def test_the_tui_is_gone_within_2_s_of_its_terminal(
    late: float, within: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    record = tmp_path / "tui.jsonl"
    record.write_text("an old file the run replaces (--overwrite)\n")
    with tui_iterating(record, "--overwrite") as terminal:
        proc = terminal.proc
        run_id = run_id_of(record)
        assert survivors(run_id), "the child is running"
        terminal.hang_up()  # the terminal is really gone, as when an SSH session drops
        time.sleep(late)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGHUP)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=within)
        took = time.monotonic() - t0
        assert proc.returncode is not None, f"the TUI is still running {within} s after SIGHUP"
    assert took <= within, f"took {took:.2f} s (exit code {proc.returncode})"
    assert wait_gone(run_id, 0.5) == [], "no process of the run is left"
    data = read_run(record)
    assert data.count > 0 and data.run_id == run_id
    assert data.status == "stopped", "a hang-up ends the run, and its record says so"


def test_the_settings_form_marks_invisible_characters_in_the_target_as_the_main_view_does() -> None:
    hidden = "sample:tri\u200bvial"
    app = build_app(settings=RunSettings(target=hidden), start=recording([]))

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen))
        await pilot.pause()
        assert app.screen.query_one("#field-target", Input).value == hidden  # kept as it is
        help_text = str(app.screen.query_one("#help-target", Static).render())
        assert "holds characters a terminal does not show" in help_text
        assert "sample:tri\ufffdvial" in help_text

    run(app, scenario)
