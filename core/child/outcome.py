"""How a run and a command end: run statuses, exit codes, and the one error root.

Standard library only: the agent loads this file by path, so the child and the parent share
one vocabulary.
"""

from __future__ import annotations

# Run statuses. A run is ``starting``, then ``running``, then one of ``FINISHED``.
STARTING = "starting"
RUNNING = "running"
OK = "ok"
FAILED = "failed"
CRASHED = "crashed"
TIMEOUT = "timeout"
STOPPED = "stopped"
FINISHED = (OK, FAILED, CRASHED, TIMEOUT, STOPPED)

# Exit codes of `warmscope` and of the agent.
EXIT_OK = 0
EXIT_FAILED = 1
"""The run failed: the model raised, the child crashed or timed out, a record could not be written."""
EXIT_USAGE = 2
"""Bad usage, or a bad target, input, record or interpreter."""
EXIT_NOT_VERIFIED = 3
"""``warmscope warmup``: it ran, and no recipe was verified (its record and document kept)."""
EXIT_STOPPED = 130
"""Stopped by the user (Ctrl-C), as a shell reports SIGINT."""
EXIT_PARENT_GONE = 70
"""The agent's parent went away: nobody is left to report to."""


class WarmscopeError(Exception):
    """Something warmscope cannot do, said in one line; ``exit_code`` is what ``main`` returns."""

    exit_code = EXIT_FAILED


class UsageError(WarmscopeError, ValueError):
    """Bad usage or a bad target, input, setting or record: the message names it (exit 2)."""

    exit_code = EXIT_USAGE
