"""Starting a run from the TUI while the start is slow: over ``--host`` it waits for the host.

The slowness is real: ``--host`` points at a loopback port whose listener never speaks (ssh
waits for the server's banner), or at the loopback SSH server of ``tests/ssh_server.py``. The
UI must answer keys and redraw meanwhile, say the start's failure in one line, and leave no
process behind when the user quits before the start ends. The silent host keeps ssh waiting
until the test hangs up (ssh's ``ConnectTimeout`` is only a backstop), so a busy machine cannot
end the wait before the test has checked what it checks while waiting.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from textual.pilot import Pilot

from tests.ssh_server import Server, ssh_server
from tests.tui_support import run, screen_text, wait_for
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.reading import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.sweep_plan import SweepPlan
from warmscope.core.run import remote
from warmscope.core.run.guardian import Guardian
from warmscope.core.run.proctree import RUN_ID_VAR
from warmscope.tui.app import WarmscopeApp, build_app
from warmscope.tui.run_start import Pending
from warmscope.tui.screens.help_screen import HelpScreen

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client")
PYTHON = sys.executable  # the remote interpreter: this one, which has torch
CONNECT_S = 30
"""How long ssh would wait for the silent host's banner: far longer than any test waits."""
REMOTE_END_S = 30
SLOW_START_S = 3


@dataclass
class SilentHost:
    """A loopback port that accepts connections and never answers; ssh is pointed at it."""

    port: int
    listener: socket.socket

    def hang_up(self) -> None:
        """End the wait now: the connections it never answered are reset, and ssh fails."""
        self.listener.close()


@pytest.fixture
def silent_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[SilentHost]:
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
        yield SilentHost(port, listener)
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
    silent_host: SilentHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    # A file target over --host: its path is asked there before the run is planned.
    settings = RunSettings(target="model.py:make", host="127.0.0.1", python=PYTHON)
    app = build_app(settings=settings)
    shown = _told(app)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.state.starting is not None, timeout=10)
        await pilot.pause()
        assert "connecting to 127.0.0.1" in screen_text(app), "the header says what it waits for"
        await pilot.press("question_mark")  # a key, handled while the host is silent
        assert isinstance(app.screen, HelpScreen) and app.state.starting is not None
        await pilot.press("escape")
        app.control.start_run(settings)  # a second start, as r or the settings screen's Enter makes
        assert ("", "a run is starting: wait for it (q quits)") in shown
        assert app.state.starting is not None, "still waiting for the host"
        silent_host.hang_up()
        await wait_for(pilot, lambda: app.state.starting is None, timeout=20)
        await pilot.pause()

    run(app, scenario, settled=False)
    failures = [m for title, m in shown if title == "Cannot run"]
    assert len(failures) == 1 and "\n" not in failures[0]
    assert failures[0].startswith("--host 127.0.0.1: ssh failed:")
    assert app.runs == [] and not list((tmp_path / "runs").glob("*.jsonl"))
    assert _no_ssh_left()


@pytest.mark.parametrize("guardian_start", ["as it is", "slow"])
def test_quitting_while_the_host_is_silent_leaves_no_ssh(
    silent_host: SilentHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guardian_start: str
) -> None:
    """``slow``: the start's guardian takes a second to start, so q comes after its ``ssh``
    began and before the start registered it as connecting (the race below)."""
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    if guardian_start == "slow":
        start = Guardian.start

        def slow_start(self: Guardian, *args: Any, **kwargs: Any) -> None:
            time.sleep(1.0)
            start(self, *args, **kwargs)

        monkeypatch.setattr(Guardian, "start", slow_start)
    settings = RunSettings(target="sample:trivial", host="127.0.0.1", python=PYTHON)
    app = build_app(settings=settings)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.state.starting is not None, timeout=10)
        await wait_for(pilot, _ssh_children, timeout=10)  # the connection is being made
        times["quit"] = time.monotonic()
        await pilot.press("q")  # nothing ran yet: no question, the app leaves now

    times: dict[str, float] = {}
    run(app, scenario, settled=False)
    # The connection was cut: the app and its worker did not wait for the host.
    assert time.monotonic() - times["quit"] < CONNECT_S / 3
    assert app.runs == []
    assert _no_ssh_left()
    assert not list((tmp_path / "runs").glob("*.jsonl")), "a start that failed keeps no record"


def test_a_quit_after_ssh_started_and_before_it_was_registered_still_ends_it() -> None:
    """The test above met this once in CI (its quit waited the whole connect timeout): ``ssh``
    was running, so the test pressed q, but the start had not yet registered it as
    connecting (it was still starting its guardian), and the cut found nothing to end. A cut
    now counts from before the ``ssh`` starts, and the registration ends it. A connection
    started after a cut is not touched. (``sleep`` stands in for the ``ssh``.)"""
    since = remote.cuts()
    ssh = subprocess.Popen(["sleep", "60"])
    try:
        remote.cut_connecting()  # q: the start has not registered its ssh yet
        with remote.connecting(ssh, since):
            assert ssh.wait(timeout=5) == -signal.SIGKILL
        since = remote.cuts()
        later = subprocess.Popen(["sleep", "60"])
        try:
            with remote.connecting(later, since), pytest.raises(subprocess.TimeoutExpired):
                later.wait(timeout=0.2)
        finally:
            later.kill()
            later.wait()
    finally:
        ssh.kill()
        ssh.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with ssh_server(tmp_path_factory.mktemp("ssh")) as running:
        yield running


