"""``warmscope exec`` in the TUI: a real program (the first process calls a module, a worker it
forks calls it too), its processes shown as they join, live, each a run of the app to switch
to; the program's exit code kept."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from textual.pilot import Pilot

from tests.tui_support import run, screen_text, wait_for
from warmscope.core.run.exec_session import ExecSession
from warmscope.tui.app import build_app
from warmscope.tui.widgets.run.run_header import RunHeader

PROGRAM = textwrap.dedent(
    """
    import multiprocessing as mp, sys, time
    import torch

    model = torch.nn.Linear(8, 2)

    def calls(n):
        for b in range(n):
            model(torch.randn(1 + b % 2, 8))
            time.sleep(0.05)

    if __name__ == "__main__":
        calls(6)
        worker = mp.get_context("fork").Process(target=calls, args=(4,))
        worker.start()
        worker.join()
        print("bye", flush=True)
        sys.exit(9)
    """
)


def test_each_process_is_a_live_run_of_the_app(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    session = ExecSession(
        [sys.executable, str(tmp_path / "prog.py")],
        record=tmp_path / "r.jsonl",
        own_terminal=False,
    )
    session.start()
    app = build_app(program=session)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.count > 0)
        first = app.runs[0]
        assert first.live and "running" in app.screen.query_one(RunHeader).plain
        await wait_for(pilot, lambda: len(app.runs) == 2)  # the worker joined
        await wait_for(pilot, lambda: all(e.data.finished for e in app.runs), timeout=60)
        await pilot.pause(0.3)
        assert [e.view.count for e in app.runs] == [6, 4]
        header = app.screen.query_one(RunHeader).plain
        assert f"pid {first.data.exec['process']['pid']}" in header
        text = screen_text(app)
        assert "Linear(fl" in text, text  # the group column: as wide as the pane allows
        # each group's first call is marked, in the table too
        assert [first.view.first_of_shape(i) for i in range(4)] == [True, True, False, False]
        assert "first call" in text
        assert first.data.status == "failed" and first.data.exit_code == 9
        stderr = [e for e in first.data.events if e.kind == "stderr"]
        assert "bye" in "\n".join(e.text for e in stderr)  # the program's output, in its pane

    try:
        run(app, scenario, size=(110, 32), settled=False)
    finally:
        session.finish()
    assert session.exit_code == 9
