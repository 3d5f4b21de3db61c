"""A long record opens through the streaming path: batches decoded straight into arrays, starts
left packed, statistics from counted values, no Python object per iteration (3M iterations:
15 times the blocks the reader may allocate, an object an iteration would show); the TUI reads
a 10M-iteration one behind its first frame (its read outlasts the first frame by far).
Structure is asserted here, never time (see ``benchmarks/big_record.py`` for the figures)."""

from __future__ import annotations

import random
import sys
from array import array
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.tui_support import run, wait_for
from warmscope.core.data.fold import iterations_line
from warmscope.core.data.packing import Batch, MsView
from warmscope.core.data.record import QUICK_READ_BYTES, VERSION, RecordWriter, read_run
from warmscope.tui.app import build_app
from warmscope.tui.screens.loading_screen import LoadingScreen

COUNT = 10_000_000
READ_COUNT = 3_000_000
BATCH = 100_000
WARMUP = [40_000_000, 9_000_000, 2_000_000, 300_000]


def write_long_record(path: Path, count: int) -> Path:
    """``count`` iterations of ~25 µs after a short warm-up: one packed batch of real-looking
    noise, written again at each offset (packing 10M values one by one would take minutes)."""
    rng = random.Random(5)
    ns = [25_000 + rng.randrange(-900, 900) for _ in range(BATCH)]
    starts, clock = [], 0
    for d in ns:
        clock += 400 + rng.randrange(200)
        starts.append(clock)
        clock += d
    steady = iterations_line(0, ns, starts)
    first = iterations_line(0, WARMUP + ns[len(WARMUP) :], starts)
    with RecordWriter.create(path) as writer:
        writer.write(
            {"type": "header", "format": "warmscope-record", "version": VERSION, "settings": {}}
        )
        for k in range(count // BATCH):
            line = first if k == 0 else steady
            writer.write({**line, "i0": k * BATCH, "s0": line["s0"] + k * clock})
        writer.write({"type": "end", "status": "completed", "detail": "", "exit_code": 0})
    return path


@pytest.fixture(scope="module")
def big_record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10M iterations: 35 MB."""
    return write_long_record(tmp_path_factory.mktemp("big") / "big.jsonl", COUNT)


@pytest.fixture(scope="module")
def three_million(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3M iterations: 10 MB."""
    return write_long_record(tmp_path_factory.mktemp("read") / "3m.jsonl", READ_COUNT)


def test_a_3m_iteration_record_reads_without_an_object_per_iteration(three_million: Path) -> None:
    blocks = sys.getallocatedblocks()
    data = read_run(three_million)
    summary = data.summary()
    warnings = data.warnings()
    # Three million floats, ints or list slots would be 3M blocks; arrays are one each.
    assert sys.getallocatedblocks() - blocks < 200_000

    assert data.count == READ_COUNT and isinstance(data.ms, array) and data.ms.typecode == "d"
    assert all(isinstance(part, Batch) for part in data.start_ms._parts), "starts left packed"
    assert len(data.start_ms) == READ_COUNT
    assert data.ms[:4].tolist() == [w / 1e6 for w in WARMUP]
    assert summary.steady_from == len(WARMUP) and summary.steady_count == READ_COUNT - len(WARMUP)
    assert 0.0241 <= summary.p50_ms <= 0.0259  # type: ignore[operator]
    assert summary.min_ms is not None and summary.min_ms >= 0.0241
    assert not [w for w in warnings if w.code == "not_steady"]
    # One start read decodes one batch, and agrees with the batch as written.
    assert data.start_ms[READ_COUNT - 1] > data.start_ms[READ_COUNT - BATCH]
    assert sum(isinstance(part, Batch) for part in data.start_ms._parts) == READ_COUNT // BATCH - 1


def test_the_tui_reads_a_long_record_behind_its_first_frame(big_record: Path) -> None:
    assert big_record.stat().st_size > QUICK_READ_BYTES
    app = build_app(records=[big_record])

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, LoadingScreen) or app.runs)
        assert not app.runs, "the record is read behind a loading screen, not before"
        await wait_for(pilot, lambda: app.runs, timeout=300)
        assert not isinstance(app.screen, LoadingScreen)
        entry = app.runs[0]
        assert entry.view.count == COUNT
        latencies = entry.view.latencies
        assert isinstance(latencies, MsView) and latencies.ns is entry.data.ns, "read in place"
        assert entry.data._ms is None, "not one latency converted to a float but those drawn"
        assert entry.view.rows[0] == (0, entry.data.latency(0))
        assert all(isinstance(part, Batch) for part in entry.data.start_ms._parts[1:-1])
        await wait_for(pilot, lambda: entry.view.summary is not None, timeout=300)
        assert entry.view.summary is not None and entry.view.summary.count == COUNT

    run(app, scenario, settled=False)
