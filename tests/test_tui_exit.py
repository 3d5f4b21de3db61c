"""The TUI's exit code: as ``warmscope run`` would give for its last run (each ending, as a
unit), and in a real terminal, with where the record is said on the way out."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.tui_support import in_terminal, terminal_chunk
from warmscope.core.child import outcome
from warmscope.core.data.run import RunData
from warmscope.tui.run_view import RunEntry, exit_code


def _ended(number: int, source: str, status: str, code: int | None = None) -> RunEntry:
    return RunEntry(number, RunData(status=status, exit_code=code), source)


def test_the_exit_code_is_the_last_started_runs_as_warmscope_run_gives_it() -> None:
    assert exit_code([]) == outcome.EXIT_OK, "no run at all"
    assert exit_code([_ended(1, "record", outcome.FAILED, 1)]) == 0, "records only opened"
    for status, code, expected in [
        (outcome.OK, 0, 0),
        (outcome.STOPPED, 130, 0),  # the user stopped it: not a failure of the program
        (outcome.FAILED, 1, 1),
        (outcome.FAILED, 2, 2),  # bad input
        (outcome.CRASHED, None, 1),
        (outcome.TIMEOUT, 1, 1),
    ]:
        runs = [_ended(1, "run", outcome.FAILED, 1), _ended(2, "run", status, code)]
        assert exit_code(runs) == expected, status
        assert exit_code([*runs, _ended(3, "record", outcome.OK, 0)]) == expected, "started"


def _tui_until_quit(*args: str, wait_for: bytes, record_dir: Path) -> tuple[int, bytes]:
    """Start ``warmscope ARGS`` in a 100x30 terminal, press ``q`` once ``wait_for`` is on the
    screen, and return its exit code and everything it wrote."""
    out = b""
    quit_sent = False
    deadline = time.monotonic() + 90
    with in_terminal(*args, env={"WARMSCOPE_RECORD_DIR": str(record_dir)}) as terminal:
        while time.monotonic() < deadline:  # until it has exited and all it wrote is read
            if (chunk := terminal_chunk(terminal.master, 0.1)) is None:
                break
            out += chunk
            if not quit_sent and wait_for in out:
                time.sleep(0.5)
                os.write(terminal.master, b"q")
                quit_sent = True
        assert quit_sent, f"never saw {wait_for!r}: {out[-2000:]!r}"
        return terminal.proc.wait(timeout=30), out


def test_the_tui_exits_as_its_last_run_ended_and_says_where_it_is_kept(tmp_path: Path) -> None:
    returncode, out = _tui_until_quit(
        "sample:speech",
        "--input",
        "1x300x41",  # the wrong size: the run fails
        "--iters",
        "5",
        wait_for="✗ failed".encode(),
        record_dir=tmp_path,
    )
    assert returncode == 1, out[-2000:]
    assert b"run #1 failed: " in out, "the record's place is said on the way out"
