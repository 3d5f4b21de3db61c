"""An agent's messages are named once (``protocol.MESSAGES``): every name the Python agent and
the C++ agent write is declared there, and every declared message that is recorded is the
record line kind of its name (``schema.KINDS``), so a message cannot be sent that nothing
folds, nor a kind declared that no agent sends but the parent's own."""

from __future__ import annotations

import re
from pathlib import Path

from warmscope.core.child import protocol
from warmscope.core.data import schema

CHILD = Path(protocol.__file__).parent
PARENTS_OWN = {"header", "spawned", "sample", "end", "exec", "callers"}
"""The lines the parent writes of itself: the run's header, the agent's pid, its own samples
of the child's use, and how the run ended; and what ``warmscope exec`` folds a watched
process's stream into beside its calls (``core/run/exec_fold.py``)."""


def names_written(path: Path, *patterns: str) -> set[str]:
    text = path.read_text()
    return {name for pattern in patterns for name in re.findall(pattern, text)}


def test_every_message_an_agent_writes_is_declared() -> None:
    python: set[str] = set()
    for path in CHILD.glob("*.py"):
        # The --host guardian's and a watched program's streams are protocols of their own.
        if path.name != "remote_guardian.py" and not path.name.startswith("exec_"):
            python |= names_written(path, r'"t":\s*"(\w+)"')
    cpp = names_written(
        CHILD / "cpp_agent.cpp", r'Message(?:\s+\w+)?\s*[({]"(\w+)"[)}]', r'\\"t\\":\\"(\w+)\\"'
    )
    assert {"hello", "iters", "event", "done"} <= python & cpp  # the patterns find the names
    assert python - set(protocol.MESSAGES) == set()
    assert cpp - set(protocol.MESSAGES) == set()
    assert set(protocol.MESSAGES) - python == set()  # none declared that no agent sends


def test_every_recorded_message_is_a_kind_and_every_kind_a_message_or_the_parents() -> None:
    recorded = set(protocol.MESSAGES) - set(protocol.MOMENT_ONLY)
    assert recorded - set(schema.KINDS) == set()
    assert set(schema.KINDS) - recorded == PARENTS_OWN
    for name, kind in schema.KINDS.items():
        if kind.from_agent:
            assert name in recorded, name
