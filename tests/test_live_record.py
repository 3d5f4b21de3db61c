"""A record that a live run is still writing: read as running (not crashed), said so in one
line by the readers, followed as it grows; after the run, read as the run ended.

A real ``warmscope run --duration`` writes the record; the readers are real commands and the
core's follower, polled as the TUI polls it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import warmscope
from warmscope.core.child import outcome
from warmscope.core.data.follow import RecordFollower
from warmscope.core.data.reading import RecordError, read_run
from warmscope.core.data.record import RecordWriter
from warmscope.core.data.run import Cursor
from warmscope.tui.controller import RunController

DURATION = 6


def start_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    record, doc = tmp_path / "live.jsonl", tmp_path / "live.json"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "warmscope.cli", "run", "sample:trivial"),
            *("--duration", str(DURATION), "--set", "intra_op_threads=1"),
            *("--gap", "0.001", "--record", str(record), "--json", str(doc)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, record, doc


def wait_for_iterations(record: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(RecordError):  # created, its header not yet written
            if read_run(record).count > 0:
                return
        time.sleep(0.1)
    raise AssertionError("the run wrote no iteration")


def test_a_live_record_reads_as_running_then_as_the_run_ended(tmp_path: Path) -> None:
    proc, record, doc = start_run(tmp_path)
    try:
        wait_for_iterations(record, proc)
        live = read_run(record)
        assert live.status == outcome.RUNNING, live.status_detail
        assert live.status_detail == (
            f"{record} is being written by a live run (pid {proc.pid}): figures so far"
        )
        assert live.count > 0
        report = warmscope("report", str(record))
        assert "being written by a live run" in report.stdout + report.stderr
        assert "crashed" not in report.stdout + report.stderr
        compared = warmscope("compare", str(record), str(record))
        assert compared.stderr.count("being written by a live run") == 2, compared.stderr
        opened = RunController().open_record(read_run(record))
        assert opened.live and isinstance(opened.session, RecordFollower)
        assert opened.session.data.status == outcome.RUNNING
        follower = RecordFollower(record)
        cursor = Cursor()
        seen = [follower.poll(cursor).first]
        counts = [follower.data.count]
        deadline = time.monotonic() + 60
        while not follower.is_finished() and time.monotonic() < deadline:
            time.sleep(0.3)
            follower.poll(cursor)
            counts.append(follower.data.count)
        assert proc.poll() is not None or follower.is_finished()
    finally:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert seen == [0]
    assert len(set(counts)) > 2, "the follower saw the count grow"
    assert counts == sorted(counts)
    ran = json.loads(doc.read_text())
    after = read_run(record)
    assert after.status == outcome.OK and follower.data.status == outcome.OK
    assert after.count == follower.data.count == len(ran["iterations"]) == cursor.iterations
    assert follower.data.summary().p50_ms == after.summary().p50_ms


def test_a_live_record_with_no_header_yet_says_so(tmp_path: Path) -> None:
    record = tmp_path / "begun.jsonl"
    writer = RecordWriter.create(record)  # created and locked, as a run does before its header
    try:
        with pytest.raises(RecordError, match="being written by a live run that has only begun"):
            read_run(record)
    finally:
        writer.close()
    with pytest.raises(RecordError, match="is empty, not a warmscope record"):
        read_run(record)


def test_open_follows_a_live_record_as_it_grows_and_ends_as_the_run_did(tmp_path: Path) -> None:
    """The TUI over a record a real run is writing: the view grows, and ends ok, with the
    run's count."""
    from textual.pilot import Pilot

    from tests.tui_support import run, wait_for
    from warmscope.tui.app import build_app
    from warmscope.tui.widgets.run.run_header import RunHeader

    proc, record, doc = start_run(tmp_path)
    try:
        wait_for_iterations(record, proc)
        app = build_app(records=[record])
        counts: list[int] = []

        async def scenario(pilot: Pilot) -> None:
            await wait_for(pilot, lambda: bool(app.runs))  # shown once the screen is ready
            entry = app.runs[0]
            assert isinstance(entry.session, RecordFollower) and app.state.live is entry
            await wait_for(pilot, lambda: entry.view.count > 0, timeout=15)
            assert "running" in app.screen.query_one(RunHeader).plain
            counts.append(entry.view.count)
            await pilot.pause(1.0)
            counts.append(entry.view.count)
            await wait_for(pilot, lambda: entry.data.finished, timeout=60)
            await pilot.pause(0.3)
            counts.append(entry.view.count)
            assert "ok" in app.screen.query_one(RunHeader).plain

        run(app, scenario, settled=False)
    finally:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert counts[0] < counts[1] < counts[2]
    ran = json.loads(doc.read_text())
    assert counts[2] == len(ran["iterations"]) == read_run(record).count
