"""Driving the app in tests: run a scenario under Pilot, wait for workers or for a condition;
share one app between the tests of a module; start warmscope in a real terminal and read what
that terminal receives."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import html
import inspect
import os
import pickle
import pty
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from textual.message import Message
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import TabbedContent

from tests.conftest import running
from warmscope.core.data.settings import RunSettings
from warmscope.tui import glyphs
from warmscope.tui.app import WarmscopeApp

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from warmscope.tui.screens.settings_screen import SettingsScreen

Scenario = Callable[[Pilot], Awaitable[None]]


async def settle(pilot: Pilot) -> None:
    """Wait for the main screen's panes (mounted after the first frame), then the summary
    workers and the refreshes they cause."""
    if hasattr(pilot.app, "ready"):
        await wait_for(pilot, lambda: pilot.app.ready, timeout=30)  # type: ignore[attr-defined]
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def wait_for(pilot: Pilot, condition: Callable[[], object], timeout: float = 60.0) -> None:
    """Let the app run until ``condition()`` holds (a live run's progress, say).

    The app runs on by itself meanwhile (its timers, workers and repaints): the wait only
    sleeps between checks. ``pilot.pause`` would also walk every widget of the screen and
    redraw it, 20 times a second, for as long as a live run takes."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await asyncio.sleep(0.05)


def run(
    app: WarmscopeApp,
    scenario: Scenario,
    size: tuple[int, int] = (100, 30),
    *,
    settled: bool = True,
    notifications: bool = False,
) -> None:
    """Run ``scenario`` against ``app`` at ``size``; records are summarized first if ``settled``.
    ``notifications``: draw toasts (``run_test`` leaves them out, and a notification's message
    is rendered, as markup unless told not to, only when drawn)."""

    async def main() -> None:
        async with app.run_test(size=size, notifications=notifications) as pilot:
            if settled:
                await settle(pilot)
            await scenario(pilot)
            if notifications and app.is_running:  # a pause after the app quit never ends
                await pilot.pause(0.1)  # the last toasts drawn

    asyncio.run(main())


def screen_text(app: WarmscopeApp) -> str:
    """The visible screen as text (from the SVG screenshot: one string per styled run)."""
    svg = app.export_screenshot()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    return " ".join(html.unescape(t) for t in texts).replace("\xa0", " ")


@dataclass
class Terminal:
    """warmscope on a real pseudo-terminal: its process, and the terminal's master end, where a
    test reads what it draws and types its keys."""

    proc: subprocess.Popen[bytes]
    master: int
    open: bool = True

    def hang_up(self) -> None:
        """Close the terminal, as when an SSH session drops."""
        if self.open:
            self.open = False
            os.close(self.master)


@contextlib.contextmanager
def in_terminal(
    *args: str,
    size: tuple[int, int] = (100, 30),
    env: Mapping[str, str] | None = None,
) -> Iterator[Terminal]:
    """`warmscope ARGS` in a real pseudo-terminal of ``size`` (columns, rows), as a user starts
    it: an xterm (``TERM``; ``NO_COLOR`` dropped), in a session of its own; ``env``: variables
    over that. On the way out it is killed if it still runs, and reaped, and the terminal
    closed."""
    master, slave = pty.openpty()
    columns, rows = size
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    base = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    terminal: Terminal | None = None
    try:
        with running(
            *args,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env={**base, "TERM": "xterm-256color", **(env or {})},
        ) as proc:
            os.close(slave)
            slave = -1
            terminal = Terminal(proc, master)
            yield terminal
    finally:
        if slave >= 0:
            os.close(slave)
        if terminal is None:
            os.close(master)
        else:
            terminal.hang_up()


@contextlib.contextmanager
def tui_iterating(record: Path, *extra: str) -> Iterator[Terminal]:
    """warmscope's TUI in a real pseudo-terminal, as a user starts it, running sample:trivial
    (a gap before each iteration: a hundred a second, not a core's worth), handed over once
    the run iterates, and ended on the way out if the test did not end it."""
    argv = ["sample:trivial", "--duration", "120", "--gap", "0.01", "--record", str(record)]
    with in_terminal(*argv, *extra) as terminal:
        os.set_blocking(terminal.master, False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(BlockingIOError, OSError):
                os.read(terminal.master, 1 << 16)  # keep the terminal drained, as a real one is
            if record.exists() and '"type":"iters"' in record.read_text():
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the TUI's run never started iterating")
        yield terminal


def terminal_chunk(master: int, wait: float) -> bytes | None:
    """What a pseudo-terminal's ``master`` receives within ``wait`` seconds (``b""``: nothing);
    None once the program on it has closed it."""
    ready, _, _ = select.select([master], [], [], wait)
    if not ready:
        return b""
    try:
        return os.read(master, 65536) or None
    except OSError:
        return None


class SharedApp:
    """One app that several tests of a module drive in turn, each with its own scenario.

    Starting an app costs about a CPU-second before a test does anything: tests that read the
    same records, and leave them as they found them, share one (a module-scoped fixture makes
    it, ``close`` ends it). The app runs in one task on a loop of its own, from the first
    scenario to the last (Textual's context is that task's); each ``run`` hands it a scenario
    and raises what the scenario raised, or what the app failed with meanwhile (the tests after
    that one fail at once, saying the app has ended). Before each scenario it is brought home: the
    screens it opened closed, its workers done, its size the test's, the first run viewed in
    the first frame's pane with the first frame's focus, the next run's settings as they were.
    A test that changes anything else of the app puts it back itself.
    """

    def __init__(
        self,
        app: WarmscopeApp,
        size: tuple[int, int] = (100, 30),
        *,
        notifications: bool = False,
        message_hook: Callable[[Message], None] | None = None,
    ) -> None:
        self.app = app
        self.size = size
        self.loop = asyncio.new_event_loop()
        self._inbox: asyncio.Queue[tuple[Scenario, asyncio.Future[None]] | None] | None = None
        self._focus: Widget | None = None
        self._pane = ""
        self._next: tuple[RunSettings | None, str | None] = (None, None)
        ready: asyncio.Future[None] = self.loop.create_future()
        self._task = self.loop.create_task(self._serve(ready, notifications, message_hook))
        self.loop.run_until_complete(
            asyncio.wait([ready, self._task], return_when="FIRST_COMPLETED")
        )
        if not ready.done():  # the app ended before its first frame: say why
            self.close()
            raise AssertionError("the shared app ended as it started")

    async def _serve(
        self,
        ready: asyncio.Future[None],
        notifications: bool,
        message_hook: Callable[[Message], None] | None,
    ) -> None:
        self._inbox = asyncio.Queue()
        app = self.app
        async with app.run_test(
            size=self.size, notifications=notifications, message_hook=message_hook
        ) as pilot:
            await settle(pilot)
            self._focus = app.focused
            self._pane = app.main.query_one("#panes", TabbedContent).active
            kept = app.state.next_settings
            self._next = (None if kept is None else kept.copy(), app.state.next_source)
            ready.set_result(None)
            while (job := await self._inbox.get()) is not None:
                scenario, done = job
                try:
                    await scenario(pilot)
                except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
                    raise
                except BaseException as exc:  # the test's failure, raised in the test
                    done.set_exception(exc)
                else:
                    if app._exception is not None:  # the app failed in this test: say so here
                        done.set_exception(app._exception)
                    else:
                        done.set_result(None)

    async def _home(self, pilot: Pilot, size: tuple[int, int]) -> None:
        app = self.app
        assert app.is_running, "the shared app has ended (a test before this one quit or broke it)"
        glyphs.set_ascii(app.ascii)  # process-wide: the app built last set it for itself
        try:
            await asyncio.wait_for(app.workers.wait_for_complete(), timeout=60)
        except asyncio.TimeoutError:
            message = "the shared app is still busy with what a test left running"
            raise AssertionError(message) from None
        while len(app.screen_stack) > 1:
            await app.pop_screen()
        if (app.size.width, app.size.height) != size:
            await pilot.resize_terminal(*size)
        settings, source = self._next
        app.state.next_settings = None if settings is None else settings.copy()
        app.state.next_source = source
        if app.runs:
            app.viewer.show(app.runs[0])
        app.main.action_pane(self._pane)
        if self._focus is not None and self._focus.is_attached:
            self._focus.focus()
        await pilot.pause()

    def run(self, scenario: Scenario, size: tuple[int, int] | None = None) -> None:
        """Bring the app home at ``size`` (the fixture's unless told), then play ``scenario``."""

        async def homed(pilot: Pilot) -> None:
            await self._home(pilot, size or self.size)
            await scenario(pilot)

        async def submit() -> None:
            assert self._inbox is not None
            done: asyncio.Future[None] = self.loop.create_future()
            await self._inbox.put((homed, done))
            await asyncio.wait([done, self._task], return_when="FIRST_COMPLETED")
            if not done.done():
                self._task.result()  # raises what ended the app
                raise AssertionError("the shared app ended during the test")
            done.result()

        self.loop.run_until_complete(submit())

    def __enter__(self) -> SharedApp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the app (raising what it failed with, if it did) and the loop."""
        try:
            if not self._task.done():
                assert self._inbox is not None
                self._inbox.put_nowait(None)
            self.loop.run_until_complete(self._task)
        finally:
            self.loop.close()


def screenshot(shared: SharedApp, before: Scenario, size: tuple[int, int]) -> str:
    """The SVG of ``shared``'s app at ``size`` after ``before``, taken as
    pytest-textual-snapshot's ``snap_compare`` takes it (``textual._doc.take_svg_screenshot``)."""
    taken: list[str] = []

    async def scenario(pilot: Pilot) -> None:
        app = pilot.app
        await before(pilot)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        taken.append(app.export_screenshot(title=app.title, simplify=True))

    shared.run(scenario, size)
    return taken[0]


def matches_snapshot(snapshot: SnapshotAssertion, request: pytest.FixtureRequest, svg: str) -> bool:
    """``svg`` against the test's snapshot file, as ``snap_compare`` compares (its files, its
    ``--snapshot-update``, its report of the differences on failure), for a screenshot taken
    from a shared app."""
    from pytest_textual_snapshot import (
        PseudoApp,
        PseudoConsole,
        SVGImageExtension,
        node_to_report_path,
    )
    from rich.console import Console

    snapshot = snapshot.use_extension(SVGImageExtension)
    result = snapshot == svg
    index = snapshot.num_executions - 1
    executed = snapshot.executions.get(index)
    exists = executed is not None and executed.final_data is not None
    node = request.node
    console = Console(legacy_windows=False, force_terminal=True)
    path, line, name = node.reportinfo()
    data = (
        result,
        str(snapshot),
        svg,
        PseudoApp(PseudoConsole(console.legacy_windows, console.size)),
        path,
        line,
        name,
        inspect.getdoc(node.function) or "",
        "",
        exists,
    )
    node_to_report_path(node).write_bytes(pickle.dumps(data))
    return result


async def fill(pilot: Pilot, **fields: str) -> SettingsScreen:
    """Open the settings screen and type into its repeat and sweep fields; those not given are
    set as a new form has them (the form keeps what the last sweep had in them)."""
    # the settings screen loads when first opened, as in the app
    from textual.widgets import Input

    from warmscope.tui.screens.settings_screen import SWEEP_FIELDS, SettingsScreen

    await pilot.press("e")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, SettingsScreen))
    screen = pilot.app.screen
    assert isinstance(screen, SettingsScreen)
    new = {name: "1" if name == "processes" else "" for name in SWEEP_FIELDS}
    for name, text in (new | fields).items():
        screen.query_one(f"#field-{name}", Input).value = text
    await pilot.pause()
    return screen
