"""How a run ended, from the agent's return code and what the session saw: ``classify`` over
its cases, with no child at all (``test_hostile``/``test_reliability`` end real ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import warmscope
from warmscope.core.child import outcome
from warmscope.core.run.ending import Ending, Seen, cause_line, classify, one_line

FAULT = Ending(outcome.FAILED, "the child broke the protocol: garbage", outcome.EXIT_FAILED)
ERROR = {"iteration": 3, "message": "RuntimeError: shapes differ\n  at line 2"}
SETUP_ERROR = {"iteration": None, "where": "load", "message": "ImportError: no module"}
USAGE_ERROR = {"where": "inputs", "message": "--input: 2 given, the model takes 1", "usage": True}
DONE = {"t": "done", "status": outcome.OK}
DONE_STOPPED = {"t": "done", "status": outcome.STOPPED}
NOT_A_PYTHON = "--python /bin/ls is not a Python interpreter that can run warmscope's agent"

CASES = [
    pytest.param(0, Seen(fault=FAULT, done=DONE, hello=True), FAULT, id="a fault wins"),
    pytest.param(
        -9,
        Seen(timeout=2.5, stop_requested=True, hello=True),
        Ending(outcome.TIMEOUT, "stopped after --timeout 2.5 s", outcome.EXIT_FAILED),
        id="timeout",
    ),
    pytest.param(
        1,
        Seen(error=ERROR, hello=True),
        Ending(outcome.FAILED, "iteration 3: RuntimeError: shapes differ …", outcome.EXIT_FAILED),
        id="an error in an iteration, in one line",
    ),
    pytest.param(
        1,
        Seen(error=SETUP_ERROR, hello=True),
        Ending(outcome.FAILED, "load: ImportError: no module", outcome.EXIT_FAILED),
        id="an error in a phase",
    ),
    pytest.param(
        2,
        Seen(error=USAGE_ERROR, hello=True),
        Ending(outcome.FAILED, "--input: 2 given, the model takes 1", outcome.EXIT_USAGE),
        id="an error of the user's input",
    ),
    pytest.param(
        0,
        Seen(done=DONE, hello=True, iterations=40),
        Ending(outcome.OK, "40 iterations", outcome.EXIT_OK),
        id="done",
    ),
    pytest.param(
        0,
        Seen(done=DONE_STOPPED, stop_requested=True, hello=True),
        Ending(outcome.STOPPED, "stopped by the user", outcome.EXIT_STOPPED),
        id="done after a stop",
    ),
    pytest.param(
        -15,
        Seen(stop_requested=True, hello=True),
        Ending(outcome.STOPPED, "stopped by the user", outcome.EXIT_STOPPED),
        id="stopped without a word",
    ),
    pytest.param(
        -9,
        Seen(stop_requested=True, killed=True, hello=True),
        Ending(outcome.STOPPED, "killed by the user", outcome.EXIT_STOPPED),
        id="killed",
    ),
    pytest.param(
        2,
        Seen(python="/bin/ls"),
        Ending(
            outcome.FAILED,
            f"{NOT_A_PYTHON} (it exited with 2 without starting it)",
            outcome.EXIT_USAGE,
        ),
        id="an interpreter that never spoke",
    ),
    pytest.param(
        -6,
        Seen(python="/bin/ls"),
        Ending(
            outcome.FAILED,
            f"{NOT_A_PYTHON} (it died from signal 6 without starting it)",
            outcome.EXIT_USAGE,
        ),
        id="an interpreter that died without a word",
    ),
    pytest.param(
        -11,
        Seen(hello=True, iterations=7),
        Ending(outcome.CRASHED, "the child died from SIGSEGV", outcome.EXIT_FAILED),
        id="signal death",
    ),
    pytest.param(
        -11,
        Seen(python="/usr/bin/python3", hello=True),
        Ending(outcome.CRASHED, "the child died from SIGSEGV", outcome.EXIT_FAILED),
        id="signal death under --python",
    ),
    pytest.param(
        -200,
        Seen(hello=True),
        Ending(outcome.CRASHED, "the child died from 200", outcome.EXIT_FAILED),
        id="a signal with no name",
    ),
    pytest.param(
        3,
        Seen(hello=True),
        Ending(
            outcome.CRASHED, "the child exited with code 3 before finishing", outcome.EXIT_FAILED
        ),
        id="an exit code before done",
    ),
    pytest.param(
        0,
        Seen(),
        Ending(
            outcome.CRASHED, "the child exited with code 0 before finishing", outcome.EXIT_FAILED
        ),
        id="a clean exit that never said done",
    ),
]


@pytest.mark.parametrize(("returncode", "seen", "expected"), CASES)
def test_endings(returncode: int, seen: Seen, expected: Ending) -> None:
    assert classify(returncode, seen) == expected


def test_a_detail_is_one_short_line() -> None:
    assert one_line("a\nb") == "a …"
    assert one_line("\n\n  only  \n") == "only"
    assert one_line("x" * 300) == "x" * 199 + "…"


def test_running_out_of_memory_is_named_before_the_signal_it_shows_as() -> None:
    seen = Seen(oom="the OOM killer ended it at --memory-limit 3G", hello=True)
    ending = classify(-9, seen)
    assert ending == Ending(
        "failed", "out of memory: the OOM killer ended it at --memory-limit 3G", 1
    )
    assert classify(-9, Seen(hello=True)).detail == "the child died from SIGKILL"


TORCHSCRIPT_ERROR = """RuntimeError: The following operation failed in the TorchScript interpreter.
Traceback of TorchScript (most recent call last):
  File "speech.py", line 12, in forward
RuntimeError: Given groups=1, weight of size [64, 40, 5], expected input[1, 41, 300] to have 40 channels, but got 41 channels instead
"""


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            TORCHSCRIPT_ERROR,
            "RuntimeError: Given groups=1, weight of size [64, 40, 5], expected input[1, 41, 300] "
            "to have 40 channels, but got 41 channels instead",
            id="the TorchScript interpreter's lead-in gives way to the exception inside it",
        ),
        pytest.param("ValueError: bad\n  detail line", "ValueError: bad …", id="a plain message"),
        pytest.param(
            "KeyError: 'a'\nsee also\ntorch.fx.TraceError: symbolic",
            "torch.fx.TraceError: symbolic",
            id="a dotted exception name",
        ),
        pytest.param("RuntimeError: one line", "RuntimeError: one line", id="one line"),
    ],
)
def test_the_cause_line(message: str, expected: str) -> None:
    assert cause_line(message) == expected


def test_a_failed_runs_closing_line_names_the_cause(record_dir: Path) -> None:
    """A real TorchScript archive fed the wrong channel count: torch's own cause closes the run."""

    r = warmscope("run", "sample:speech", "--input", "1x300x41", "--iters", "3")
    assert r.code == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("warmscope: run failed: iteration 0: RuntimeError: Given groups=1")
    assert "to have 40 channels, but got 41 channels instead" in last
