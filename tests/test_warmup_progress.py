"""``Warmup``'s stop from another thread, with real children (the speech sample over two
lengths): a stop ends the process in progress, starts nothing after it and makes ``run`` raise
``KeyboardInterrupt``. (Its progress hook is told each step and process as it happens:
``test_warmup``, on the speech warm-up that module runs.)"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from warmscope.core.child import outcome
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.warmup import Warmup
from warmscope.core.run.warmup_progress import Progress


def speech() -> RunSettings:
    settings = RunSettings(target="sample:speech", inputs=["1xTx40"], dims=["T=20,40"], iters=16)
    settings.set("intra_op_threads=1")
    return settings


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
