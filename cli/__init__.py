"""The command line: ``warmscope [run|sweep|open|compare|report|export|samples|knobs] ...``.

This package only parses and dispatches: each command is a module exposing ``COMMANDS``
(``command.Command``: its name, its options, its ``run(args, argv) -> int``); what they print
is ``core.text_views``'.

Exit codes: 0 the run completed; 1 the run failed (the model raised, the child crashed or
timed out); 2 bad usage or a bad target/input, named in one line; 130 stopped by the user.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from warmscope.cli import view
from warmscope.cli.command import Command
from warmscope.cli.console import say, stdout_gone
from warmscope.core.child import outcome
from warmscope.core.child.outcome import WarmscopeError

MODULES = {
    "run": "run",
    "sweep": "sweep",
    "warmup": "warmup",
    "open": "view",
    "compare": "compare",
    "report": "report",
    "export": "export",
    "exec": "exec_command",
    "samples": "lists",
    "knobs": "lists",
}
"""Each command's module, imported only when its command runs: the TUI's first frame waits for
no record, digest or sweep machinery it does not show yet."""


def command(name: str) -> Command:
    """The command ``name`` (a key of ``MODULES``), from its module."""
    module = importlib.import_module(f"warmscope.cli.{MODULES[name]}")
    return next(c for c in module.COMMANDS if c.name == name)


def make_parser(name: str | None) -> argparse.ArgumentParser:
    """The parser of ``warmscope COMMAND``; with no command, of the TUI on a target."""
    return view.tui_parser() if name is None else command(name).parser()


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # stdout closed early (`warmscope knobs | head -1`): what was asked for was read.
        stdout_gone()
        return outcome.EXIT_OK


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name = argv[0] if argv and argv[0] in MODULES else None
    rest = argv[1:] if name else argv
    # exec: what follows -- is the program's own command line
    verbose = "--verbose" in (rest[: rest.index("--")] if "--" in rest else rest)
    try:
        args = make_parser(name).parse_args(rest)
        if name is None:
            return view.run_tui(args, argv)
        return command(name).run(args, argv)
    except WarmscopeError as exc:
        if verbose:
            raise
        say(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return outcome.EXIT_STOPPED
