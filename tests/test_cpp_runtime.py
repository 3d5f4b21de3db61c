"""``--runtime cpp``: TorchScript archives in the C++ agent, a real C++ child with real libtorch
and real pipes, read by the same session, attribution and record as a Python child."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import warmscope
from warmscope.core.child.agent import MARK_EVERY_ITERATION
from warmscope.core.data import env_keys
from warmscope.core.data.reading import read_run
from warmscope.core.data.run import Cursor, Event
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.session import RunSession

ROOT = Path(__file__).resolve().parent.parent
PRINT_AT = 5  # tests/targets/cpp_archives.py


def cpp(target: Path, **kw: object) -> RunSettings:
    settings = RunSettings(target=str(target), **kw)  # type: ignore[arg-type]
    settings.set("runtime=cpp")
    settings.set("intra_op_threads=1")
    return settings


def run_to_end(settings: RunSettings, path: Path) -> RunSession:
    session = RunSession(settings, record_path=path)
    session.start()
    assert session.wait(120), "the run ended"
    return session


def jit_events(events: list[Event]) -> dict[str, list[int | None]]:
    found: dict[str, list[int | None]] = {}
    for e in events:
        if e.kind == "jit" and e.iteration is not None:
            found.setdefault(e.title, []).append(e.iteration)
    return found


@pytest.mark.parametrize("scheme", ["watch", "every"])
def test_the_profiling_executors_dumps_are_pinned_to_iterations_0_and_1(
    scheme: str, cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """As in Python: the profiling run's dump in iteration 0, the optimized graph in 1, each
    line exact (the markers name the iteration), with the SIGIO watch and with a marker after
    every iteration."""
    settings = cpp(cpp_archives / "speech.pt", inputs=["1x300x40"], iters=20)
    if scheme == "every":
        settings.env[MARK_EVERY_ITERATION] = "1"
    session = run_to_end(settings, tmp_path / "run.jsonl")
    data = session.data
    assert data.status == "ok" and data.count == 20, data.status_detail
    jit = jit_events(data.events)
    assert jit["Profiled Graph"] == [0]
    assert jit["Optimized Graph"] == [1]
    assert not any(e.data.get("approx_iteration") for e in data.events if e.iteration is not None)
    if scheme == "watch":
        assert session.iteration_markers <= 4, "markers after the iterations that logged only"
    else:
        assert session.iteration_markers >= 20
    assert data.env["runtime"] == "cpp"
    assert data.env["cpp_agent"]["path"] == str(cpp_agent)
    assert data.env["torch"].startswith("2.")
    assert "python" not in data.env  # no interpreter in the child
    assert set(data.env) <= set(env_keys.KEYS)  # every key the C++ child writes is declared
    assert list(data.phases)[:2] == ["start to main", "apply knobs"]
    assert {"load", "inputs"} <= set(data.phases)
    assert 0 < data.phases["start to main"] < 30_000
    assert data.inputs == ["float32[1,300,40]"]
    assert "forward" in data.graphs["code"] and "Optimized" not in data.graphs["graph"]
    assert data.graphs["optimized"].startswith("graph(")
    # The record reads back as the live run held it.
    again = read_run(tmp_path / "run.jsonl")
    assert again.count == 20 and jit_events(again.events) == jit


def test_the_graph_optimizer_off_is_honoured(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """``graph_optimizer=off`` (C++'s GraphOptimizerEnabledGuard(false), the seed thread's
    fix): no profiling run and no optimization, so neither dump, and a first call near steady."""
    settings = cpp(cpp_archives / "speech.pt", inputs=["1x300x40"], iters=12)
    settings.set("graph_optimizer=off")
    data = run_to_end(settings, tmp_path / "off.jsonl").data
    assert data.status == "ok" and data.count == 12, data.status_detail
    jit = jit_events(data.events)
    assert "Profiled Graph" not in jit and "Optimized Graph" not in jit
    assert data.settings.knobs["graph_optimizer"] is False


def test_a_scripted_print_is_pinned_without_log_capture(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """No log capture on (no markers after iterations): TorchScript's print still lands in
    its own iteration, marked before its first line as Python's prints are."""
    settings = cpp(cpp_archives / "printer.pt", inputs=["2x8"], iters=10, jit_log="")
    data = run_to_end(settings, tmp_path / "print.jsonl").data
    assert data.status == "ok", data.status_detail
    printed = [e for e in data.events if "scripted print in call" in e.text + e.title]
    assert [e.iteration for e in printed] == [PRINT_AT]
    assert not printed[0].data.get("approx_iteration")


