"""Explanations the data carries, with real children: a cause only where a second process
reproduced the slow call, the share of the excess it accounts for when that is under half,
and contention measured (real CPU hogs beside the run) rather than called warm-up."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import TARGETS, Result, running, warmscope
from warmscope.core.data import first_call, schema, waits
from warmscope.core.data.document import read_document
from warmscope.core.data.record import read_run
from warmscope.core.data.run import RunData
from warmscope.core.output.report import report

MODELS = TARGETS / "explanations.py"
HOGGED = 40
"""The calls ``hogs_at_start`` runs beside its hogs."""
CORES = len(os.sched_getaffinity(0))
HOG = "while True:\n    pass"


def measured_record(record_dir: Path) -> Path:
    """The run's own record (beside it, the explaining process's ``*.explain.jsonl``)."""
    (record,) = [p for p in record_dir.glob("*.jsonl") if not p.name.endswith(".explain.jsonl")]
    return record


def explained_line(stdout: str) -> str:
    return next(ln for ln in stdout.splitlines() if ln.startswith("explained  #0 "))


def test_a_call_slow_only_in_the_first_process_is_not_reproduced_and_named_for_nothing(
    record_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran-once"
    r = warmscope(
        "run", f"{MODELS}:slow_in_first_process", "--iters", "60",
        json_path=tmp_path / "r.json", env={"WARMSCOPE_TEST_MARKER": str(marker)},
    )  # fmt: skip
    assert r.code == 0, r.stderr
    assert "explaining the slow first call #0" in r.stderr
    line = explained_line(r.stdout)
    assert "first call: not reproduced in a second process" in line, r.stdout
    assert "in this run" in line and "—" not in line  # what the run saw, and no cause
    assert r.doc is not None
    (note,) = r.doc["summary"]["first_calls"]
    assert note["reproduced"] is False and note["share"] is None and note["leading"] == []
    assert note["run_excess_ms"] > 150 and note["excess_ms"] < 0.25 * note["run_excess_ms"]
    (event,) = r.events("explained")
    assert event["data"]["reproduced"] is False
    # A reader of the record later says the same: the record carries what decided it.
    data = read_run(measured_record(record_dir))
    (again,) = first_call.notes(data)
    assert again["reproduced"] is False and again["label"] == note["label"]
    assert note["label"] in report(data)


def test_a_cause_that_covers_under_half_the_excess_says_its_share(
    record_dir: Path, tmp_path: Path
) -> None:
    r = warmscope("run", f"{MODELS}:spread_once", "--iters", "60", json_path=tmp_path / "r.json")
    assert r.code == 0, r.stderr
    assert r.doc is not None
    (note,) = r.doc["summary"]["first_calls"]
    assert note["reproduced"] is True, note
    assert 0 < note["share"] < first_call.SHARE_SAID
    said = f" for {note['share']:.0%} of "
    assert said in note["label"] and said in explained_line(r.stdout)
    (event,) = r.events("explained")
    assert event["data"]["share"] == note["share"]


@contextmanager
def hogs(n: int) -> Iterator[None]:
    """``n`` real busy processes beside the run, ended whatever happens."""
    procs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_run_beside_busy_processes_names_contention(record_dir: Path, tmp_path: Path) -> None:
    """The busy processes start as the first call begins (the model waits for them): the
    calls wait for a core, not the run's start-up, which they would only make longer."""
    marker = tmp_path / "first-call"
    with running(
        "run", f"{MODELS}:products_beside", "--iters", "30", "--no-explain",
        "--json", str(tmp_path / "r.json"),
        env=dict(os.environ, WARMSCOPE_TEST_MARKER=str(marker)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        with hogs(CORES + 1):
            time.sleep(0.3)  # the hogs are running before the first call's work
            Path(f"{marker}.go").touch()
            stdout, stderr = proc.communicate(timeout=120)
    written = tmp_path / "r.json"
    doc = json.loads(written.read_text()) if written.exists() else None
    r = Result(proc.returncode, stdout, stderr, doc)
    assert r.code == 0, r.stderr
    assert r.doc is not None
    contention = r.doc["summary"]["contention"]
    assert contention["contended_calls"] > 10 and contention["wait_ms"] > 0, contention
    assert contention["cpus"] == CORES
    warned = [w for w in r.doc["warnings"] if w.startswith("CPU contention: ")]
    assert warned and "waited for a core" in warned[0] and f"on {CORES} CPU" in warned[0]
    assert "warning    CPU contention: " in r.stdout
    # The readings go into the record and the document, and read back the same.
    data = read_run(measured_record(record_dir))
    assert data.cpu_waits and read_document(r.doc, tmp_path / "r.json").cpu_waits == data.cpu_waits


def test_a_contended_stretch_is_neither_warm_up_nor_steady(
    record_dir: Path, tmp_path: Path
) -> None:
    r = warmscope(
        "run", f"{MODELS}:hogs_at_start", "--iters", "150", "--no-explain",
        json_path=tmp_path / "r.json",
    )  # fmt: skip
    assert r.code == 0, r.stderr
    assert r.doc is not None
    data = read_run(measured_record(record_dir))
    after = [
        w for w in data.cpu_waits
        if w.since > HOGGED + 3 and waits.contended(w, data.latency, data.count)
    ]  # fmt: skip
    if after:  # what the hogs did cannot be told from what the machine did
        pytest.skip(f"the machine was busy after the hogs too: {len(after)} contended readings")
    summary = r.doc["summary"]
    left_out = summary["contention"]["left_out"]
    assert left_out >= 5, summary["contention"]
    warmup = next(ln for ln in r.stdout.splitlines() if ln.startswith("warm-up "))
    said = re.search(r"\((\d+) waiting for a core left out\)", warmup)
    assert said and 5 <= int(said[1]) <= left_out, warmup
    counted, steady_from = int(warmup.split()[1]), summary["steady_from"]
    assert counted == steady_from - int(said[1]), warmup  # the hogged calls are not warm-up
    rows = [ln for ln in r.stdout.splitlines() if "CPU contention: waited " in ln]
    assert rows and " for a core (load " in rows[0], r.stdout
    # What is left out is the hogged stretch, not calls after it.
    assert max(data.contended_left_out()) <= HOGGED + 3, data.contended_left_out()


def test_more_threads_than_usable_cores_are_named_with_the_fix(
    record_dir: Path, tmp_path: Path
) -> None:
    threads = CORES + 3
    r = warmscope(
        "run", f"{TARGETS}/factories.py:tiny", "--input", "4x8", "--duration", "1.5",
        "--set", f"intra_op_threads={threads}", "--no-explain",
    )  # fmt: skip
    assert r.code == 0, r.stderr
    said = f"torch runs {threads} intra-op threads on {CORES} usable core(s)"
    fix = f"--set intra_op_threads={CORES}"
    at_start = [ln for ln in r.stderr.splitlines() if said in ln]
    assert at_start and fix in at_start[0], r.stderr
    assert f"warning    {said}" in r.stdout


@pytest.mark.parametrize(
    "line",
    [
        {"type": "waits", "since": [0], "it": [0, 1], "ns": [5], "cs": [1]},
        {"type": "waits", "since": [3], "it": [2], "ns": [5], "cs": [1]},
        {"type": "waits", "since": [0], "it": [0], "ns": [-5], "cs": [1]},
        {"type": "waits", "since": "0", "it": [0], "ns": [5], "cs": [1]},
    ],
)
def test_a_waits_line_of_the_wrong_shape_is_refused(line: dict[str, object]) -> None:
    with pytest.raises(schema.FOLD_ERRORS):
        schema.check_line(line)
    assert RunData().cpu_waits == []
