"""One fold: a record read back holds exactly the ``RunData`` the live session held at its end.

Real children, real torch, real pipes: a run that completes, one whose model raises, one that
segfaults (its last iterations recovered from the shared ring) and one with profiled iterations.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.conftest import FACTORIES, PLANTED
from warmscope.core.record import read_run
from warmscope.core.session import RunSession
from warmscope.core.settings import RunSettings

CASES = {
    "ok": RunSettings(target=f"{FACTORIES}:tiny", inputs=["2x8"], iters=40),
    "failed": RunSettings(target=f"{PLANTED}:raises", inputs=["4"], iters=20),
    "crashed": RunSettings(target=f"{PLANTED}:segfault", inputs=["4"], iters=20),
    "profiled": RunSettings(
        target=f"{FACTORIES}:tiny", inputs=["2x8"], iters=6, profile_iters="0,steady"
    ),
    "shapes": RunSettings(
        target=f"{FACTORIES}:tiny",
        inputs=["Bx8"],
        dims=["B=1,2,3"],
        iters=12,
        idle_probe=[0.0],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_record_reads_back_as_the_session_held_it(case: str, tmp_path: Path) -> None:
    settings = CASES[case].copy()
    session = RunSession(settings, record_path=tmp_path / "run.jsonl", command=["warmscope"])
    session.start()
    assert session.wait(120), "the run ended"
    live = session.data
    replayed = read_run(tmp_path / "run.jsonl")

    assert live.status == case if case not in ("profiled", "shapes") else live.status == "ok"
    if case == "shapes":
        assert list(live.shape_of) == [0, 1, 2] * 4 and live.shape_keys == ["B=1", "B=2", "B=3"]
        assert live.idle_probe and live.memory["peak_rss_mb"] > 0
        assert replayed.shape_rows() == live.shape_rows()
    if case == "crashed":
        assert any(e.title.startswith("recovered") for e in live.events), "the ring recovered"
    if case == "profiled":
        assert sorted(live.profiles) == [0, 6]
    assert live.count > 0 and live.samples
    for f in dataclasses.fields(live):
        if f.compare:
            assert getattr(replayed, f.name) == getattr(live, f.name), f.name
    assert replayed == live
    # The latencies are held apart from the compared fields (integer ns, ms made on demand).
    assert list(replayed.ms) == list(live.ms) and list(replayed.start_ms) == list(live.start_ms)
    assert (replayed.ns is None) == (live.ns is None)
    if live.ns is not None:
        assert list(replayed.ns) == list(live.ns)
    assert replayed.mode == live.mode == session.mode
    assert replayed.summary() == live.summary()
