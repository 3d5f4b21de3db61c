"""The command line: ``warmscope [run|sweep|open|compare|report|samples|knobs] ...``.

This package only parses and dispatches: each command is a module exposing ``COMMANDS``
(``command.Command``: its name, its options, its ``run(args, argv) -> int``); what they print
is ``core.text_views``'.

Exit codes: 0 the run completed; 1 the run failed (the model raised, the child crashed or
timed out); 2 bad usage or a bad target/input, named in one line; 130 stopped by the user.
"""

from __future__ import annotations

import argparse
import sys

from warmscope.core import outcome
from warmscope.core.cli import compare, lists, report, run, sweep, view, warmup
from warmscope.core.cli.command import Command
from warmscope.core.cli.console import say, stdout_gone
from warmscope.core.outcome import WarmscopeError

COMMANDS: dict[str, Command] = {
    c.name: c
    for module in (run, sweep, warmup, view, compare, report, lists)
    for c in module.COMMANDS
}


def make_parser(command: str | None) -> argparse.ArgumentParser:
    """The parser of ``warmscope COMMAND``; with no command, of the TUI on a target."""
    return view.tui_parser() if command is None else COMMANDS[command].parser()


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # stdout closed early (`warmscope knobs | head -1`): what was asked for was read.
        stdout_gone()
        return outcome.EXIT_OK


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    rest = argv[1:] if command else argv
    verbose = "--verbose" in rest
    try:
        args = make_parser(command).parse_args(rest)
        if command is None:
            return view.run_tui(args, argv)
        return COMMANDS[command].run(args, argv)
    except WarmscopeError as exc:
        if verbose:
            raise
        say(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return outcome.EXIT_STOPPED
