"""Starting a run from the TUI while the start is slow: over ``--host`` it waits for the host.

The slowness is real: ``--host`` points at a loopback port whose listener never speaks (ssh
waits for the server's banner until its ``ConnectTimeout``), or at the loopback SSH server of
``tests/ssh_server.py``. The UI must answer keys and redraw meanwhile, say the start's failure
in one line, and leave no process behind when the user quits before the start ends.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from textual.pilot import Pilot

from tests.conftest import run_id_of, wait_gone
from tests.ssh_server import Server, ssh_server
from tests.tui_support import run, screen_text, wait_for
from warmscope.core.data.reading import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.tui.app import WarmscopeApp, build_app
from warmscope.tui.help_screen import HelpScreen
from warmscope.tui.sweep_actions import start_sweep
from warmscope.tui.sweep_runner import SweepPlan

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client")
PYTHON = sys.executable  # the remote interpreter: this one, which has torch
CONNECT_S = 3
"""How long ssh waits for the silent host's banner: the start's slowness."""


@pytest.fixture
def silent_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A loopback port that accepts connections and never answers; ssh is pointed at it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    monkeypatch.setenv(
        "WARMSCOPE_SSH_OPTIONS",
        f"-p {port} -o ConnectTimeout={CONNECT_S} -o StrictHostKeyChecking=no "
        "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
    )
    try:
        yield port
    finally:
        listener.close()


def _told(app: WarmscopeApp) -> list[tuple[str, str]]:
    """Every toast the app shows from now on, as ``(title, message)``."""
    shown: list[tuple[str, str]] = []
    notify = app.notify

    def keep(message: str, **kw: object) -> None:
        shown.append((str(kw.get("title", "")), str(message)))
        notify(message, **kw)  # type: ignore[arg-type]

    app.notify = keep  # type: ignore[method-assign]
    return shown


def _ssh_children() -> list[psutil.Process]:
    """This process's ``ssh`` children that are still running."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() == "ssh" and child.status() != psutil.STATUS_ZOMBIE:
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def _no_ssh_left(within: float = 5.0) -> bool:
    """No ``ssh`` child left once a killed one has had ``within`` seconds to be reaped."""
    deadline = time.monotonic() + within
    while _ssh_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _ssh_children()


def test_the_ui_answers_while_a_start_waits_for_the_host(
    silent_host: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    # A file target over --host: its path is asked there before the run is planned.
    settings = RunSettings(target="model.py:make", host="127.0.0.1", python=PYTHON)
    app = build_app(settings=settings)
    shown = _told(app)
    times: dict[str, float] = {}

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.starting is not None, timeout=10)
        times["pending"] = time.monotonic()
        await pilot.pause()
        assert "connecting to 127.0.0.1" in screen_text(app), "the header says what it waits for"
        await pilot.press("question_mark")  # a key, handled while the host is silent
        assert isinstance(app.screen, HelpScreen) and app.starting is not None
        times["key"] = time.monotonic()
        await pilot.press("escape")
        app.start_run(settings)  # a second start, as r or the settings screen's Enter makes
        assert ("", "a run is starting: wait for it (q quits)") in shown
        await wait_for(pilot, lambda: app.starting is None, timeout=CONNECT_S + 20)
        times["ended"] = time.monotonic()
        await pilot.pause()

    run(app, scenario, settled=False)
    assert times["key"] < times["ended"]
    assert times["ended"] - times["pending"] > CONNECT_S - 1.0, "the start was slow indeed"
    failures = [m for title, m in shown if title == "Cannot run"]
    assert len(failures) == 1 and "\n" not in failures[0]
    assert failures[0].startswith("--host 127.0.0.1: ssh failed:")
    assert app.runs == [] and not list((tmp_path / "runs").glob("*.jsonl"))
    assert _no_ssh_left()


def test_quitting_while_the_host_is_silent_leaves_no_ssh(
    silent_host: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    settings = RunSettings(target="sample:trivial", host="127.0.0.1", python=PYTHON)
    app = build_app(settings=settings)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.starting is not None, timeout=10)
        await wait_for(pilot, _ssh_children, timeout=10)  # the connection is being made
        await pilot.press("q")  # nothing ran yet: no question, the app leaves now

    run(app, scenario, settled=False)
    assert app.runs == []
    assert _no_ssh_left()
    assert not list((tmp_path / "runs").glob("*.jsonl")), "a start that failed keeps no record"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with ssh_server(tmp_path_factory.mktemp("ssh")) as running:
        yield running


def test_a_start_that_ends_after_quitting_is_ended_at_once(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(runs))
    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", server.options())
    settings = RunSettings(target="sample:trivial", iters=100_000, host="127.0.0.1", python=PYTHON)
    app = build_app(settings=settings)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.starting is not None, timeout=10)
        await pilot.press("q")  # the connection and the remote start are still on their way

    run(app, scenario, settled=False)
    assert app.runs == [], "quit before it started: never a run of the app"
    records = list(runs.glob("*.jsonl"))
    if records:  # the start ended after the quit: that run was killed at once
        (record,) = records
        assert read_run(record).status != "ok"
        assert wait_gone(run_id_of(record), 10) == []
    assert _no_ssh_left()
    deadline = time.monotonic() + 10
    while server.left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.left() == []


def test_a_sweep_over_a_silent_host_fails_in_one_line_with_the_ui_live(
    silent_host: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    app = build_app()
    shown = _told(app)
    settings = RunSettings(target="model.py:make", host="127.0.0.1", python=PYTHON)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.ready)
        t0 = time.monotonic()
        start_sweep(app, settings, SweepPlan(repeat=2))
        assert time.monotonic() - t0 < CONNECT_S / 2 and app.starting is not None
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.starting is not None
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.starting is None, timeout=CONNECT_S + 20)

    run(app, scenario, settled=False)
    failures = [m for title, m in shown if title == "No sweep"]
    assert len(failures) == 1 and failures[0].startswith("--host 127.0.0.1: ssh failed:")
    assert app.controller.sweeping is None and app.runs == []
    assert _no_ssh_left()
    assert os.environ.get("WARMSCOPE_SSH_OPTIONS", "").startswith(f"-p {silent_host} ")


def test_a_warmup_over_a_silent_host_fails_in_one_line_with_the_ui_live(
    silent_host: int, tmp_path: Path
) -> None:
    record = tmp_path / "speech.jsonl"
    shutil.copyfile(Path(__file__).parent / "data" / "speech-script.jsonl", record)
    app = build_app(records=[record])
    shown = _told(app)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs)
        # The viewed run's settings, as if it had run on the silent host.
        app.runs[0].data.settings = RunSettings(target="model.py:make", host="127.0.0.1")
        await pilot.press("W")
        await pilot.press("y")  # read from a record, the host is shown first: use it
        assert app.starting is not None and app.starting.what == "a warm-up"
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.starting is not None
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.starting is None, timeout=CONNECT_S + 20)

    run(app, scenario, settled=False)
    failures = [m for title, m in shown if title == "No warm-up"]
    assert len(failures) == 1 and failures[0].startswith("--host 127.0.0.1: ssh failed:")
    assert _no_ssh_left()
