"""The warmscope app: it routes keys and messages; its parts and its screens do the work.

Each part is one idea and draws nothing itself: ``RunControl`` starts, stops and kills runs
and sweeps; ``Viewer`` keeps the run shown current (the poll timer); ``Summaries`` computes
summaries on workers; ``Opening`` shows what the app was started with; ``Quitting`` leaves with
no child behind; ``Exports`` tells what an export wrote. They share one ``AppState``. The
invariant (Harlequin's): workers compute and post messages; handlers own UI state. Screens and
widgets never reach into the app: what they have to tell it comes as a message (a
``messages.ToApp``), which the app hands to the part with a handler of its name, and what they
need of it is given to them when they are made.

A key that opens a screen goes through the one ``open`` action (``keys``): each screen but the
main one is imported when first opened, and the first frame waits for none of them
(`tests/test_import_hygiene.py`).
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.filter import LineFilter
from textual.screen import Screen

from warmscope.core.base.safe_text import clean_name, clean_names
from warmscope.core.data.settings import RunSettings
from warmscope.tui import glyphs
from warmscope.tui.app_state import AppState
from warmscope.tui.ascii_filter import AsciiFilter, ControlFilter
from warmscope.tui.controller import RunController, SessionFactory, start_session
from warmscope.tui.exporting import Exports
from warmscope.tui.keys import APP_BINDINGS, when_offered
from warmscope.tui.messages import ToApp
from warmscope.tui.opening import Opening
from warmscope.tui.program_watch import ProgramWatch
from warmscope.tui.quitting import Quitting
from warmscope.tui.repaint import DEFAULT_REFRESH_HZ
from warmscope.tui.repaint_all import repaint_all
from warmscope.tui.run_control import RunControl
from warmscope.tui.run_start import StartSlot
from warmscope.tui.screens.main_screen import MainScreen, main_of
from warmscope.tui.signal_wakeup import SignalWakeup
from warmscope.tui.summaries import Summaries
from warmscope.tui.viewer import Viewer

if TYPE_CHECKING:
    from warmscope.core.data.run import RunData
    from warmscope.core.run.exec_session import ExecSession
    from warmscope.tui.run_view import RunEntry


class WarmscopeApp(App[int]):
    """Shows one run at a time (live or recorded); keeps every run of the session."""

    CSS_PATH = "warmscope.tcss"
    TITLE = "warmscope"
    BINDINGS: ClassVar[list[BindingType]] = APP_BINDINGS

    def __init__(
        self,
        settings: RunSettings | None = None,
        records: Iterable[Path | RunData] = (),
        record_path: Path | None = None,
        start: SessionFactory = start_session,
        overwrite: bool = False,
        refresh_hz: float = DEFAULT_REFRESH_HZ,
        sweeps: Iterable[dict[str, Any]] = (),
        ascii: bool = False,
        program: ExecSession | None = None,
    ) -> None:
        """``start``: how runs are spawned (a fake session factory in tests that need no
        torch). ``overwrite``: the first run replaces an existing ``record_path``; later runs
        write ``PATH-2``, ``PATH-3``… ``refresh_hz``: the most a pane repaints in a second
        (``--refresh``). ``sweeps``: sweep documents opened, their runs in ``records``.
        ``ascii``: draw with ASCII only (``--ascii``, or a ``TERM`` without the rest).
        ``program``: ``warmscope exec``'s session, its processes shown as they join.
        Under ``NO_COLOR`` the screen has no colours at all: Textual drops every colour of a
        native-ANSI app (the others it turns to greys), so the app says it is one."""
        self.ascii = ascii
        glyphs.set_ascii(ascii)
        super().__init__(ansi_color=True if "NO_COLOR" in os.environ else None)
        self._ascii_filter = AsciiFilter()
        self._control_filter = ControlFilter()
        self.refresh_hz = refresh_hz
        controller = RunController(record_path, start, overwrite=overwrite)
        self.state = AppState(
            controller, StartSlot(self), next_settings=settings, sweeps=list(sweeps)
        )
        self.viewer = Viewer(self, self.state, Summaries(self, controller))
        self.control = RunControl(self, self.state, self.viewer)
        self.opening = Opening(
            self, self.state, self.viewer, self.control, records=list(records), first_run=settings
        )
        self.quitting = Quitting(self, self.state, self.viewer)
        self.program = (
            None if program is None else ProgramWatch(self, self.state, self.viewer, program)
        )
        self.parts = (self.control, self.viewer, self.viewer.summaries, Exports(self))
        """Where ``ToApp`` messages are handled (``route``)."""
        self._wakeup: SignalWakeup | None = None
        self.ready = False
        """The main screen's panes are mounted and the records opened are being shown."""

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's (no colour under ``NO_COLOR``), then no control characters, then ASCII for
        ``--ascii``: whatever drew a character (the app, the chart, Textual's own widgets: a
        toast, a table cell), the terminal gets text only, and ASCII where asked."""
        filters = [*super().get_line_filters(), self._control_filter]
        return [*filters, self._ascii_filter] if self.ascii else filters

    def notify(self, message: str, *, title: str = "", **options: Any) -> None:
        """A toast, its lines made safe as names are: they name files and targets."""
        super().notify(clean_names(message), title=clean_name(title), **options)

    def get_default_screen(self) -> Screen:
        return MainScreen(self.refresh_hz, self.opening.first_run)

    @property
    def main(self) -> MainScreen:
        return main_of(self)

    @property
    def runs(self) -> list[RunEntry]:
        """Every run of the session, live ones and opened records."""
        return self.state.runs

    def on_mount(self) -> None:
        self.viewer.start()
        self.quitting.watch()
        # Back from Ctrl+Z or an outside SIGTSTP: the terminal lost the screen, draw it all.
        self.app_resume_signal.subscribe(self, lambda _app: self.action_repaint())
        # ... and the SIGCONT that brings it back wakes the loop, so Textual's resume runs.
        self._wakeup = SignalWakeup(asyncio.get_running_loop())

    def on_unmount(self) -> None:
        if self._wakeup is not None:
            self._wakeup.close()
        self.quitting.close()

    def on_main_screen_ready(self) -> None:
        self.ready = True
        self.opening.open()
        if self.program is not None:
            self.program.start()

    @on(ToApp)
    def route(self, message: ToApp) -> None:
        """Hand a screen's or a worker's message to the part with a handler of its name."""
        for part in self.parts:
            handler = getattr(part, message.handler_name, None)
            if handler is not None:
                handler(message)
                return

    # -- keys -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # None: the footer leaves out a key that would do nothing now
        return True if self.state.offers(when_offered(action, parameters)) else None

    def action_open(self, module: str) -> None:
        """Open the screen of ``tui/screens/MODULE.py`` (``keys.opens``), loading its module
        now if it is the first time: the module's ``open_screen`` opens it."""
        screens = importlib.import_module(f"warmscope.tui.screens.{module}")
        screens.open_screen(self, self.state)

    def action_start_run(self) -> None:
        self.control.start_next()

    def action_stop_run(self) -> None:
        self.control.stop()

    def action_kill_run(self) -> None:
        self.control.kill()

    def action_preset(self, name: str) -> None:
        self.control.preset(name)

    def action_repaint(self) -> None:
        """Draw every cell of the screen again, not only what changed (Ctrl+L, a resume)."""
        repaint_all(self)

    async def action_quit(self) -> None:
        """``q``: close a sub-screen (a running sweep's stops the sweep; the loading screen
        leaves warmscope); on the main screen quit (``Quitting``)."""
        if self.screen is not self.main:
            getattr(self.screen, "close_or_stop", self.screen.dismiss)()
            return
        await self.quitting.quit()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from warmscope.tui.palette import run_commands  # the palette: when it is opened

        yield from super().get_system_commands(screen)
        yield from run_commands(self, screen, self.main, sweeps=bool(self.state.sweeps))

    def stop_all(self) -> None:
        """Last resort on the way out: no child outlives the app."""
        self.quitting.stop_all()


build_app = WarmscopeApp
"""One factory for the command line, the tests and the benchmarks."""