def test_inputs_specs_files_and_keywords(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """Keyword arguments by name (``NAME=``), and ``--inputs`` files torch.save wrote: a
    tensor, a tuple, a dict of keyword arguments."""
    settings = cpp(cpp_archives / "keywords.pt", inputs=["2x8", "scale=2x8:fill(3)"], iters=3)
    data = run_to_end(settings, tmp_path / "kw.jsonl").data
    assert data.status == "ok", data.status_detail
    assert data.inputs == ["float32[2,8]", "scale=float32[2,8]"]
    for name, want in (("one.pt", ["float32[1,300,40]"]), ("dict.pt", None)):
        target = cpp_archives / ("speech.pt" if name == "one.pt" else "keywords.pt")
        data = run_to_end(
            cpp(target, inputs_file=str(cpp_archives / name), iters=2), tmp_path / f"{name}.jsonl"
        ).data
        assert data.status == "ok", data.status_detail
        assert data.inputs == (want or ["x=float32[2,8]", "scale=float32[2,8]"])


def test_shapes_follow_the_schedule_python_serves(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """``--dim`` with ``--schedule random``: the same shapes, in the same order, as the Python
    agent serves from the same seed (the C++ agent draws from Python's own generator)."""
    orders = {}
    for runtime in ("cpp", "python"):
        settings = RunSettings(
            target=str(cpp_archives / "speech.pt"),
            inputs=["1xTx40"],
            dims=["T=100,200,300"],
            schedule="random",
            seed=7,
            iters=12,
        )
        settings.set(f"runtime={runtime}")
        data = run_to_end(settings, tmp_path / f"{runtime}.jsonl").data
        assert data.status == "ok", data.status_detail
        orders[runtime] = list(data.shape_of)
    assert orders["cpp"] == orders["python"]
    assert len(set(orders["cpp"])) > 1


def test_a_failing_forward_names_its_iteration(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """Inputs the model refuses: the run fails in iteration 0 with libtorch's own message."""
    data = run_to_end(
        cpp(cpp_archives / "speech.pt", inputs=["1x300x41"], iters=5), tmp_path / "bad.jsonl"
    ).data
    assert data.status == "failed" and data.exit_code == 1
    assert data.error is not None and data.error["iteration"] == 0
    assert data.error["exception"] == "RuntimeError"
    assert "iteration 0" in data.status_detail


def test_a_stop_ends_the_run_after_the_iteration_in_progress(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """SIGINT (warmscope's stop): the C++ child finishes the call in progress, sends what it
    measured and exits as stopped."""
    settings = cpp(cpp_archives / "speech.pt", inputs=["1x300x40"], duration=60)
    session = RunSession(settings, record_path=tmp_path / "stop.jsonl")
    session.start()
    cursor, count = Cursor(), 0
    deadline = time.monotonic() + 60
    while count < 5 and time.monotonic() < deadline:
        count += len(session.poll(cursor).ms)
        time.sleep(0.05)
    session.stop()
    assert session.wait(30)
    assert session.data.status == "stopped", session.data.status_detail
    assert session.data.exit_code == 130 and session.data.count >= 5


def test_the_child_ends_when_its_parent_goes(cpp_agent: Path, cpp_archives: Path) -> None:
    """Its parent killed (no chance to stop it), the C++ child ends by itself: the
    parent-death signal, and EOF on its stdin."""
    config = {
        "target": {"spec": "speech.pt", "kind": "archive", "path": str(cpp_archives / "speech.pt")},
        "inputs": [{"dtype": "float32", "shape": [1, 300, 40]}],
        "mode": "script",
        "knobs": {"device": "cpu", "intra_op_threads": 1},
        "iters": 10**9,
        "ring_slots": 16,
    }
    line = json.dumps(config).encode() + b"\n"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            f"p = subprocess.Popen([{str(cpp_agent)!r}], stdin=subprocess.PIPE, "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            f"p.stdin.write({line!r}); p.stdin.flush()\n"
            "print(p.pid, flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(1.0)
    os.kill(child, 0)  # running
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_the_cli_runs_an_archive_in_cpp(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """``warmscope run --runtime cpp``: the summary names the runtime and C++'s phases; the
    reproduce line gives the runtime back."""
    out = tmp_path / "run.json"
    r = warmscope(
        "run",
        str(cpp_archives / "speech.pt"),
        "--runtime",
        "cpp",
        "--input",
        "1x300x40",
        "--iters",
        "10",
        "--no-explain",
        json_path=out,
    )
    assert r.code == 0, r.stderr
    assert "runtime=cpp" in r.stdout and "start to main" in r.stdout
    assert r.doc is not None and r.doc["settings"]["knobs"]["runtime"] == "cpp"
    settings = RunSettings.from_json(r.doc["settings"])
    assert "runtime=cpp" in " ".join(settings.command_line())


def test_a_sigint_to_the_agent_itself_is_a_stop(cpp_agent: Path, cpp_archives: Path) -> None:
    """The agent alone (no session): SIGINT mid-run, then ``done`` with status stopped and
    exit 130, the protocol whole."""
    config = {
        "target": {"spec": "speech.pt", "kind": "archive", "path": str(cpp_archives / "speech.pt")},
        "inputs": [{"dtype": "float32", "shape": [1, 300, 40]}],
        "mode": "script",
        "knobs": {"device": "cpu", "intra_op_threads": 1},
        "iters": 10**9,
        "ring_slots": 16,
    }
    proc = subprocess.Popen(
        [str(cpp_agent)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(config).encode() + b"\n")
    proc.stdin.flush()
    lines = []
    while not any(b'"t":"iters"' in ln for ln in lines):
        lines.append(proc.stdout.readline())
    proc.send_signal(signal.SIGINT)
    lines += proc.stdout.read().splitlines()
    assert proc.wait(30) == 130
    messages = [json.loads(ln) for ln in lines if ln.strip()]
    assert messages[0]["t"] == "hello" and messages[-1] == {
        "t": "done",
        "status": "stopped",
        "iterations": messages[-1]["iterations"],
    }
