"""Starting a run, a sweep or a warm-up off the UI thread.

Over ``--host`` a start asks the host: the target's path there (``remote_target``), then the
connection and the remote guardian's hello, each up to its timeout. So the slow part of a start
is done on a thread worker while the UI stays live (keys, redraws, Ctrl-C), and what it made is
handed to the UI thread, which records it (``RunController`` is not thread-safe). ``Pending`` is
that hand-off: a start that ends after the app began quitting finds itself abandoned and ends
what it made at once, so no child outlives the app. One start at a time: while one is pending,
another is refused with one line. A child may be spawned from the worker: where the UI keeps a
launcher thread, every child is spawned there (``core/run/launcher.py``). A local run starts at
once on the UI thread: it waits for nothing (the child is spawned, not waited for).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from textual.message import Message

from warmscope.core.base.safe_text import clean_name
from warmscope.core.child.outcome import WarmscopeError
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.ending import one_line
from warmscope.tui.drawing.chart import Line
from warmscope.tui.widgets.run.run_header import STATUS, RunHeader

if TYPE_CHECKING:
    from warmscope.core.data.run import LiveRun
    from warmscope.tui.app import WarmscopeApp

T = TypeVar("T")
KILL_WAIT_S = 2.0  # as the app gives a killed run on its way out


class Pending(Generic[T]):
    """One start in progress on a worker thread, and the hand-off of what it made.

    ``build`` (the worker) makes it; ``done(made, error)`` (the UI thread) takes it, ``made``
    ``None`` and ``error`` one line when it could not start; ``end`` ends what was made for an
    app that quit meanwhile.
    """

    def __init__(
        self,
        what: str,
        build: Callable[[], T],
        done: Callable[[T | None, str], None],
        end: Callable[[T], None] = lambda made: None,
    ) -> None:
        self.what = what
        """``a run``, ``a sweep``, ``a warm-up``: for the line that refuses a second start."""
        self._build, self._done, self._end = build, done, end
        self._lock = threading.Lock()
        self._made: T | None = None
        self._error = ""
        self._abandoned = False

    def make(self) -> None:
        """On the worker: build it, and keep it for the UI thread, or end it at once if the
        app began quitting meanwhile."""
        try:
            made = self._build()
        except (WarmscopeError, OSError) as exc:
            self._error = one_line(str(exc) or repr(exc))
            return
        except Exception as exc:  # a fault of warmscope's: said in one line, not a hang
            self._error = one_line(f"{type(exc).__name__}: {exc}")
            return
        with self._lock:
            if not self._abandoned:
                self._made = made
                return
        self._end(made)

    def finish(self) -> None:
        """On the UI thread, once ``make`` returned: hand over what it made, or why not."""
        with self._lock:
            if self._abandoned:
                return
            made, self._made = self._made, None
        self._done(made, self._error)

    def abandon(self) -> None:
        """The app is quitting: what was made and not yet handed over is ended now; what is
        made from now on, ``make`` ends at once."""
        with self._lock:
            self._abandoned = True
            made, self._made = self._made, None
        if made is not None:
            self._end(made)


class StartMade(Message):
    """A pending start's worker returned: the UI thread takes what it made."""

    def __init__(self, pending: Pending[Any]) -> None:
        super().__init__()
        self.pending = pending


def begin(app: WarmscopeApp, pending: Pending[Any]) -> None:
    """Make ``pending`` on a thread worker; ``StartMade`` brings it back to the UI thread."""
    app.starting = pending

    def work() -> None:
        try:
            pending.make()
        finally:
            app.post_message(StartMade(pending))  # any thread may post; dropped once closed

    app.run_worker(
        work,
        name="start",
        description=pending.what,
        group="start",
        thread=True,
        exit_on_error=False,
    )


def made(app: WarmscopeApp, message: StartMade) -> None:
    """The app's handler of ``StartMade``: the start is no longer pending; hand it over."""
    if app.starting is message.pending:
        app.starting = None
    message.pending.finish()


def refused(app: WarmscopeApp) -> bool:
    """Say so and ``True`` where another start is pending (one start at a time)."""
    if app.starting is None:
        return False
    app.notify(f"{app.starting.what} is starting: wait for it (q quits)", severity="warning")
    return True


