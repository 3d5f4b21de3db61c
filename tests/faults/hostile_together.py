"""Hostile acts of tests/faults/hostile.py that one model can do together, each test reading
what is its own (tests/test_hostile.py): one child instead of one per act, input `4`."""

from __future__ import annotations

import torch
from hostile import (  # this file's folder is on the path, as `python file.py` has it
    Hostile,
    bad_marker,
    closes_stderr,
    escapes,
    forks_itself,
    spawns_escaped,
    spawns_inheriting_stderr,
    spawns_quiet,
)


def every_helper() -> torch.nn.Module:
    """Every helper that ends with an ``ok`` run: one that holds the stderr pipe, one escaped
    to a session of its own, one on /dev/null, and a forked copy of the agent; then the model
    closes its own fd 2 (the helpers still hold the pipe)."""
    for start in (spawns_inheriting_stderr, spawns_escaped, spawns_quiet, forks_itself):
        start()
    return closes_stderr()


def marker_and_escapes() -> torch.nn.Module:
    """In its fourth pass, forged marker lines, then escape sequences, on its stderr."""
    acts = [bad_marker().at_call, escapes().at_call]

    def act() -> None:
        for one in acts:
            one()

    return Hostile(at_call=act)
