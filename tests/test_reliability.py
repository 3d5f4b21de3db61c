"""Faults lose nothing and leave nothing running: planted faults in a real child, headless.

Each fault strikes in iteration K = 3 (tests/faults/planted.py). After every case no process
carrying the run's id (WARMSCOPE_RUN_ID, inherited by everything the child starts) survives.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.conftest import PLANTED, K, Result, run_id_of, survivors, wait_gone, warmscope
from warmscope.core.data.record import read_run
from warmscope.core.run.ending import Seen, classify

CASES = [
    # (target, extra args, status, words in the detail, iterations kept)
    ("raises", [], "failed", "planted failure in iteration 3", K),
    # A fault that kills the child; how an exit code instead of a signal reads is a verdict
    # (test_a_child_that_exits_mid_run_is_a_crash_naming_its_code).
    ("segfault", [], "crashed", "SIGSEGV", K),
    # A pass that outlives --timeout: the run is bounded, what was measured before it kept.
    ("hangs", ["--timeout", "10"], "timeout", "--timeout 10", K),  # room to start when busy
    ("allocates", [], "failed", "can't allocate memory", K),
    # A model that fails while it loads: its file imports a dependency that is not installed
    # (a factory that raises, planted.py:raises_while_loading, fails at the same place).
    ("missing_import", [], "failed", "No module named 'warmscope_no_such_dependency'", 0),
]
MISSING_IMPORT = PLANTED.with_name("missing_import.py")


@pytest.fixture(scope="module")
def faults(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Result, Path]]:
    """One run per planted fault for the whole module, started when a test first asks for it:
    the tests that read the same fault (its outcome, its crash text) share that child."""
    done: dict[str, tuple[Result, Path]] = {}

    def run(target: str) -> tuple[Result, Path]:
        if target not in done:
            extra = next(c[1] for c in CASES if c[0] == target)
            tmp = tmp_path_factory.mktemp(target)
            record = tmp / "r.jsonl"
            r = warmscope(
                "run",
                f"{MISSING_IMPORT}:make_model"
                if target == "missing_import"
                else f"{PLANTED}:{target}",
                "--input",
                "4",
                "--iters",
                "20",
                *extra,
                "--no-explain",  # what is under test is the run; a profile process would double it
                "--record",
                str(record),
                json_path=tmp / "r.json",
                env={"FAULT_MEMORY_LIMIT": str(3 * 2**30)},
            )
            done[target] = (r, record)
        return done[target]

    return run


@pytest.mark.parametrize(
    ("target", "extra", "status", "detail", "kept"), CASES, ids=[c[0] for c in CASES]
)
def test_fault_outcome(
    target: str,
    extra: list[str],
    status: str,
    detail: str,
    kept: int,
    faults: Callable[[str], tuple[Result, Path]],
) -> None:
    r, record = faults(target)
    assert r.code == 1, r.stderr
    assert r.doc is not None, "--json is written whatever the outcome"
    assert r.doc["status"] == status
    assert detail in r.doc["status_detail"] or detail in (r.doc["error"] or {}).get("message", "")
    assert len(r.doc["iterations"]) == kept
    assert read_run(record).count == kept
    assert f"run {status}" in r.stderr
    assert survivors(run_id_of(record)) == []


def test_a_model_error_reaches_the_user_and_the_record_whole(
    faults: Callable[[str], tuple[Result, Path]],
) -> None:
    """The model's own words on stderr; the error's details reach the record too, not only
    the --json document."""
    r, record = faults("raises")
    assert "planted failure in iteration 3" in r.stderr
    assert r.doc is not None and r.doc["error"]["iteration"] == K
    data = read_run(record)
    assert data.error is not None and data.error["exception"] == "ValueError"
    assert data.error["iteration"] == K
    assert "planted failure in iteration 3" in data.error["traceback"]


def test_a_child_that_exits_mid_run_is_a_crash_naming_its_code() -> None:
    """``planted.py:exits`` (``os._exit(7)`` in iteration K) ends as the segfault does: no
    ``done``, the agent gone mid-run; its verdict names the code."""
    ending = classify(7, Seen(hello=True, iterations=K))
    assert ending.status == "crashed" and ending.exit_code == 1
    assert "exited with code 7" in ending.detail


def test_missing_dependency_of_the_model_file(
    faults: Callable[[str], tuple[Result, Path]],
) -> None:
    r, _ = faults("missing_import")
    assert r.code == 1  # the model's own import failed: not a usage error
    assert "No module named 'warmscope_no_such_dependency'" in r.stderr
    assert r.doc is not None and r.doc["status"] == "failed"


def test_crash_text_is_pinned_and_shown(faults: Callable[[str], tuple[Result, Path]]) -> None:
    r, _ = faults("segfault")
    assert r.doc is not None
    crash = [e for e in r.doc["events"] if "Segmentation fault" in e["title"]]
    assert crash and crash[0]["iteration"] == K
    assert "Segmentation fault" in r.stderr  # the child's last stderr lines


def test_stdout_writes_cannot_corrupt_the_protocol(tmp_path: Path) -> None:
    r = warmscope(
        "run",
        f"{PLANTED}:prints",
        "--input",
        "4",
        "--iters",
        "10",
        "--no-explain",
        "--record",
        str(tmp_path / "r.jsonl"),
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert len(r.doc["iterations"]) == 10
    printed = [
        e for e in r.doc["events"] if e["kind"] == "stderr" and "plain stdout text" in e["text"]
    ]
    assert printed and printed[0]["iteration"] == K
    assert '{"t":"done","status":"ok"}' in printed[0]["text"]
    assert "raw fd 1 write" in printed[0]["text"]


def test_stderr_flood_neither_blocks_the_child_nor_grows_memory(tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "warmscope.cli",
            "run",
            f"{PLANTED}:floods",
            "--input",
            "4",
            "--iters",
            "400",
            "--quiet",
            "--no-explain",
            "--record",
            str(record),
            "--json",
            str(tmp_path / "r.json"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    watcher = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, watcher.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.02)
    assert proc.returncode == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    ms = [row["ms"] for row in doc["iterations"]]
    assert len(ms) == 400
    before = sorted(ms[1:K])[len(ms[1:K]) // 2]
    after = sorted(ms[K + 50 :])[len(ms[K + 50 :]) // 2]
    assert after < max(5 * before, 0.5), "the child runs at its normal rate after the flood"
    flood = [e for e in doc["events"] if e["kind"] == "stderr" and e["iteration"] == K]
    assert flood and len(flood[0]["text"]) < 70_000 and flood[0]["data"]["dropped_lines"] > 100_000
    assert Path(doc["stderr_file"]).stat().st_size >= 50_000_000  # the full text, on disk
    assert peak < 200 * 2**20, f"warmscope's own memory peaked at {peak / 2**20:.0f} MB"


def start_headless(tmp_path: Path, target: str, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    record = tmp_path / "r.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "warmscope.cli",
            "run",
            target,
            "--input",
            "4",
            "--duration",
            "120",
            # A pass every 50 ms: the child sleeps while the test waits on the stop's grace
            # periods instead of spinning through them.
            "--gap",
            "0.05",
            "--no-explain",
            "--record",
            str(record),
            "--json",
            str(tmp_path / "r.json"),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if record.exists() and '"type":"iters"' in record.read_text():
            return proc, record
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the run never started iterating")


def test_stop_escalates_for_a_child_that_ignores_sigint(tmp_path: Path) -> None:
    """Ctrl-C on a child that ignores SIGINT and SIGTERM: SIGTERM after the grace period, then
    SIGKILL; the run still ends stopped, with its iterations. (A child that ignores SIGINT
    alone, ended by the SIGTERM: the hangup's test below, whose stop is the same, quicker.)"""
    proc, record = start_headless(tmp_path, f"{PLANTED}:ignores_everything")
    run_id = run_id_of(record)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["status"] == "stopped" and len(doc["iterations"]) > 0
    assert wait_gone(run_id, 2) == []


def test_a_hung_up_parent_leaves_no_child_and_a_readable_record(tmp_path: Path) -> None:
    """SIGHUP (the terminal closed): the run is ended properly, quickly, though its child
    ignores SIGINT (the stop's SIGTERM ends it). A warmscope killed by SIGKILL is
    test_hostile's killed warmscope, whose model also leaves a helper behind."""
    proc, record = start_headless(tmp_path, f"{PLANTED}:ignores_sigint")
    run_id = run_id_of(record)
    assert survivors(run_id), "the child is running"
    time.sleep(0.5)
    proc.send_signal(signal.SIGHUP)
    proc.wait(timeout=10)
    assert wait_gone(run_id, 2) == [], "the child is gone within 2 s"
    data = read_run(record)
    assert data.count > 0
    assert data.status == "stopped"  # the run was ended properly, end line and all
    # What `warmscope open` and `compare` do with it: read it through the command line.
    r = warmscope("compare", str(record), str(record))
    assert r.code == 0 and "first_ms" in r.stdout
