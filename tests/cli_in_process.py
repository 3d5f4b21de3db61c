"""``warmscope ARGS`` through the command line's own ``main()``, in the test's process.

What the command line decides without a child (its parsing, the settings, a file it reads,
what it prints) is the same code whether ``main()`` runs here or under a fresh interpreter;
only the interpreter's start differs, about a quarter of a CPU-second each time. A test of
such a decision calls ``main()`` here; one real ``python -m warmscope.cli`` test per
behaviour (``conftest.warmscope``) keeps the console script, its exit status and real pipes
checked. A child started here would be a bug of the command (or of the test): it fails.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from tests.conftest import Result
from warmscope.cli import main


def _no_child(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(f"a child process was started in-process: {args[:1]!r}")


def _no_tui(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the TUI was started in-process: the document was not refused")


@contextlib.contextmanager
def _in_folder(cwd: Path | None) -> Iterator[None]:
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


def main_here(capsys: pytest.CaptureFixture[str], *args: str, cwd: Path | None = None) -> Result:
    """``warmscope ARGS`` by ``main()`` here: its exit code, stdout and stderr (``--help``'s
    ``SystemExit`` is its exit code, as ``python -m warmscope.cli`` makes it)."""
    capsys.readouterr()  # what came before is not this command's
    with contextlib.ExitStack() as stack:
        stack.enter_context(_in_folder(cwd))
        stack.enter_context(mock.patch.object(subprocess, "Popen", _no_child))
        if not args or args[0] == "open" or args[0] not in _COMMANDS:
            from warmscope.tui import terminal_app

            stack.enter_context(mock.patch.object(terminal_app, "run_app", _no_tui))
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        sys.stdout.flush()
    out, err = capsys.readouterr()
    return Result(code, out, err, None)


_COMMANDS = ("run", "sweep", "warmup", "compare", "report", "export", "samples", "knobs")
"""The command words that start no TUI (``open`` and a bare target do)."""
