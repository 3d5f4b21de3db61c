"""One fold: a record read back holds exactly the ``RunData`` the live session held at its end,
and so does the run's ``--json`` document, read back through the same fold.

Real children, real torch, real pipes: a run that completes (three shapes in turn, an idle
probe, profiled iterations: every kind of line a completed run's record holds), one whose model
raises, one that segfaults (its last iterations recovered from the shared ring).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.conftest import FACTORIES, PLANTED
from warmscope.core.data.document import to_document
from warmscope.core.data.record import read_run
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.summary_rows import shape_rows
from warmscope.core.run.session import RunSession

CASES = {
    "ok": RunSettings(
        target=f"{FACTORIES}:tiny",
        inputs=["Bx8"],
        dims=["B=1,2,3"],
        iters=12,
        idle_probe=[0.0],
        profile_iters="0,steady",
    ),
    "failed": RunSettings(target=f"{PLANTED}:raises", inputs=["4"], iters=20),
    "crashed": RunSettings(target=f"{PLANTED}:segfault", inputs=["4"], iters=20),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_record_reads_back_as_the_session_held_it(case: str, tmp_path: Path) -> None:
    settings = CASES[case].copy()
    session = RunSession(settings, record_path=tmp_path / "run.jsonl", command=["warmscope"])
    session.start()
    assert session.wait(120), "the run ended"
    live = session.data
    replayed = read_run(tmp_path / "run.jsonl")

    assert live.status == case
    if case == "ok":
        # The shapes in turn, then the steady profile's pass after the 12 iterations.
        assert list(live.shape_of)[:12] == [0, 1, 2] * 4 and live.count == 13
        assert live.shape_keys == ["B=1", "B=2", "B=3"]
        assert live.idle_probe and live.memory["peak_rss_mb"] > 0
        assert shape_rows(replayed) == shape_rows(live)
        assert sorted(live.profiles) == [0, 12]
    if case == "crashed":
        assert any(e.title.startswith("recovered") for e in live.events), "the ring recovered"
    assert live.count > 0 and live.samples
    _assert_same_run(replayed, live)
    assert replayed == live
    assert replayed.mode == live.mode == session.mode

    # The --json document reads back through the same fold, field by field alike.
    document = tmp_path / "run.json"
    document.write_text(json.dumps(to_document(live)))
    _assert_same_run(read_run(document), live, but=("record_path",))
    assert read_run(document).record_path == str(document)


def _assert_same_run(read: RunData, live: RunData, but: tuple[str, ...] = ()) -> None:
    """Every compared field alike, and the latencies held apart from them (integer ns, ms
    made on demand)."""
    for f in dataclasses.fields(live):
        if f.compare and f.name not in but:
            assert getattr(read, f.name) == getattr(live, f.name), f.name
    assert list(read.ms) == list(live.ms) and list(read.start_ms) == list(live.start_ms)
    assert (read.ns is None) == (live.ns is None)
    if live.ns is not None:
        assert read.ns is not None and list(read.ns) == list(live.ns)
    assert read.summary() == live.summary()
