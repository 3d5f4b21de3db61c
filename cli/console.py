"""What every command does with the console: stdout that may go away, errors in one line,
the ``--json`` path checked before anything runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from warmscope.core.base.safe_text import clean_line
from warmscope.core.child.outcome import UsageError


def say(line: str) -> None:
    """One ``warmscope: ...`` line on stderr, made safe for the terminal."""
    print(f"warmscope: {clean_line(line)}", file=sys.stderr)


def emit(text: str, end: str = "\n") -> None:
    """Print ``text`` on stdout; if the reader went away (``| head -1``), drop the rest quietly."""
    try:
        print(text, end=end)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()


def stdout_gone() -> None:
    """Point stdout at /dev/null, so nothing more (the flush at exit included) raises
    ``BrokenPipeError``: the recipe of the ``signal`` module's "Note on SIGPIPE"."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


STDOUT = "-"
"""``--json -``: the document on stdout."""


def check_json_path(path: Path, record: Path | None, *, stdout_ok: bool = False) -> None:
    """``--json PATH`` before anything runs: an existing, writable folder, and not a folder
    itself; ``-`` (stdout) only where ``stdout_ok``, never a file of that name. ``UsageError``
    names the problem (exit 2, nothing spawned)."""
    shown = clean_line(str(path))
    if str(path) == STDOUT:
        if stdout_ok:
            return
        raise UsageError("--json - (stdout) is for one run's document: give a file path")
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"--json {shown} is a folder: give a file path")
    if not folder.exists():
        # Name the first missing folder: the one to create.
        missing = folder
        while not missing.parent.exists() and missing.parent != missing:
            missing = missing.parent
        raise UsageError(f"--json {shown}: no such folder {clean_line(str(missing))}")
    if not folder.is_dir():
        raise UsageError(f"--json {shown}: {clean_line(str(folder))} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--json {shown}: the folder {clean_line(str(folder))} is not writable")
    if record is not None and os.path.abspath(record) == os.path.abspath(path):
        raise UsageError(f"--json {shown} is also the --record path: give two different files")


def reason(exc: BaseException) -> str:
    """An OS error's reason in words (``Permission denied``), else the exception's text."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return clean_line(str(exc)) or type(exc).__name__
