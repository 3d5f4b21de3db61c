"""``RunControl``: runs and sweeps started, stopped and killed as the user asks.

A run starts from a handler. A local one takes milliseconds (the child is spawned, not waited
for); over ``--host`` it is built on a thread worker (``run_start``), the UI live meanwhile and
the header saying what it waits for. Either way the child is forked by the launcher thread
(``core/run/launcher.py``), which lives as long as the process, so the child's parent-death
signal (tied to the thread that forked it) fires only when warmscope itself ends. Settings read
from a file that choose what runs (an interpreter, the child's environment, pickle trust) are
shown to the user first (``trust_screen``). A sweep is built on a worker, run on another, and
its processes become runs of the session as its screen reports them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.app import App

from warmscope.core.base.safe_text import clean_name
from warmscope.core.child.outcome import WarmscopeError
from warmscope.tui.messages import NextRun
from warmscope.tui.run_start import Pending, StartMade, kill_and_wait
from warmscope.tui.run_view import SweepTag
from warmscope.tui.screens.main_screen import main_of
from warmscope.tui.widgets.run.run_header import RunHeader

if TYPE_CHECKING:
    from warmscope.core.data.run import LiveRun
    from warmscope.core.data.settings import RunSettings
    from warmscope.core.data.sweep_plan import SweepPlan
    from warmscope.tui.app_state import AppState
    from warmscope.tui.run_view import RunEntry
    from warmscope.tui.screens.sweep_screen import SweepScreen
    from warmscope.tui.sweep_runner import SweepRunner
    from warmscope.tui.viewer import Viewer

GOING = "a run is going: s stops it, k kills it"


class RunControl:
    """Starts what the user asks for, one start at a time; stops and kills the live run."""

    def __init__(self, app: App[Any], state: AppState, viewer: Viewer) -> None:
        self.app = app
        self.state = state
        self.viewer = viewer

    # -- one run ----------------------------------------------------------------------------

    def start_next(self) -> None:
        """``r``: a run of the next settings."""
        settings = self.state.next_settings
        if settings is None:
            self.app.notify("nothing to run: press e to choose a target", severity="warning")
            return
        self.run_next(settings)

    def run_next(self, settings: RunSettings) -> None:
        """Start a run the user asked for, once settings from a file that choose what runs
        have been shown to them."""
        if self.state.live is not None or self.state.starting is not None:
            self.start_run(settings)  # which says why it starts nothing
            return
        self._trusted_then(settings, self.start_run)

    def start_run(self, settings: RunSettings) -> None:
        """Start a run of ``settings`` now; a run that cannot start is one line."""
        state, app = self.state, self.app
        if state.live is not None:
            app.notify(GOING, severity="warning")
            return
        if state.starts.refused():
            return
        controller = state.controller
        try:
            if not settings.host:
                self.viewer.show(controller.start(settings))
                return
            request = controller.request(settings)
        except (WarmscopeError, OSError) as exc:
            self._cannot_run(str(exc))
            return
        header = main_of(app).query_one(RunHeader)

        def done(session: LiveRun | None, error: str) -> None:
            if session is not None:
                self.viewer.show(controller.started(request, session))
                return
            if state.viewed is not None:
                header.show_entry(state.viewed, state.next_note())
            else:
                header.clear()
            self._cannot_run(error)

        doing = f"connecting to {clean_name(settings.host)}"
        header.show_starting(len(state.runs) + 1, settings.target, settings.host, doing)
        build = partial(controller.build, request)
        state.starts.begin(Pending("a run", build, done, end=kill_and_wait))

    def _cannot_run(self, error: str) -> None:
        self.app.notify(error, title="Cannot run", severity="error", timeout=8, markup=False)

    def on_start_made(self, message: StartMade) -> None:
        self.state.starts.made(message)

    def _trusted_then(self, settings: RunSettings, start: Callable[[RunSettings], None]) -> None:
        """``start`` the next run's ``settings`` once those read from a file that choose what
        runs have been shown to the user (``trust_screen``); confirmed or dropped, they are the
        user's own from then on."""
        from warmscope.tui.screens.trust_screen import trusted_then  # a screen not yet opened

        state = self.state

        def confirmed(chosen: RunSettings) -> None:
            state.next_settings, state.next_source = chosen, None

        trusted_then(self.app, settings, state.next_source, start, confirmed)

    # -- the live run -----------------------------------------------------------------------

    def _live_session(self) -> tuple[RunEntry, LiveRun] | None:
        entry = self.state.live
        if entry is None or entry.session is None:
            self.app.notify("no run is going", timeout=2)
            return None
        return entry, entry.session

    def stop(self) -> None:
        """``s``: SIGINT, then more if the run does not end (``LiveRun.stop``)."""
        if live := self._live_session():
            live[1].stop()
            self.app.notify(f"stopping run #{live[0].number}…", timeout=2)

    def kill(self) -> None:
        """``K``: SIGKILL now, after a yes (``k`` moves up in lists, as in vim and htop)."""
        if not (live := self._live_session()):
            return
        entry, session = live
        from warmscope.tui.screens.confirm_screen import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes and not session.is_finished():
                session.kill()
                self.app.notify(f"killed run #{entry.number}", severity="warning", timeout=2)

        self.app.push_screen(
            ConfirmScreen(f"Kill run #{entry.number} now? SIGKILL: the record ends here."),
            answered,
        )

    # -- the next run -----------------------------------------------------------------------

    def on_next_run(self, message: NextRun) -> None:
        self.state.next_settings = message.settings
        self.viewer.note_changed()
        if message.run_now and message.plan is not None and message.plan.many:
            self.start_sweep(message.settings, message.plan)  # N processes, or several settings
        elif message.run_now:
            self.run_next(message.settings)
        else:
            self.app.notify(message.told, timeout=3, markup=False)

    def preset(self, name: str) -> None:
        """A preset (from the palette) over the next run's settings."""
        base = self.state.next_settings
        if base is None:
            return
        settings = base.copy()
        settings.apply_preset(name)
        self.on_next_run(NextRun(settings, f"next run: preset {name} (r runs it)"))

    # -- sweeps -----------------------------------------------------------------------------

    def start_sweep(self, settings: RunSettings, plan: SweepPlan) -> None:
        """Run ``plan`` over ``settings`` now (the settings screen's Ctrl+R with more than one
        process, or presets and knob values to compare), after the same trust check as one
        run."""
        state = self.state
        if state.live is not None or state.controller.sweeping is not None:
            self.app.notify(GOING, severity="warning")
            return
        if state.starts.refused():
            return
        self._trusted_then(settings, partial(self._begin_sweep, plan=plan))

    def _begin_sweep(self, settings: RunSettings, plan: SweepPlan) -> None:
        """Build the sweep on a worker (its cells checked: over ``--host`` a file target is
        asked there), then run it on another and show its screen, which fills in live."""
        # The sweep's machinery and its screen: loaded when a sweep is asked for.
        from warmscope.tui.screens.sweep_screen import SweepScreen
        from warmscope.tui.sweep_runner import make_runner

        app = self.app

        def done(runner: SweepRunner | None, error: str) -> None:
            if runner is None:
                app.notify(error, title="No sweep", severity="error", timeout=8, markup=False)
                return
            self.state.controller.sweeping = runner
            app.run_worker(
                runner.run, name="sweep", thread=True, group="sweep", exit_on_error=False
            )
            app.push_screen(SweepScreen(runner=runner))

        self.state.starts.begin(Pending("a sweep", partial(make_runner, settings, plan), done))

    def on_sweep_screen_process_started(self, message: SweepScreen.ProcessStarted) -> None:
        """A process of the sweep, now a run of the app, followed live by the main screen
        (under the sweep screen), tagged with its sweep and cell."""
        runner, started = message.runner, message.started
        tag = SweepTag(
            str(runner.folder), started.cell, started.label, started.repeat, runner.plan.repeat
        )
        self.viewer.show(self.state.controller.adopt(started.session, tag))

    def on_sweep_screen_ended(self, message: SweepScreen.Ended) -> None:
        """The sweep ended (done, stopped or failed): its document joins the app's sweeps
        (``w`` shows it again)."""
        runner, doc = message.runner, message.doc
        controller = self.state.controller
        if controller.sweeping is runner:
            controller.sweeping = None
        if doc.get("finished"):
            self.state.sweeps.append(doc)
        what = "stopped" if doc.get("stopped") else "done"
        if runner.error:
            self.app.notify(
                runner.error, title="Sweep ended", severity="error", timeout=8, markup=False
            )
        else:
            self.app.notify(
                f"sweep {what}: {doc.get('finished')} processes; w shows it again", timeout=4
            )
