"""What a command module gives the parser and the dispatch: its name, its options, its run.

Each module under ``cli`` exposes ``COMMANDS``, a tuple of ``Command``; ``cli`` finds
a command by the first word of the command line and hands it the parsed arguments.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from warmscope.core.base.safe_text import clean_line
from warmscope.core.child.outcome import UsageError

EPILOG = """\
exit codes: 0 completed, 1 the run failed (model raised, child crashed, timeout),
2 bad usage or bad target/input, 130 stopped with Ctrl-C.
"""


class UsageParser(argparse.ArgumentParser):
    """A parser whose errors are a ``UsageError``: one clean line, exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse echoes unrecognized arguments as given: never raw escape sequences.
        raise UsageError(clean_line(message))


@dataclass(frozen=True)
class Command:
    """``warmscope NAME ...``: ``add_arguments`` fills its parser, ``run(args, argv)`` returns
    the exit code (``argv``: the whole command line, for the record)."""

    name: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, list[str]], int]
    description: str | None = None
    epilog: bool = False
    """The exit codes under the help, the description kept as written."""
    epilog_text: str | None = None
    """The command's own exit codes under the help (it implies ``epilog``)."""

    def parser(self) -> UsageParser:
        if self.epilog or self.epilog_text:
            p = UsageParser(
                prog=f"warmscope {self.name}",
                description=self.description,
                epilog=self.epilog_text or EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
        else:
            p = UsageParser(prog=f"warmscope {self.name}", description=self.description)
        self.add_arguments(p)
        return p


def add_records(p: argparse.ArgumentParser) -> None:
    """The arguments of a command over saved records (``open``, ``compare``)."""
    p.add_argument("records", nargs="+", type=Path, metavar="RECORD")
    p.add_argument("--verbose", action="store_true")
