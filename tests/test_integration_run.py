"""Headless `warmscope run` end to end: real child process, real torch, real pipes."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FACTORIES, Result, running, warmscope
from warmscope.core.data.record import read_run

ONE_THREAD = ("--set", "intra_op_threads=1", "--set", "inter_op_threads=1")


@pytest.fixture(scope="module")
def speech_defaults(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """The libtorch thread's model, scripted, with the TorchScript defaults."""
    tmp = tmp_path_factory.mktemp("speech")
    return warmscope(
        "run",
        "sample:speech",
        "--preset",
        "torchscript",
        "--iters",
        "25",
        *ONE_THREAD,
        "--no-explain",
        "--record",
        str(tmp / "run.jsonl"),
        json_path=tmp / "run.json",
    )


@pytest.fixture(scope="module")
def speech_no_profiling(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """The same model and iterations with the profiling executor off, through an interpreter
    named by ``--python`` (this one): the other side of the profiling run's tests."""
    tmp = tmp_path_factory.mktemp("speech_off")
    return warmscope(
        "run",
        "sample:speech",
        "--preset",
        "no-profiling",
        "--iters",
        "25",
        *ONE_THREAD,
        "--python",
        sys.executable,
        "--no-explain",
        "--record",
        str(tmp / "off.jsonl"),
        json_path=tmp / "off.json",
    )


def jit_titles(result: Result, iteration: int) -> list[str]:
    return [e["title"] for e in result.events("jit") if e["iteration"] == iteration]


def test_profiling_executor_warmup_is_pinned_to_iterations(speech_defaults: Result) -> None:
    r = speech_defaults
    assert r.code == 0, r.stderr
    assert "Profiled Graph" in jit_titles(r, 0)
    assert "Optimized Graph" in jit_titles(r, 1)
    assert "Profiled Graph" not in jit_titles(r, 1)
    rows = r.doc["iterations"]
    assert rows[0]["label"] == "profiling run"
    assert rows[1]["label"] == "optimization"
    assert all("label" not in row for row in rows[2:])
    summary = r.doc["summary"]
    assert summary["steady_from"] >= 2
    for key in ("first_ms", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "warmup_excess_ms"):
        assert summary[key] > 0
    # The summary on stdout names the slow iterations with their events' titles.
    assert "profiling run" in r.stdout and "Profiled Graph" in r.stdout


def test_json_document_and_record_agree(speech_defaults: Result, tmp_path: Path) -> None:
    doc = speech_defaults.doc
    assert doc["status"] == "ok" and doc["exit_code"] == 0
    assert [row["i"] for row in doc["iterations"]] == list(range(25))
    assert doc["iterations"][0]["start_ms"] < doc["iterations"][1]["start_ms"]
    assert {p["name"] for p in doc["phases"]} >= {"import torch", "load", "script", "inputs"}
    assert doc["env"]["torch"].startswith("2.") and doc["env"]["cpu_logical"] >= 1
    assert doc["env"]["intra_op_threads"] == 1
    assert doc["settings"]["knobs"]["intra_op_threads"] == 1
    assert doc["samples"], "the parent sampled the child"
    assert {"cpu", "rss_mb", "threads", "sys_cpu"} <= set(doc["samples"][0])
    assert all(set(e) >= {"iteration", "kind", "title", "text"} for e in doc["events"])
    record = read_run(Path(doc["record"]))
    assert record.count == 25 and record.status == "ok"
    assert list(record.ms) == [row["ms"] for row in doc["iterations"]]
    assert record.label(0) == "profiling run"


def test_profiling_executor_off_removes_the_profiling_run(
    speech_defaults: Result, speech_no_profiling: Result
) -> None:
    off = speech_no_profiling
    assert off.code == 0, off.stderr
    assert off.doc["settings"]["knobs"]["profiling_executor"] is False
    assert not any(e["title"] == "Profiled Graph" for e in off.events("jit"))
    assert "label" not in off.doc["iterations"][0]

    def first_excess(r: Result) -> float:
        return r.doc["summary"]["first_ms"] - r.doc["summary"]["p50_ms"]

    assert first_excess(off) < first_excess(speech_defaults)


@pytest.fixture(scope="module")
def ctrl_c_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    """A model that prints a variable the run's settings put in its environment, one thread,
    stopped by Ctrl-C once it iterates: one child for the stop's tests and the knobs'."""
    tmp = tmp_path_factory.mktemp("ctrl_c")
    json_path, record = tmp / "stopped.json", tmp / "s.jsonl"
    with running(
        *("run", f"{FACTORIES}:env_echo"),
        *("--input", "1", "--duration", "60", "--gap", "0.05", "--no-explain"),
        *("--set", "env.WARMSCOPE_TEST_VALUE=hello", "--set", "intra_op_threads=1"),
        *("--record", str(record), "--json", str(json_path)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and '"type":"iters"' not in _read(record):
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    doc = json.loads(json_path.read_text()) if json_path.exists() else None
    return Result(proc.returncode, out, err, doc), record


def test_ctrl_c_stops_and_still_reports(ctrl_c_run: tuple[Result, Path]) -> None:
    r, record = ctrl_c_run
    assert r.code == 130, r.stderr
    assert r.doc is not None and r.doc["status"] == "stopped"
    assert len(r.doc["iterations"]) > 0
    assert "status=stopped" in r.stdout
    assert read_run(record).status == "stopped"


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_child_env_and_threads_knobs_reach_the_child(ctrl_c_run: tuple[Result, Path]) -> None:
    r, _ = ctrl_c_run
    assert r.doc is not None and r.doc["status"] == "stopped", r.stderr  # by the test, no fault
    echoed = [e for e in r.events("stderr") if "WARMSCOPE_TEST_VALUE=hello" in e["text"]]
    # Printed from forward with no log capture on: still pinned to its exact iteration.
    assert echoed and echoed[0]["iteration"] == 0
    assert not echoed[0].get("data", {}).get("approx_iteration")
    assert r.doc["env"]["intra_op_threads"] == 1


def test_compare_two_records(speech_defaults: Result, speech_no_profiling: Result) -> None:
    r = warmscope("compare", speech_defaults.doc["record"], speech_no_profiling.doc["record"])
    assert r.code == 0, r.stderr
    lines = r.stdout.splitlines()
    first = next(line for line in lines if line.startswith("first_ms"))
    # A ratio, and no verdict: one process each cannot tell a first iteration apart.
    assert re.search(r"\d\.\d\d× 1 process each$", first.rstrip()), first
    assert any(line.startswith("steady_from") for line in lines)
    # Settings that differ.
    assert any(line.strip().startswith("profiling_executor") for line in lines), r.stdout


def test_events_arrive_while_the_run_goes_on(tmp_path: Path) -> None:
    """The Optimized Graph of iteration 1 reaches a consumer long before the run ends."""
    from warmscope.core.data.run import Cursor
    from warmscope.core.data.settings import RunSettings
    from warmscope.core.run.session import RunSession

    settings = RunSettings(target="sample:speech", duration=30)
    settings.set("intra_op_threads=1")
    session = RunSession(settings, record_path=tmp_path / "live.jsonl")
    session.start()
    cursor = Cursor()
    seen: list[tuple[int | None, str]] = []
    try:
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and ("Optimized Graph" not in [t for _, t in seen]):
            update = session.poll(cursor)
            seen += [(e.iteration, e.title) for e in update.events]
            time.sleep(0.05)
        assert (1, "Optimized Graph") in seen
        assert not session.finished.is_set(), "seen while the run was still going"
    finally:
        session.stop()
        session.wait(30)
