"""The warmscope app: the poll timer, the workers, and the actions behind every key.

The runs and their life cycle live in a ``RunController`` (no Textual there). Invariant:
workers compute and post messages (``messages``); handlers own UI state. Screens and widgets
never reach into the app: what they have to tell it comes as a message too (a sweep's new
process, a comparison to export), and what they need of it is given to them when they are made.
The live run is polled on one timer (``POLL_S``) and each batch is applied to the widgets at
once. Runs, sweeps and warm-ups are started from handlers (over ``--host`` on a thread worker:
the start waits for the host, ``run_start``); the child is forked by the launcher thread
(``core/run/launcher.py``), which lives as long as the process, so the child's parent-death
signal (tied to the thread that forked it) fires only when warmscope itself ends. Summaries
(sorting every latency), long records and exports are computed in thread workers and come back
as messages.

Each screen but the main one is imported in the action that opens it: it loads when first
opened, and the first frame waits for none of them (`tests/test_import_hygiene.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.filter import LineFilter
from textual.screen import Screen
from textual.timer import Timer

from warmscope.core.base.safe_text import clean_name, clean_names
from warmscope.core.child import outcome
from warmscope.core.child.outcome import WarmscopeError
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.hangup import EndSignals
from warmscope.sample_models import DEFAULT_SAMPLE
from warmscope.tui import fmt, glyphs, record_reading
from warmscope.tui.ascii_filter import AsciiFilter, ControlFilter
from warmscope.tui.controller import RunController, SessionFactory, start_session
from warmscope.tui.hangup_watchdog import HangupWatchdog
from warmscope.tui.messages import (
    Exported,
    RecordsLoading,
    RecordsRead,
    SummaryFailed,
    SummaryReady,
)
from warmscope.tui.repaint import DEFAULT_REFRESH_HZ
from warmscope.tui.repaint_all import repaint_all
from warmscope.tui.run_start import Pending, StartMade, StartSlot, kill_and_wait
from warmscope.tui.run_view import RunEntry, SweepTag, error_lines
from warmscope.tui.screens.main_screen import PANES_AFTER_S, MainScreen
from warmscope.tui.signal_wakeup import SignalWakeup
from warmscope.tui.widgets.run.run_header import RunHeader

if TYPE_CHECKING:
    from warmscope.core.data.record import RecordError
    from warmscope.core.data.run import LiveRun, RunData
    from warmscope.core.data.sweep_plan import SweepPlan
    from warmscope.tui.controller import SummaryJob
    from warmscope.tui.export_jobs import ExportJob
    from warmscope.tui.screens.compare_screen import CompareScreen
    from warmscope.tui.screens.sweep_screen import SweepScreen
    from warmscope.tui.sweep_runner import SweepRunner

# Screens other than the main one, and what only they use, are imported where they open: the
# first frame waits for nothing it does not draw.

POLL_S = 1 / 10  # ten batches a second: live to the eye, cheap for the CPU
COMPARE_FOLLOW_S = 1.0  # a compare screen over a live run redraws this often
HANGUP_GRACE_S = 0.5  # after SIGHUP nobody watches: stop quickly
HANGUP_STOP_WAIT_S = 1.0  # then kill; the whole way out stays well under 2 s
HANGUP_KILL_WAIT_S = 0.5
HANGUP_WATCHDOG_S = 2.5  # the last resort: kill the runs and leave without Textual's shutdown
STOP_WAIT_S = 3.0
KILL_WAIT_S = 2.0


class WarmscopeApp(App[int]):
    """Shows one run at a time (live or recorded); keeps every run of the session."""

    CSS_PATH = "warmscope.tcss"
    TITLE = "warmscope"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="quit", tooltip="Quit (a running child is stopped first)"),
        # Ctrl+C quits like q (Textual's default only says "press ctrl+q").
        Binding("ctrl+c", "quit", "Quit", id="quit-ctrl-c", show=False, priority=True),
        Binding("question_mark", "help", "Help", id="help", tooltip="Every key"),
        # Ctrl+Z is job control as in any program (raw mode reads it as a key); Ctrl+L redraws.
        Binding("ctrl+z", "suspend_process", "Suspend", id="suspend", show=False, priority=True),
        Binding("ctrl+l", "repaint", "Redraw", id="repaint", show=False, priority=True),
        Binding("w", "sweep", "Sweep", id="sweep", show=False, tooltip="the last sweep's screen"),
    ]

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
    ) -> None:
        """``start``: how runs are spawned (a fake session factory in tests that need no
        torch). ``overwrite``: the first run replaces an existing ``record_path``; later runs
        write ``PATH-2``, ``PATH-3``… ``refresh_hz``: the most a pane repaints in a second
        (``--refresh``). ``sweeps``: sweep documents opened, their runs in ``records``.
        ``ascii``: draw with ASCII only (``--ascii``, or a ``TERM`` without the rest).
        Under ``NO_COLOR`` the screen has no colours at all: Textual drops every colour of a
        native-ANSI app (the others it turns to greys), so the app says it is one."""
        self.ascii = ascii
        glyphs.set_ascii(ascii)
        super().__init__(ansi_color=True if "NO_COLOR" in os.environ else None)
        self._ascii_filter = AsciiFilter()
        self._control_filter = ControlFilter()
        self.refresh_hz = refresh_hz
        self.sweeps = list(sweeps)
        """Sweep documents opened (``warmscope open sweep.json``): their runs are in ``records``."""
        self.initial_settings = settings
        self.initial_records = list(records)
        self.controller = RunController(record_path, start, overwrite=overwrite)
        self.viewed: RunEntry | None = None
        self.next_settings: RunSettings | None = settings
        self.next_source: str | None = None
        """The file ``next_settings`` came from (a record's name), or ``None`` when they are the
        user's: from a file, their ``untrusted()`` parts run only once the user confirms them."""
        self.starts = StartSlot(self)
        """One start at a time: a run, sweep or warm-up being started on a worker thread."""
        self._timer: Timer | None = None
        self._quitting = False
        self._ending = False  # a hang-up or SIGTERM is being handled
        self._signals: EndSignals | None = None
        self._wakeup: SignalWakeup | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watchdog: HangupWatchdog | None = None
        self._binding_state: tuple[bool, bool, bool] | None = None
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
        return MainScreen(self.refresh_hz, self.initial_settings)

    @property
    def runs(self) -> list[RunEntry]:
        return self.controller.runs

    @property
    def starting(self) -> Pending[Any] | None:
        """The start in progress on a worker thread, if any (``run_start``)."""
        return self.starts.pending

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    # -- start-up -----------------------------------------------------------------------

    def on_mount(self) -> None:
        self._timer = self.set_interval(POLL_S, self._tick, pause=True)
        self._loop = asyncio.get_running_loop()
        self._watchdog = HangupWatchdog(
            self._unfinished_sessions, grace=HANGUP_GRACE_S, deadline=HANGUP_WATCHDOG_S
        )
        self._watchdog.start()
        # Back from Ctrl+Z or an outside SIGTSTP: the terminal lost the screen, draw it all.
        self.app_resume_signal.subscribe(self, lambda _app: self.action_repaint())
        # ... and the SIGCONT that brings it back wakes the loop, so Textual's resume runs.
        self._wakeup = SignalWakeup(self._loop)
        self._signals = EndSignals(self._on_hangup)  # off the main thread (tests): none set

    def on_unmount(self) -> None:
        if self._wakeup is not None:
            self._wakeup.close()
        if self._signals is not None:
            self._signals.restore()
        if self._watchdog is not None:
            self._watchdog.close()

    def _unfinished_sessions(self) -> list[LiveRun]:
        """Any thread may ask: a list copy, and ``is_finished`` (an event) of each session."""
        return [
            e.session
            for e in list(self.runs)
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
        if self._timer is not None:
            self._timer.pause()  # nobody to draw for: no more writes for the terminal to take
        self.starts.abandon()
        live = [e.session for e in self.runs if e.live and e.session is not None]
        self.run_worker(self._exit_after(live), exclusive=True, group="hangup")

    async def _exit_after(self, sessions: list[LiveRun]) -> None:
        await self._end_and_exit(sessions, HANGUP_STOP_WAIT_S, HANGUP_KILL_WAIT_S)

    async def _end_and_exit(
        self, sessions: list[LiveRun], stop_wait: float, kill_wait: float
    ) -> None:
        """Give stopping runs ``stop_wait`` seconds, kill what is left, then exit."""
        await self._wait_finished(sessions, stop_wait)
        for session in sessions:
            if not session.is_finished():
                session.kill()
        await self._wait_finished(sessions, kill_wait)
        self.exit(0)

    def on_main_screen_ready(self) -> None:
        self.ready = True
        items = self.initial_records
        if items and record_reading.any_long(items):
            from warmscope.tui.screens.loading_screen import LoadingScreen

            # A long record: the first frame now, the reading in a thread, its progress shown.
            self.push_screen(LoadingScreen(id="loading"))
            read = partial(record_reading.read_in_worker, items, self.post_message)
            self.run_worker(read, name="load", thread=True, group="load", exit_on_error=False)
            return
        self._records_read(record_reading.read_all(items))

    def on_records_loading(self, message: RecordsLoading) -> None:
        from warmscope.tui.screens.loading_screen import LoadingScreen  # pushed: already loaded

        if isinstance(self.screen, LoadingScreen):
            self.screen.show(message.what, message.fraction)

    def on_records_read(self, message: RecordsRead) -> None:
        self._records_read(message.read)

    def _records_read(self, read: list[RunData | RecordError]) -> None:
        if len(self.screen_stack) > 1 and self.screen.id == "loading":
            self.pop_screen()
        for data in read:
            if isinstance(data, Exception):  # a RecordError: what is wrong with the file
                self.notify(str(data), title="Not opened", severity="error", markup=False)
                continue
            entry = self.controller.open_record(data)
            self._want_summary(entry, force=True)
        if self.runs:
            self.view_entry(self.runs[0])
            if self.next_settings is None:
                with contextlib.suppress(Exception):
                    self.next_settings = self.runs[0].data.settings.copy()
                    self.next_source = self.runs[0].record_name or "a record"
        if self.sweeps:
            self.controller.tag_sweeps(self.sweeps)
            self.action_sweep()
        if self.live is not None and self._timer is not None:
            self._timer.resume()  # a record a live run is writing: followed as it grows
        if self.initial_settings is not None:
            # A moment after the first frame, as the panes are: Textual writes frames from a
            # thread, and starting the run (its plan, its record, the child) at once would hold
            # the interpreter while the first frame waits to be written.
            settings = self.initial_settings
            self.call_after_refresh(self.set_timer, PANES_AFTER_S, lambda: self.start_run(settings))

    # -- runs -----------------------------------------------------------------------------

    @property
    def live(self) -> RunEntry | None:
        return self.controller.live

    def start_run(self, settings: RunSettings) -> None:
        """Start a run of ``settings`` (from a handler); a run that cannot start is one line.
        Over ``--host`` it is built on a worker (``run_start``), the UI live meanwhile and the
        header saying what it waits for, and recorded once it exists; a local start takes
        milliseconds (the child is spawned, not waited for) and is done here at once."""
        if self.live is not None:
            self.notify("a run is going: s stops it, k kills it", severity="warning")
            return
        if self.starts.refused():
            return
        controller = self.controller
        try:
            if not settings.host:
                self.view_entry(controller.start(settings))
                return
            request = controller.request(settings)
        except (WarmscopeError, OSError) as exc:
            self._cannot_run(str(exc))
            return
        header = self.main.query_one(RunHeader)

        def done(session: LiveRun | None, error: str) -> None:
            if session is not None:
                self.view_entry(controller.started(request, session))
                return
            if self.viewed is not None:
                header.show_entry(self.viewed, self.next_note())
            else:
                header.clear()
            self._cannot_run(error)

        doing = f"connecting to {clean_name(settings.host)}"
        header.show_starting(len(self.runs) + 1, settings.target, settings.host, doing)
        build = partial(controller.build, request)
        self.starts.begin(Pending("a run", build, done, end=kill_and_wait))

    def _cannot_run(self, error: str) -> None:
        self.notify(error, title="Cannot run", severity="error", timeout=8, markup=False)

    def on_start_made(self, message: StartMade) -> None:
        self.starts.made(message)

    def run_next(self, settings: RunSettings) -> None:
        """Start a run the user asked for; settings from a file that choose what runs (an
        interpreter, the child's environment, pickle trust) are shown to the user first."""
        if self.live is not None or self.starting is not None:
            self.start_run(settings)  # which says why it starts nothing
            return
        self._trusted_then(settings, self.start_run)

    def _trusted_then(self, settings: RunSettings, start: Callable[[RunSettings], None]) -> None:
        """``start`` the next run's ``settings`` once those read from a file that choose what
        runs have been shown to the user (``trust_screen``); confirmed or dropped, they are the
        user's own from then on."""
        from warmscope.tui.screens.trust_screen import trusted_then  # a screen not yet opened

        def confirmed(chosen: RunSettings) -> None:
            self.next_settings, self.next_source = chosen, None

        trusted_then(self, settings, self.next_source, start, confirmed)

    def start_sweep(self, settings: RunSettings, plan: SweepPlan) -> None:
        """Run ``plan`` over ``settings`` now (the settings screen's Ctrl+R with more than one
        process, or presets and knob values to compare); settings from a file that choose what
        runs are shown to the user first, as for one run."""
        if self.live is not None or self.controller.sweeping is not None:
            self.notify("a run is going: s stops it, k kills it", severity="warning")
            return
        if self.starts.refused():
            return
        self._trusted_then(settings, partial(self._begin_sweep, plan=plan))

    def _begin_sweep(self, settings: RunSettings, plan: SweepPlan) -> None:
        """Build the sweep on a worker (its cells checked: over ``--host`` a file target is
        asked there), then run it on another and show its screen, which fills in live."""
        # The sweep's machinery and its screen: loaded when a sweep is asked for.
        from warmscope.tui.screens.sweep_screen import SweepScreen
        from warmscope.tui.sweep_runner import make_runner

        def done(runner: SweepRunner | None, error: str) -> None:
            if runner is None:
                self.notify(error, title="No sweep", severity="error", timeout=8, markup=False)
                return
            self.controller.sweeping = runner
            self.run_worker(
                runner.run, name="sweep", thread=True, group="sweep", exit_on_error=False
            )
            self.push_screen(SweepScreen(runner=runner))

        self.starts.begin(Pending("a sweep", partial(make_runner, settings, plan), done))

    def on_sweep_screen_process_started(self, message: SweepScreen.ProcessStarted) -> None:
        """A process of the sweep, now a run of the app, followed live by the main screen
        (under the sweep screen), tagged with its sweep and cell."""
        runner, started = message.runner, message.started
        tag = SweepTag(
            str(runner.folder), started.cell, started.label, started.repeat, runner.plan.repeat
        )
        self.view_entry(self.controller.adopt(started.session, tag))

    def on_sweep_screen_ended(self, message: SweepScreen.Ended) -> None:
        """The sweep ended (done, stopped or failed): its document joins the app's sweeps
        (``w`` shows it again)."""
        runner, doc = message.runner, message.doc
        if self.controller.sweeping is runner:
            self.controller.sweeping = None
        if doc.get("finished"):
            self.sweeps.append(doc)
        what = "stopped" if doc.get("stopped") else "done"
        if runner.error:
            self.notify(
                runner.error, title="Sweep ended", severity="error", timeout=8, markup=False
            )
        else:
            self.notify(
                f"sweep {what}: {doc.get('finished')} processes; w shows it again", timeout=4
            )

    def view_entry(self, entry: RunEntry) -> None:
        self.viewed = entry
        if entry.live and self._timer is not None:  # just started, here or by a sweep
            self._timer.resume()
        self.main.show_entry(entry, self.next_note())
        if entry.view.summary_count != entry.view.count:
            self._want_summary(entry, force=True)
        self._bindings_may_change()

    def _bindings_may_change(self) -> None:
        """Redraw the footer only when what ``check_action`` reads has changed."""
        state = (self.live is not None, len(self.runs) >= 2, self.viewed is not None)
        if state != self._binding_state:
            first = self._binding_state is None  # the footer is yet to compose: it will ask
            self._binding_state = state
            if not first:
                self.refresh_bindings()

    def next_note(self) -> str:
        """The next run's settings where they differ from the viewed run's."""
        nxt, entry = self.next_settings, self.viewed
        if nxt is None or entry is None:
            return ""
        # the digest loads after the first frame, with the first run shown
        from warmscope.core.output.settings_diff import settings_diff

        return " ".join(
            clean_name(f"{c.name}={c.b}") for c in settings_diff(entry.data.settings, nxt.to_json())
        )

    def _tick(self) -> None:
        if not self.screen_stack:
            return  # the app is closing: its screens are gone before its timers
        tick = self.controller.tick()
        if tick is None:
            if self._timer is not None:
                self._timer.pause()
            return
        self.main.apply(tick.entry, tick.delta, self.next_note)
        self._want_summary(tick.entry, force=tick.finished)
        self._follow_compare(tick.entry, tick.finished)
        if tick.finished:
            self._run_ended(tick.entry)

    _compare_drawn = 0.0

    def _follow_compare(self, entry: RunEntry, finished: bool) -> None:
        """A compare screen that shows the live run follows it: once a second, and at its end."""
        from warmscope.tui.screens.compare_screen import CompareScreen

        screen = self.screen
        if not isinstance(screen, CompareScreen) or not screen.follows(entry):
            return
        if not screen.is_mounted:
            return  # it draws itself once mounted
        now = time.monotonic()
        if finished or now - self._compare_drawn >= COMPARE_FOLLOW_S:
            self._compare_drawn = now
            screen.show_pair()

    def _run_ended(self, entry: RunEntry) -> None:
        data = entry.data
        self._bindings_may_change()
        if data.status == outcome.OK:  # a sweep's process: its screen says so
            if entry.sweep is None:
                self.notify(f"run #{entry.number} done: {fmt.count(entry.view.count)} iterations")
            return
        if data.status == outcome.STOPPED:
            self.notify(
                f"run #{entry.number} {data.status_detail or 'stopped'}",
                severity="warning",
                markup=False,
            )
            return
        lines = entry.view.add_stderr(error_lines(data))
        self.main.show_failure(entry, lines)
        if self.screen is self.main:
            # The header says it failed and the stderr pane shows why; a toast would sit on
            # the traceback's last lines, which name the cause.
            return
        self.notify(
            f"run #{entry.number} {data.status}: {data.status_detail}",
            severity="error",
            timeout=10,
            markup=False,
        )

    # -- summaries (worker threads) -------------------------------------------------------

    def _want_summary(self, entry: RunEntry, *, force: bool = False) -> None:
        job = self.controller.summary_job(entry, force=force)
        if job is None:
            return
        self.run_worker(
            partial(self._summarize, entry, job),
            name="summary",  # the default name and description would repr every latency
            description="summary",
            thread=True,
            group="summary",
            exit_on_error=False,
        )

    def _summarize(self, entry: RunEntry, job: SummaryJob) -> None:
        """In a worker thread: run ``job`` and post what came of it."""
        try:
            summary, count, cost, warnings = job()
        except Exception as exc:  # shown in the pane; the run goes on
            self.post_message(SummaryFailed(entry, exc))
            return
        self.post_message(SummaryReady(entry, summary, count, cost, warnings))

    def on_summary_ready(self, message: SummaryReady) -> None:
        entry = message.entry
        again = self.controller.summary_done(
            entry, message.summary, message.count, message.cost, message.warnings
        )
        if not self.screen_stack:  # it came back as the app closed: nothing left to draw on
            return
        self.main.summary_changed(entry)
        if again:
            self._want_summary(entry, force=True)

    def on_summary_failed(self, message: SummaryFailed) -> None:
        self.controller.summary_failed(message.entry, message.error)
        if self.screen_stack:
            self.main.summary_changed(message.entry)

    # -- actions --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        live = self.live is not None
        if action in ("stop_run", "kill_run"):
            return True if live else None
        if action == "start_run":
            return None if live else True
        if action == "compare":
            return True if len(self.runs) >= 2 else None
        if action in ("export", "graphs"):
            return True if self.viewed is not None else None
        if action == "warmup":
            return True if self.viewed is not None and not live else None
        return True

    def action_start_run(self) -> None:
        settings = self.next_settings
        if settings is None:
            self.notify("nothing to run: press e to choose a target", severity="warning")
            return
        self.run_next(settings)

    def _live_session(self) -> tuple[RunEntry, LiveRun] | None:
        entry = self.live
        if entry is None or entry.session is None:
            self.notify("no run is going", timeout=2)
            return None
        return entry, entry.session

    def action_stop_run(self) -> None:
        if live := self._live_session():
            live[1].stop()
            self.notify(f"stopping run #{live[0].number}…", timeout=2)

    def action_kill_run(self) -> None:
        """``K``: SIGKILL now, after a yes (``k`` moves up in lists, as in vim and htop)."""
        if not (live := self._live_session()):
            return
        entry, session = live
        from warmscope.tui.screens.confirm_screen import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes and not session.is_finished():
                session.kill()
                self.notify(f"killed run #{entry.number}", severity="warning", timeout=2)

        self.push_screen(
            ConfirmScreen(f"Kill run #{entry.number} now? SIGKILL: the record ends here."),
            answered,
        )

    def action_settings(self) -> None:
        from warmscope.tui.screens.settings_screen import SettingsResult, SettingsScreen

        base = self._next_base()

        def done(result: SettingsResult | None) -> None:
            if result is None:
                return
            self.next_settings = result.settings
            if self.viewed is not None:
                self.main.query_one(RunHeader).show_entry(self.viewed, self.next_note())
            if result.run_now and result.plan.many:  # N processes, or several settings
                self.start_sweep(result.settings, result.plan)
            elif result.run_now:
                self.run_next(result.settings)
            else:
                self.notify("applies to the next run: press r", timeout=3)

        # Built once (a form of every knob takes a while to mount), filled anew each time.
        if not self.is_screen_installed("settings"):
            self.install_screen(SettingsScreen(base), "settings")
        screen = self.get_screen("settings")
        assert isinstance(screen, SettingsScreen)
        screen.load(base)
        self.push_screen(screen, done)

    def action_history(self) -> None:
        from warmscope.tui.screens.history_screen import HistoryScreen

        def done(chosen: RunEntry | list[RunEntry] | None) -> None:
            if isinstance(chosen, list):
                self.compare(chosen)
            elif chosen is not None:
                self.view_entry(chosen)

        self.push_screen(HistoryScreen(self.runs, self.viewed), done)

    def action_compare(self) -> None:
        if len(self.runs) < 2:
            self.notify("compare needs two runs: r runs again, or open two records", timeout=4)
            return
        # The viewed run against the one before it (or, for the first, the one after it).
        b = self.viewed or self.runs[-1]
        earlier = [e for e in self.runs if e.number < b.number]
        if earlier:
            a = earlier[-1]
        else:
            a, b = b, next(e for e in self.runs if e is not b)
        self.compare([a, b])

    def compare(self, chosen: list[RunEntry]) -> None:
        """Open the compare screen on ``chosen``, the first the baseline (A)."""
        from warmscope.tui.screens.compare_screen import CompareScreen

        self.push_screen(CompareScreen(self.runs, chosen, self.controller.cell_runs))

    def on_compare_screen_export_asked(self, message: CompareScreen.ExportAsked) -> None:
        from warmscope.tui.export_jobs import comparison_job

        self._export(comparison_job(message.entries))

    def action_export(self) -> None:
        from warmscope.tui.export_jobs import run_job

        if self.viewed is not None:
            self._export(run_job(self.viewed))

    def _export(self, job: ExportJob) -> None:
        from warmscope.tui.screens.export_screen import ask_and_write  # a screen not yet opened

        ask_and_write(self, job)

    def on_exported(self, message: Exported) -> None:
        if message.error:
            self.notify(
                message.error, title="Export failed", severity="error", timeout=8, markup=False
            )
            return
        text = "\n".join(str(p) for p in message.paths)
        self.notify(text, title="Exported", timeout=8, markup=False)

    def _next_base(self) -> RunSettings:
        """The next run's settings, or the default sample's when nothing was chosen yet."""
        if self.next_settings is not None:
            return self.next_settings

        return RunSettings(target=f"sample:{DEFAULT_SAMPLE}")

    def action_profile_iters(self) -> None:
        from warmscope.tui.screens.profile_screen import ProfileScreen

        base = self._next_base()

        def done(text: str | None) -> None:
            if text is None:
                return
            settings = base.copy()
            settings.profile_iters = text or None
            self.next_settings = settings
            if self.viewed is not None:
                self.main.query_one(RunHeader).show_entry(self.viewed, self.next_note())
            what = f"profiles {text}" if text else "profiles nothing"
            self.notify(f"next run {what} (r runs it)", timeout=3, markup=False)

        iters = base.iters if base.duration is None else None
        self.push_screen(ProfileScreen(base.profile_iters or "", iters), done)

    def action_graphs(self) -> None:
        from warmscope.tui.screens.graphs_screen import GraphsScreen

        if self.viewed is not None:
            self.push_screen(GraphsScreen(self.viewed))

    def action_warmup(self) -> None:
        """``W``: a warm-up recipe from the viewed run's settings, verified in fresh processes.
        Settings read from a record that choose what runs (an interpreter, the child's
        environment) are shown first."""
        from warmscope.tui.screens.confirm_screen import ConfirmScreen
        from warmscope.tui.screens.trust_screen import trusted_then
        from warmscope.tui.screens.warmup_screen import (
            WarmupScreen,
            warmup_question,
            warmup_settings,
        )

        entry = self.viewed
        if self.live is not None:
            self.notify("a run is going: the warm-up starts once it ends", timeout=3)
            return
        if entry is None or self.starts.refused():
            return
        if any(isinstance(screen, WarmupScreen) for screen in self.screen_stack):
            self.notify("a warm-up is open: q leaves it (and stops it)", timeout=3)
            return
        source = entry.record_name or "a record" if entry.source != "run" else None
        begin = partial(self._begin_warmup, entry)
        settings = warmup_settings(entry.data.settings)

        def answered(yes: bool | None) -> None:
            if yes:
                trusted_then(self, settings, source, begin)
            else:
                self.notify("nothing started", timeout=2)

        # Asked every time: a warm-up derives code from the run's target and runs it in many
        # processes, whoever made the run.
        self.push_screen(ConfirmScreen(warmup_question(entry, settings)), answered)

    def _begin_warmup(self, entry: RunEntry, settings: RunSettings) -> None:
        """Make the warm-up's engine on a worker (over ``--host`` its target is asked there),
        then show it."""
        from warmscope.tui.screens import warmup_screen

        folder, recipe = warmup_screen.warmup_paths(entry.data.record_path)

        def done(engine: warmup_screen.Engine | None, error: str) -> None:
            if engine is None:
                self.notify(error, title="No warm-up", severity="error", timeout=8, markup=False)
                return
            title = f"run #{entry.number} {settings.target}"
            self.push_screen(warmup_screen.WarmupScreen(engine, recipe, title))

        build = partial(
            warmup_screen.make_engine, settings, folder
        )  # looked up now: tests replace it
        self.starts.begin(Pending("a warm-up", build, done))

    def action_sweep(self) -> None:
        """The last sweep's answer and table (opened, or run here), over its runs."""
        from warmscope.tui.screens.sweep_screen import SweepScreen

        if self.sweeps and not isinstance(self.screen, SweepScreen):
            self.push_screen(SweepScreen(self.sweeps[-1]))

    def action_help(self) -> None:
        from warmscope.tui.screens.help_screen import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_log(self) -> None:
        self.main.action_toggle_log()

    def action_toggle_zoom(self) -> None:
        self.main.action_toggle_zoom()

    def action_preset(self, name: str) -> None:
        base = self.next_settings
        if base is None:
            return
        settings = base.copy()
        settings.apply_preset(name)
        self.next_settings = settings
        if self.viewed is not None:
            self.main.show_entry(self.viewed, self.next_note())
        self.notify(f"next run: preset {name} (r runs it)", timeout=3, markup=False)

    def action_repaint(self) -> None:
        """Draw every cell of the screen again, not only what changed (Ctrl+L, a resume)."""
        repaint_all(self)

    async def action_quit(self) -> None:
        """``q``: close a sub-screen; on the main screen quit, after a yes while a run is going
        (the child is stopped first, killed if it does not end; ``q`` again kills it now)."""
        if self.screen.id == "loading":  # a long record still read: nothing to see, leave now
            self.workers.cancel_group(self, "load")
            self.exit(0)
            return
        if self.screen is not self.main:  # a running sweep's screen stops it instead
            getattr(self.screen, "close_or_stop", self.screen.dismiss)()
            return
        live = [e for e in self.runs if e.live and e.session is not None]
        if live and not self._quitting:
            names = ", ".join(f"#{e.number}" for e in live)
            from warmscope.tui.screens.confirm_screen import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self.run_worker(self._quit(), group="quit")

            self.push_screen(ConfirmScreen(f"Run {names} is going. Stop it and quit?"), answered)
            return
        await self._quit()

    async def _quit(self) -> None:
        self.starts.abandon()  # a run still starting is ended once it exists
        live = [e.session for e in self.runs if e.live and e.session is not None]
        if live and not self._quitting:
            self._quitting = True
            self.notify("stopping the run before quitting… (q again kills it)", timeout=3)
            for session in live:
                session.stop()
            await self._end_and_exit(live, STOP_WAIT_S, KILL_WAIT_S)
        else:  # nothing live, or q again while stopping: kill now
            await self._end_and_exit(live, 0.0, KILL_WAIT_S)

    async def _wait_finished(self, sessions: list[LiveRun], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(not s.is_finished() for s in sessions):
            await asyncio.sleep(0.05)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from warmscope.tui.palette import run_commands  # the palette: when it is opened

        yield from super().get_system_commands(screen)
        yield from run_commands(self, screen, self.main, sweeps=bool(self.sweeps))

    def stop_all(self) -> None:
        """Last resort on the way out: no child outlives the app."""
        self.starts.abandon()
        for e in self.runs:
            session = e.session
            if session is not None and not session.is_finished():
                kill_and_wait(session, KILL_WAIT_S)


build_app = WarmscopeApp
"""One factory for the command line, the tests and the benchmarks."""