def test_quitting_while_a_remote_start_is_on_its_way_leaves_nothing_there(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(runs))
    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", server.options())
    # An interpreter slow to start there: the start is surely on its way when q comes. Either
    # q cuts its connection, or (on a busy machine, q before ssh began) the start is made
    # after the quit and ended at once (also a unit check below).
    slow = tmp_path / "slow-python"
    slow.write_text(f'#!/bin/sh\nsleep {SLOW_START_S}\nexec {PYTHON} "$@"\n')
    slow.chmod(0o755)
    settings = RunSettings(
        target="sample:trivial", iters=100_000, host="127.0.0.1", python=str(slow)
    )
    app = build_app(settings=settings)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.state.starting is not None, timeout=10)
        await pilot.press("q")

    run(app, scenario, settled=False)
    assert app.runs == [], "quit before it started: never a run of the app"
    records = list(runs.glob("*.jsonl"))
    if records:  # made after the quit: ended at once, and its record says so
        (record,) = records
        assert read_run(record).status not in ("ok", "running"), "it ended, and says so"
    assert _no_ssh_left()
    # The remote end sees the connection go, once its interpreter is up: it reads what came
    # of the start, and ends with nothing left (no folder, no process of the run).
    deadline = time.monotonic() + REMOTE_END_S
    while (server.left() or _runs_of_this_process()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.left() == [] and _runs_of_this_process() == []


def _runs_of_this_process() -> list[int]:
    """Processes that carry the run id of a run this process started, on either side."""
    prefix = f"{os.getpid()}-"
    found = []
    for proc in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error):
            run_id = proc.environ().get(RUN_ID_VAR, "")
            if run_id.startswith(prefix) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
    return found


def test_a_sweep_over_a_silent_host_fails_in_one_line_with_the_ui_live(
    silent_host: SilentHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    app = build_app()
    shown = _told(app)
    settings = RunSettings(target="model.py:make", host="127.0.0.1", python=PYTHON)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.ready)
        t0 = time.monotonic()
        app.control.start_sweep(settings, SweepPlan(repeat=2))
        assert time.monotonic() - t0 < CONNECT_S / 3 and app.state.starting is not None
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.state.starting is not None
        await pilot.press("escape")
        silent_host.hang_up()
        await wait_for(pilot, lambda: app.state.starting is None, timeout=20)

    run(app, scenario, settled=False)
    failures = [m for title, m in shown if title == "No sweep"]
    assert len(failures) == 1 and failures[0].startswith("--host 127.0.0.1: ssh failed:")
    assert app.state.controller.sweeping is None and app.runs == []
    assert _no_ssh_left()
    assert os.environ.get("WARMSCOPE_SSH_OPTIONS", "").startswith(f"-p {silent_host.port} ")


def test_a_warmup_over_a_silent_host_fails_in_one_line_with_the_ui_live(
    silent_host: SilentHost, tmp_path: Path
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
        await pilot.press("y")  # what will run, asked first: go on
        await pilot.press("y")  # read from a record, the host is shown first: use it
        assert app.state.starting is not None and app.state.starting.what == "a warm-up"
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.state.starting is not None
        await pilot.press("escape")
        silent_host.hang_up()
        await wait_for(pilot, lambda: app.state.starting is None, timeout=20)

    run(app, scenario, settled=False)
    failures = [m for title, m in shown if title == "No warm-up"]
    assert len(failures) == 1 and failures[0].startswith("--host 127.0.0.1: ssh failed:")
    assert _no_ssh_left()


def test_what_a_start_makes_after_the_app_quit_is_ended_not_handed_over() -> None:
    release = threading.Event()
    ended: list[str] = []
    handed: list[tuple[str | None, str]] = []

    def take(made: str | None, error: str) -> None:
        handed.append((made, error))

    def build() -> str:
        release.wait(10)
        return "late"

    late = Pending("a run", build, take, ended.append)
    worker = threading.Thread(target=late.make)
    worker.start()
    late.abandon()  # the app quits while the start is on its way
    release.set()
    worker.join(10)
    late.finish()  # the hand-off, were the app still there to take it
    assert ended == ["late"] and handed == []

    early = Pending("a run", lambda: "early", take, ended.append)
    early.make()  # made, and not yet handed over when the app quits
    early.abandon()
    early.finish()
    assert ended == ["late", "early"] and handed == []

    def refuse() -> str:
        raise UsageError("--host h: ssh failed: no route\nto host")

    for pending in (Pending("a run", lambda: "kept", take), Pending("a run", refuse, take)):
        pending.make()
        pending.finish()
    assert handed == [("kept", ""), (None, "--host h: ssh failed: no route …")]
