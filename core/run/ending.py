"""How a run ended: its status, one-line detail and exit code, from what the session saw.

Parent side only (``outcome`` holds the names both sides share).
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from typing import Any, NamedTuple

from warmscope.core.child import outcome

MAX_DETAIL = 200
"""A status detail is one line of at most this many characters."""


class Ending(NamedTuple):
    status: str
    detail: str
    exit_code: int


@dataclass
class Seen:
    """What the session saw of a run by the time its agent exited."""

    fault: Ending | None = None
    """Why warmscope ended the run itself, if it did: it wins over anything else."""
    oom: str | None = None
    """How the run ran out of memory, where it did (the session finds it): the cause, before
    the signal or the error it shows as."""
    timeout: float | None = None
    """The ``--timeout`` that stopped the run, if it did."""
    error: dict[str, Any] | None = None
    """The child's error message (``fold``'s ``RunData.error``)."""
    done: dict[str, Any] | None = None
    """The child's ``done`` message."""
    stop_requested: bool = False
    killed: bool = False
    hello: bool = False
    """Whether the agent spoke at all."""
    python: str | None = None
    """``--python``, when the user chose the interpreter."""
    iterations: int = 0


def one_line(message: str, limit: int = MAX_DETAIL) -> str:
    """The first non-empty line of ``message``, cut at ``limit`` characters."""
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    if len(first) > limit:
        return first[: limit - 1] + "…"
    return first if first == message.strip() else first + " …"


EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit): \S")
"""A line that starts as Python prints an exception: ``RuntimeError: Given groups=1, …``."""


def cause_line(message: str, limit: int = MAX_DETAIL) -> str:
    """The line of an error ``message`` that says what is wrong, cut at ``limit`` characters.

    A TorchScript interpreter error opens with its lead-in ("The following operation failed in
    the TorchScript interpreter.") and a traceback, and ends with the exception torch raised
    inside it (``RuntimeError: … expected input[1, 41, 300] to have 40 channels …``): that last
    line is the cause. Any other message keeps its first line.
    """
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    if len(lines) > 1 and EXCEPTION_LINE.match(lines[-1]):
        last = lines[-1]
        return last if len(last) <= limit else last[: limit - 1] + "…"
    return one_line(message, limit)


def not_a_python(python: str | None, how: str) -> Ending:
    return Ending(
        outcome.FAILED,
        f"--python {python} is not a Python interpreter that can run warmscope's agent ({how})",
        outcome.EXIT_USAGE,
    )


def classify(returncode: int, seen: Seen) -> Ending:
    """The run's ending from the agent's ``returncode`` and what was ``seen``."""
    error = seen.error
    done = seen.done
    if seen.fault is not None:
        return seen.fault
    if seen.oom is not None:
        return Ending(outcome.FAILED, f"out of memory: {seen.oom}", outcome.EXIT_FAILED)
    if seen.timeout is not None:
        return Ending(
            outcome.TIMEOUT, f"stopped after --timeout {seen.timeout:g} s", outcome.EXIT_FAILED
        )
    if error is not None:
        where = (
            f"iteration {error['iteration']}"
            if error.get("iteration") is not None
            else error.get("where")
        )
        # One line: a TorchScript error's message carries its whole traceback, a trace
        # failure may print a tensor. The full text stays in the record's error.
        message = cause_line(str(error.get("message")))
        if error.get("usage"):
            return Ending(outcome.FAILED, message, outcome.EXIT_USAGE)
        return Ending(outcome.FAILED, f"{where}: {message}", outcome.EXIT_FAILED)
    if done is not None:
        if done.get("status") == outcome.STOPPED:
            return Ending(outcome.STOPPED, "stopped by the user", outcome.EXIT_STOPPED)
        return Ending(outcome.OK, f"{seen.iterations} iterations", outcome.EXIT_OK)
    if seen.stop_requested:
        how = "killed" if seen.killed else "stopped"
        return Ending(outcome.STOPPED, f"{how} by the user", outcome.EXIT_STOPPED)
    if not seen.hello and seen.python is not None:
        # It never spoke: not a Python that can run the agent (``--python /bin/false``).
        how = f"died from signal {-returncode}" if returncode < 0 else f"exited with {returncode}"
        return not_a_python(seen.python, f"it {how} without starting it")
    if returncode < 0:
        name = (
            signal.Signals(-returncode).name
            if -returncode in signal.valid_signals()
            else str(-returncode)
        )
        return Ending(outcome.CRASHED, f"the child died from {name}", outcome.EXIT_FAILED)
    return Ending(
        outcome.CRASHED,
        f"the child exited with code {returncode} before finishing",
        outcome.EXIT_FAILED,
    )
