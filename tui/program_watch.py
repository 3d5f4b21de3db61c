"""``ProgramWatch``: ``warmscope exec`` in the TUI, each process of the program a live run.

The session (``core/run/exec_session``) reads the program's streams on its own thread; here,
on the app's timer, each process that has said hello becomes a run of the app, the first one
shown, the others listed in the history (``h``) to switch to. Once the program has exited,
the session is finished on a thread (its streams drained, its records ended), and the runs
end with it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from textual.app import App

from warmscope.core.base.safe_text import clean_name
from warmscope.tui.screens.main_screen import main_of
from warmscope.tui.widgets.run.run_header import RunHeader

if TYPE_CHECKING:
    from warmscope.core.run.exec_session import ExecSession
    from warmscope.tui.app_state import AppState
    from warmscope.tui.viewer import Viewer

LOOK_S = 0.2


class ProgramWatch:
    """Adopts the program's processes as they join; finishes the session when it exits."""

    def __init__(self, app: App[Any], state: AppState, viewer: Viewer, session: ExecSession):
        self.app = app
        self.state = state
        self.viewer = viewer
        self.session = session
        self.adopted: set[int] = set()
        """The processes shown, by ``id`` of their run."""
        self.finishing: threading.Thread | None = None

    def start(self) -> None:
        """The main screen is up: say what it waits for, then look for processes."""
        main_of(self.app).query_one(RunHeader).show_starting(
            1, clean_name(self.session.describe()), None, "waiting for its first Python process"
        )
        self.app.set_interval(LOOK_S, self.look)

    def look(self) -> None:
        session = self.session
        for run in session.watched():
            if id(run) in self.adopted:
                continue
            self.adopted.add(id(run))
            entry = self.state.controller.watch(run)
            self.viewer.summaries.want(entry, force=True)
            if len(self.adopted) == 1:
                self.viewer.show(entry)
            else:
                self.app.notify(f"process {run.pid} joined: h lists the program's processes")
                self.viewer.bindings_may_change()
        self.viewer.follow()
        if not session.running() and self.finishing is None:
            self.finishing = threading.Thread(target=self._finish, daemon=True)
            self.finishing.start()

    def _finish(self) -> None:
        self.session.finish()
        self.app.call_from_thread(self._ended)

    def _ended(self) -> None:
        self.look()  # a process that joined at the very end
        code = self.session.exit_code
        for failure in self.session.failures:
            self.app.notify(failure, title="Not recorded", severity="error", markup=False)
        if not self.session.processes:
            self.app.notify(
                f"the program exited ({code}) with no Python process watched: "
                "exec watches Python programs",
                severity="warning",
                timeout=10,
            )
        elif not any(r.data.count for r in self.session.processes):
            self.app.notify("the program never called a torch module", severity="warning")
        else:
            self.app.notify(f"the program exited with {code}", timeout=5)