def abandon(app: WarmscopeApp) -> None:
    """The app is quitting: the pending start ends what it made, now or once made. Its ``ssh``
    connections are cut now, so that its worker, waiting on them, ends at once rather than at
    their timeouts (a silent host: the connect timeout; a slow remote: the hello's)."""
    pending = app.starting
    if pending is None:
        return
    app.starting = None
    pending.abandon()
    from warmscope.core.run.remote import cut_connecting  # only where a start is cut short

    cut_connecting()


def run_next(app: WarmscopeApp, settings: RunSettings) -> None:
    """Start a run the user asked for; settings from a file that choose what runs (an
    interpreter, the child's environment, pickle trust) are shown to the user first."""
    if app.live is not None or app.starting is not None:
        start_run(app, settings)  # which says why it starts nothing
        return
    trusted_then(app, settings, lambda chosen: start_run(app, chosen))


def trusted_then(
    app: WarmscopeApp, settings: RunSettings, start: Callable[[RunSettings], None]
) -> None:
    """``start(settings)``, where settings from a file choose nothing that runs; else once the
    user has seen those choices and kept or dropped them (then they are the user's own)."""
    untrusted = settings.untrusted() if app.next_source is not None else {}
    if not untrusted:
        start(settings)
        return
    from warmscope.tui.screens.trust_screen import TrustChoice, TrustScreen

    def done(choice: TrustChoice | None) -> None:
        if choice is None:
            app.notify("nothing started", timeout=2)
            return
        chosen = settings if choice == "use" else settings.without_untrusted()
        # Confirmed or dropped: from now on these are the user's settings.
        app.next_settings, app.next_source = chosen, None
        start(chosen)

    app.push_screen(TrustScreen(settings, app.next_source or "a file"), done)


def start_run(app: WarmscopeApp, settings: RunSettings) -> None:
    """Start a run of ``settings``; a run that cannot start is one line. Over ``--host`` it is
    built on a worker and recorded once it exists, the header saying what it waits for; a local
    start takes milliseconds (the child is spawned, not waited for) and is done here at once."""
    if app.live is not None:
        app.notify("a run is going: s stops it, k kills it", severity="warning")
        return
    if refused(app):
        return
    controller = app.controller
    try:
        if not settings.host:
            app.view_entry(controller.start(settings))
            return
        request = controller.request(settings)
    except (WarmscopeError, OSError) as exc:
        cannot_run(app, str(exc))
        return

    def done(session: LiveRun | None, error: str) -> None:
        if session is None:
            if app.viewed is not None:
                app.main.query_one(RunHeader).show_entry(app.viewed, app.next_note())
            else:
                _show_header(app, [])
            cannot_run(app, error)
            return
        app.view_entry(controller.started(request, session))

    doing = f"connecting to {clean_name(settings.host)}"
    _show_header(app, starting_lines(app, len(app.runs) + 1, settings, doing))
    begin(app, Pending("a run", lambda: controller.build(request), done, end=_kill))


def cannot_run(app: WarmscopeApp, error: str) -> None:
    app.notify(error, title="Cannot run", severity="error", timeout=8, markup=False)


def _kill(session: LiveRun) -> None:
    """A run whose start ended after the app began quitting: nobody watches it. Killed, and
    given a moment to end, so that its record says how it ended before the app is gone."""
    session.kill()
    deadline = time.monotonic() + KILL_WAIT_S
    while not session.is_finished() and time.monotonic() < deadline:
        time.sleep(0.02)


def starting_lines(app: WarmscopeApp, number: int, settings: RunSettings, doing: str) -> list[Line]:
    """The header of a run not started yet: what will run, and what its start is doing."""
    header = app.main.query_one(RunHeader)
    styles = {p: header.get_component_rich_style(f"run-header--{p}", partial=True) for p in STYLES}
    mark, part = STATUS["starting"]
    bold = styles["bold"]
    line1 = Line([(f" #{number} ", bold), (clean_name(settings.target), styles["accent"] + bold)])
    if settings.host:
        line1.append((f" · on {clean_name(settings.host)}", None))
    line2 = Line([(f" {mark} starting", styles[part] + bold), (f" · {doing}…", styles["muted"])])
    return [line1, line2]


STYLES = ("accent", "muted", "bold")


def _show_header(app: WarmscopeApp, lines: list[Line]) -> None:
    header = app.main.query_one(RunHeader)
    header.lines = lines
    header.redraw()
