"""``Quitting``: leaving warmscope with no child left behind.

``q`` on the main screen quits, after a yes while a run is going: the run is stopped, killed if
it does not end in time, and ``q`` again kills it now. A hang-up (an SSH drop) or SIGTERM ends
the runs fast, from a signal handler, with a watchdog thread as the last resort
(``hangup_watchdog``). Whatever ends the app, ``stop_all`` kills what is still running.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from textual.app import App

from warmscope.core.run.hangup import EndSignals
from warmscope.tui.hangup_watchdog import HangupWatchdog
from warmscope.tui.run_start import kill_and_wait

if TYPE_CHECKING:
    from warmscope.core.data.run import LiveRun
    from warmscope.tui.app_state import AppState
    from warmscope.tui.viewer import Viewer

HANGUP_GRACE_S = 0.5  # after SIGHUP nobody watches: stop quickly
HANGUP_STOP_WAIT_S = 1.0  # then kill; the whole way out stays well under 2 s
HANGUP_KILL_WAIT_S = 0.5
HANGUP_WATCHDOG_S = 2.5  # the last resort: kill the runs and leave without Textual's shutdown
STOP_WAIT_S = 3.0
KILL_WAIT_S = 2.0


class Quitting:
    """The app's ways out: ``quit`` (``q``), the end signals, and ``stop_all`` last."""

    def __init__(self, app: App[Any], state: AppState, viewer: Viewer) -> None:
        self.app = app
        self.state = state
        self.viewer = viewer
        self._quitting = False
        self._ending = False  # a hang-up or SIGTERM is being handled
        self._signals: EndSignals | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watchdog: HangupWatchdog | None = None

    def watch(self) -> None:
        """Set the end signals' handler and start the watchdog (the app is mounted)."""
        self._loop = asyncio.get_running_loop()
        self._watchdog = HangupWatchdog(
            self._unfinished_sessions, grace=HANGUP_GRACE_S, deadline=HANGUP_WATCHDOG_S
        )
        self._watchdog.start()
        self._signals = EndSignals(self._on_hangup)  # off the main thread (tests): none set

    def close(self) -> None:
        """The app is unmounted: the signals are the process's again; the watchdog ends."""
        if self._signals is not None:
            self._signals.restore()
        if self._watchdog is not None:
            self._watchdog.close()

    def _live(self) -> list[LiveRun]:
        return [e.session for e in self.state.runs if e.live and e.session is not None]

    def _unfinished_sessions(self) -> list[LiveRun]:
        """Any thread may ask: a list copy, and ``is_finished`` (an event) of each session."""
        return [
            e.session
            for e in list(self.state.runs)
            if e.session is not None and not e.session.is_finished()
        ]

    def _on_hangup(self, sig: int) -> None:
        """The terminal went away (an SSH drop) or we were told to end: end runs properly, fast.

        Without this the process would die at once; its child would follow (parent-death
        signal) but the record would lack its last lines and its end. A signal handler (not
        the event loop's, ``core/run/hangup.py``, which has pointed the descriptors at
        /dev/null on a hang-up): it runs even while the main thread is stuck writing to a
        terminal that is gone, so it only does what is safe there. The watchdog stops the runs;
        the loop, if it still turns, waits for them and exits properly.
        """
        if self._ending:
            return
        self._ending = True
        if self._watchdog is not None:
            self._watchdog.trip(128 + sig)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._end_runs)

    def _end_runs(self) -> None:
        self.viewer.stop()  # nobody to draw for: no more writes for the terminal to take
        self.state.starts.abandon()
        live = self._live()
        self.app.run_worker(
            self._end_and_exit(live, HANGUP_STOP_WAIT_S, HANGUP_KILL_WAIT_S),
            exclusive=True,
            group="hangup",
        )

    async def quit(self) -> None:
        """``q`` on the main screen: quit, after a yes while a run is going (the child is
        stopped first, killed if it does not end; ``q`` again kills it now)."""
        live = [e for e in self.state.runs if e.live and e.session is not None]
        if live and not self._quitting:
            names = ", ".join(f"#{e.number}" for e in live)
            from warmscope.tui.screens.confirm_screen import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self.app.run_worker(self._quit(), group="quit")

            self.app.push_screen(
                ConfirmScreen(f"Run {names} is going. Stop it and quit?"), answered
            )
            return
        await self._quit()

    async def _quit(self) -> None:
        self.state.starts.abandon()  # a run still starting is ended once it exists
        live = self._live()
        if live and not self._quitting:
            self._quitting = True
            self.app.notify("stopping the run before quitting… (q again kills it)", timeout=3)
            for session in live:
                session.stop()
            await self._end_and_exit(live, STOP_WAIT_S, KILL_WAIT_S)
        else:  # nothing live, or q again while stopping: kill now
            await self._end_and_exit(live, 0.0, KILL_WAIT_S)

    async def _end_and_exit(
        self, sessions: list[LiveRun], stop_wait: float, kill_wait: float
    ) -> None:
        """Give stopping runs ``stop_wait`` seconds, kill what is left, then exit."""
        await self._wait_finished(sessions, stop_wait)
        for session in sessions:
            if not session.is_finished():
                session.kill()
        await self._wait_finished(sessions, kill_wait)
        self.app.exit(0)

    async def _wait_finished(self, sessions: list[LiveRun], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(not s.is_finished() for s in sessions):
            await asyncio.sleep(0.05)

    def stop_all(self) -> None:
        """Last resort on the way out: no child outlives the app."""
        self.state.starts.abandon()
        for e in self.state.runs:
            session = e.session
            if session is not None and not session.is_finished():
                kill_and_wait(session, KILL_WAIT_S)
