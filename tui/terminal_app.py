"""``run_app``: the TUI in the user's terminal, from the command line to its exit code."""

from __future__ import annotations

import os
from typing import Any

from warmscope.core.child.outcome import UsageError
from warmscope.core.run import launcher
from warmscope.tui import glyphs
from warmscope.tui.app import WarmscopeApp
from warmscope.tui.run_view import exit_code, record_lines


def run_app(*, mouse: bool = False, **options: Any) -> int:
    """Run the TUI until the user quits; the exit code for the command line. ``options`` are
    ``WarmscopeApp``'s. ``mouse``: track the mouse (every move is bytes over SSH, and tracking
    takes the terminal's own text selection away), off unless asked for. ASCII also where
    ``TERM`` names a terminal that lacks the rest (the Linux console, a VT100). No TUI at all
    where ``TERM`` is ``dumb`` or unset: a terminal that cannot move its cursor would print
    every escape sequence; the error names the headless command instead."""
    if glyphs.dumb_terminal(os.environ.get("TERM")):
        raise UsageError(
            glyphs.dumb_terminal_message(options.get("settings"), options.get("records"))
        )
    options["ascii"] = glyphs.ascii_wanted(os.environ.get("TERM"), options.get("ascii", False))
    # The UI waits, the child is measured: drawing runs nicer than the runs it starts.
    launcher.lower_own_priority(launcher.OBSERVER_NICE)
    app = WarmscopeApp(**options)
    try:
        app.run(mouse=mouse)
    finally:
        app.stop_all()
    for line in record_lines(app.runs):
        print(line)
    return int(app.return_code or 0) or exit_code(app.runs)
