"""The observer stays out of the child's way: its reader and sampler threads run nicer than
the child, the child's CPUs are set where the machine has the cores, and the record says so."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from tests.conftest import FACTORIES
from warmscope.core.data.record import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.report import report
from warmscope.core.run.launcher import OBSERVER_NICE
from warmscope.core.run.session import RunSession


def thread_nice(pid: int, tid: int) -> int:
    stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])  # field 19: nice


def test_reader_and_sampler_are_nicer_than_the_child_and_it_is_recorded(tmp_path: Path) -> None:
    # A pass every 10 ms: the child sleeps through the seconds the threads are looked at.
    settings = RunSettings(target=f"{FACTORIES}:tiny", inputs=["2x8"], duration=3, gap=0.01)
    session = RunSession(settings, record_path=tmp_path / "r.jsonl")
    session.start()
    try:
        deadline = time.monotonic() + 30
        names = {"warmscope-reader", "warmscope-sampler"}
        found: dict[str, int] = {}
        while len(found) < 2 and time.monotonic() < deadline:
            for t in threading.enumerate():
                if t.name in names and t.native_id:
                    found[t.name] = thread_nice(os.getpid(), t.native_id)
            time.sleep(0.05)
        base = os.nice(0)
        assert found == {n: base + OBSERVER_NICE for n in names}
        assert thread_nice(os.getpid(), threading.main_thread().native_id or 0) == base
        assert session.proc is not None
        assert Path(f"/proc/{session.proc.pid}/stat").exists()
    finally:
        session.wait(60)
    data = read_run(tmp_path / "r.jsonl")
    placed = data.env["observer"]
    assert placed["nice"] == OBSERVER_NICE
    cpus = len(os.sched_getaffinity(0))
    if cpus >= 4:
        assert len(placed["child_cpus"]) == cpus - 1 and len(placed["observer_cpus"]) == 1
    else:
        assert "not set" in placed["affinity"]
    assert f"reader and sampler at nice +{OBSERVER_NICE}" in report(data)


UI_SCRIPT = """
import os, sys, threading
from pathlib import Path
from warmscope.core.run import launcher
from warmscope.core.run.session import RunSession
from warmscope.core.data.settings import RunSettings

launcher.lower_own_priority(launcher.OBSERVER_NICE)  # what the TUI does as it starts
session = RunSession(
    RunSettings(target=sys.argv[2], inputs=["2x8"], iters=3), record_path=Path(sys.argv[1])
)
session.start()
stat = Path(f"/proc/{session.proc.pid}/stat").read_text()
child = int(stat.rsplit(")", 1)[1].split()[16])
assert session.wait(120)
print(os.nice(0), child, session.data.env["observer"].get("ui_nice"))
"""


def test_the_ui_runs_nicer_than_the_children_it_starts(tmp_path: Path) -> None:
    """The TUI lowers its own threads' priority, and its children still start at warmscope's
    own: nice values are per thread, and a child is forked by a thread that kept it."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", UI_SCRIPT, str(tmp_path / "r.jsonl"), f"{FACTORIES}:tiny"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    ui, child, recorded = (int(v) for v in out.stdout.split())
    base = os.nice(0)
    assert (ui, child, recorded) == (base + OBSERVER_NICE, base, OBSERVER_NICE)
    assert f"the TUI at nice +{OBSERVER_NICE}" in report(read_run(tmp_path / "r.jsonl"))
