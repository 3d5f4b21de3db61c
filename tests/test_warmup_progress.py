"""``Warmup``'s progress hook and its stop from another thread, with real children (the speech
sample over two lengths): each step and process is told as it happens, and a stop ends the
process in progress, starts nothing after it and makes ``run`` raise ``KeyboardInterrupt``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from warmscope.core.child import outcome
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.warmup import Progress, Warmup


def speech() -> RunSettings:
    settings = RunSettings(target="sample:speech", inputs=["1xTx40"], dims=["T=20,40"], iters=16)
    settings.set("intra_op_threads=1")
    return settings


def test_progress_tells_each_step_and_process_as_it_happens(tmp_path: Path) -> None:
    told: list[Progress] = []
    job = Warmup(settings=speech(), repeat=1, folder=tmp_path / "w", on_progress=told.append)
    doc = job.run()
    steps = [(p.phase, p.cell, p.repeat, p.facts is not None) for p in told]
    labels = [c["label"] for c in doc["candidates"]]
    assert told[0].phase == "observe" and told[0].cells == ["no recipe"]
    # The baseline's process started, then ended with its cell's figures.
    assert steps[1:3] == [("observe", "no recipe", 0, False), ("observe", "no recipe", 0, True)]
    ended = told[2].facts
    assert ended is not None and len(ended["processes"]) == 1
    assert ended["shapes"] == doc["baseline"]["shapes"]
    assert [p.cells for p in told if p.phase == "propose"] == [labels]
    verify = [p for p in told if p.phase == "verify"]
    assert verify[0].cells == labels
    for label in labels:  # each candidate's process: started, then ended
        mine = [(p.repeat, p.facts is not None) for p in verify if p.cell == label]
        assert mine == [(0, False), (0, True)]
    last = next(p for p in verify if p.cell == labels[-1] and p.facts is not None)
    assert last.facts is not None
    # The figures told are those the answer judged (the judge adds its verdict per shape).
    told_ratios = [(s["key"], s["ratio"]) for s in last.facts["shapes"]]
    assert told_ratios == [(s["key"], s["ratio"]) for s in doc["candidates"][-1]["shapes"]]


def test_a_stop_from_another_thread_ends_the_process_in_progress(tmp_path: Path) -> None:
    started = threading.Event()

    def progress(p: Progress) -> None:
        if p.cell and p.facts is None:
            started.set()

    job = Warmup(settings=speech(), repeat=3, folder=tmp_path / "w", on_progress=progress)
    raised: list[BaseException] = []

    def work() -> None:
        try:
            job.run()
        except BaseException as exc:  # the thread's outcome, checked below
            raised.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    assert started.wait(120)
    t0 = time.monotonic()
    job.stop()
    thread.join(30)
    assert not thread.is_alive(), "the warm-up went on after its stop"
    took = time.monotonic() - t0
    assert len(raised) == 1 and isinstance(raised[0], KeyboardInterrupt)
    assert job.baseline is not None and job.baseline.stopped
    # The process in progress ended stopped (its child gone); none started after it.
    assert [p.data.status for p in job.baseline.processes] == [outcome.STOPPED]
    assert all(p.data.exit_code is not None for p in job.baseline.processes)
    assert job.verify is None and took < 10


def test_a_warmup_stopped_before_it_runs_starts_nothing(tmp_path: Path) -> None:
    job = Warmup(settings=speech(), repeat=1, folder=tmp_path / "w")
    job.stop()
    with pytest.raises(KeyboardInterrupt):
        job.run()
    assert job.baseline is not None and job.baseline.processes == []
