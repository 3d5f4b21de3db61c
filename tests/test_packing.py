"""Packed iteration batches: exact round trips, compact, and refused in one line when broken."""

from __future__ import annotations

import base64
import json
import random
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warmscope.core.data import packing
from warmscope.core.data.fold import apply_line, iterations_line, record_entry, record_line
from warmscope.core.data.record import VERSION, RecordError, RecordWriter, read_run
from warmscope.core.data.run import RunData

WIDE = st.integers(-(2**61), 2**61)  # every width, and sums that stay in 64 bits
MOST = 64
"""The longest batch drawn: a batch is packed column by column, a byte plane at a time, the
same at any length; what varies is each value's width and sign (hypothesis' draws of a value
are what an example costs)."""


@st.composite
def batches(draw: Any) -> tuple[list[int], list[int], list[int] | None]:
    """Durations and starts as the agent sends them, or wilder (negative, of every width), with
    or without shape indices."""
    n = draw(st.integers(1, MOST))
    wild = draw(st.booleans())
    ns = draw(st.lists(WIDE if wild else st.integers(0, 60_000), min_size=n, max_size=n))
    s0 = draw(st.integers(0, 2**40))
    gaps = draw(st.lists(WIDE if wild else st.integers(0, 900), min_size=n - 1, max_size=n - 1))
    starts = [s0]
    for d, gap in zip(ns[:-1], gaps, strict=True):
        starts.append(starts[-1] + d + gap)
    if wild and any(abs(v) >= 2**62 for v in starts):
        starts = [s0 + i for i in range(n)]
    shapes = draw(st.none() | st.lists(st.integers(-1, 2**15 - 1), min_size=n, max_size=n))
    return ns, starts, shapes


@settings(max_examples=300, deadline=None)
@given(batches(), st.integers(0, 2**40))
def test_a_batch_round_trips_exactly(batch: Any, first: int) -> None:
    ns, starts, shapes = batch
    line = packing.pack(first, ns, starts, shapes)
    assert line is not None
    line = json.loads(json.dumps(line))  # as it reads back from the record
    assert line["i0"] == first and line["n"] == len(ns)
    batch, durations, sh = packing.unpack(line)
    assert list(durations) == ns
    assert list(batch.starts()) == starts
    assert (list(sh) if sh is not None else None) == shapes


def test_values_that_do_not_pack_stay_plain_lists() -> None:
    assert packing.pack(0, [1.5], [0]) is None
    assert packing.pack(0, [2**64], [0]) is None
    assert packing.pack(0, [], []) is None
    assert packing.pack(0, [2**62, 0], [0, -(2**62) - 1]) is None  # a gap beyond 64 bits
    line = iterations_line(0, [1.5], [0])
    assert line == {"type": "iters", "i0": 0, "ns": [1.5], "st": [0]}


def test_a_realistic_batch_takes_a_few_bytes_an_iteration() -> None:
    import random

    rng = random.Random(3)
    ns = [25_000 + int(rng.gauss(0, 800)) for _ in range(2000)]
    starts, clock = [], 7 * 10**11
    for d in ns:
        clock += 300 + int(rng.expovariate(1 / 150))
        starts.append(clock)
        clock += d
    line = record_line({"t": "iters", "i0": 10**6, "ns": ns, "st": starts}, 0.0)
    plain = json.dumps({"type": "iters", "i0": 10**6, "ns": ns, "st": starts})
    size = len(json.dumps(line))
    assert size / len(ns) < 5.0, size / len(ns)
    assert size * 3 < len(plain)


def header() -> dict[str, Any]:
    return {"type": "header", "format": "warmscope-record", "version": VERSION, "settings": {}}


def write_record(path: Path, *lines: dict[str, Any], torn: str = "") -> Path:
    with RecordWriter.create(path) as writer:
        for line in lines:
            writer.write(line)
    if torn:
        with path.open("a") as f:
            f.write(torn)
    return path


def test_a_record_of_packed_batches_reads_back(tmp_path: Path) -> None:
    a = iterations_line(0, [5_000_000, 2_000_000], [0, 5_000_100])
    b = iterations_line(2, [1_000_000], [7_000_200])
    path = write_record(tmp_path / "r.jsonl", header(), a, b, {"type": "end", "status": "ok"})
    data = read_run(path)
    assert list(data.ms) == [5.0, 2.0, 1.0]
    assert list(data.start_ms) == [0.0, 5.0001, 7.0002]


def test_a_torn_last_batch_is_dropped_cleanly(tmp_path: Path) -> None:
    a = iterations_line(0, [5_000_000, 2_000_000], [0, 5_000_100])
    b = json.dumps(iterations_line(2, [1_000_000] * 50, list(range(0, 50_000_000, 1_000_000))))
    path = write_record(tmp_path / "r.jsonl", header(), a, torn=b[: len(b) // 2])
    data = read_run(path)
    assert list(data.ms) == [5.0, 2.0]
    assert data.status == "crashed"


def test_a_version_1_record_of_plain_lists_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    lines = [
        {**header(), "version": 1},
        {"type": "iters", "i0": 0, "ns": [5_000_000, 2_000_000], "st": [0, 5_000_100]},
        {"type": "iters", "i0": 2, "ms": [1.0], "start_ms": [7.0002]},
        {"type": "end", "status": "ok"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    data = read_run(path)
    assert list(data.ms) == [5.0, 2.0, 1.0]
    assert list(data.start_ms) == [0.0, 5.0001, 7.0002]


def _zipped(raw: bytes) -> str:
    return base64.b64encode(zlib.compress(raw)).decode()


GOOD = iterations_line(0, [5, 6], [0, 10])
BROKEN: list[tuple[str, dict[str, Any]]] = [
    ("not base64", {**GOOD, "z": "%%%"}),
    ("not zlib", {**GOOD, "z": base64.b64encode(b"plain bytes").decode()}),
    ("a count too large", {**GOOD, "n": 3}),
    ("a count too small", {**GOOD, "n": 1}),
    ("a count of zero", {**GOOD, "n": 0}),
    ("no start", {k: v for k, v in GOOD.items() if k != "s0"}),
    ("z a number", {**GOOD, "z": 5}),
    ("an unknown column type", {**GOOD, "z": _zipped(b"x\x00\x00b\x00\x00-")}),
    ("a bomb", {**GOOD, "z": _zipped(b"b" + bytes(10**6))}),
    ("a shape index out of range", {**GOOD, "z": _zipped(b"b\x01\x01b\x00\x00b\xfe\x00")}),
]


@pytest.mark.parametrize(("case", "line"), BROKEN, ids=[c for c, _ in BROKEN])
def test_a_broken_packed_batch_is_one_line_naming_it(
    case: str, line: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(header()) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(RecordError) as exc:
        read_run(path)
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:2: not a valid record line (")


def test_starts_stay_packed_until_read() -> None:
    a = packing.unpack(iterations_line(0, [1_000_000, 2_000_000], [0, 1_500_000]))[0]
    b = packing.unpack(iterations_line(2, [1_000_000] * 3, [4_000_000, 5_000_000, 6_000_000]))[0]
    starts = packing.Starts()
    starts.extend(a)
    starts.extend([3.5])
    starts.extend(b)
    assert len(starts) == 6
    assert all(isinstance(p, packing.Batch) for p in (starts._parts[0], starts._parts[2]))
    assert starts[-1] == 6.0  # one start read: its batch decoded, the others left packed
    assert isinstance(starts._parts[0], packing.Batch)
    assert list(starts) == [0.0, 1.5, 3.5, 4.0, 5.0, 6.0]
    assert isinstance(starts._parts[0], packing.Batch)  # iterating keeps none decoded
    assert list(starts[1:5]) == [1.5, 3.5, 4.0, 5.0]
    assert list(starts[::2]) == [0.0, 3.5, 5.0]
    assert starts[2] == 3.5 and starts[-6] == 0.0
    with pytest.raises(IndexError):
        starts[6]
    copy = starts.copy()
    starts.extend([9.0])
    assert len(copy) == 6 and len(starts) == 7
    assert copy == [0.0, 1.5, 3.5, 4.0, 5.0, 6.0] and copy != starts


@settings(deadline=None, database=None, derandomize=True)
@given(st.sampled_from("bhiq"), st.data())
def test_a_column_widens_exactly(code: str, data: st.DataObject) -> None:
    from array import array

    bits = 8 * array(code).itemsize
    values = data.draw(st.lists(st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)))
    for wider in "bhiq"[("bhiq".index(code)) :]:
        wide = packing.widen(array(code, values), wider)
        assert wide.typecode == wider and wide.tolist() == values


def test_batches_of_any_width_read_as_nanoseconds(tmp_path: Path) -> None:
    """32 bits a latency while they fit; one too wide for them widens all that came before."""
    batches = [[25_000, 24_800], [7, 2**15], [3_000_000_000, 1], [5, 25_000]]
    lines, first = [], 0
    for ns in batches:
        lines.append(iterations_line(first, ns, [10**10 * (first + k) for k in range(len(ns))]))
        first += len(ns)
    path = write_record(tmp_path / "r.jsonl", header(), *lines, {"type": "end", "status": "ok"})
    data = read_run(path, ms=False)
    assert data.ns is not None and data.ns.typecode == "q"
    assert data.ns.tolist() == [v for ns in batches for v in ns]
    narrow = write_record(tmp_path / "n.jsonl", header(), *lines[:2], {"type": "end"})
    small = read_run(narrow, ms=False).ns
    assert (
        small is not None and small.typecode == "i" and small.tolist() == [25_000, 24_800, 7, 2**15]
    )


def test_a_report_reads_nanoseconds_and_converts_none(tmp_path: Path) -> None:
    """``read_run(ms=False)``: statistics counted from the nanoseconds, the same figures and
    report as a full read, and no latency converted until ``ms`` is read."""
    from warmscope.core.output.report import report

    rng = random.Random(2)
    ns = [9_000_000, 3_000_000] + [1_000_000 + rng.randrange(-5_000, 5_000) for _ in range(300)]
    lines = [iterations_line(k, ns[k : k + 100], list(range(k, k + 100))) for k in (0, 100, 200)]
    lines.append(iterations_line(300, ns[300:], [300, 301]))
    path = write_record(tmp_path / "r.jsonl", header(), *lines, {"type": "end", "status": "ok"})
    full, lazy = read_run(path), read_run(path, ms=False)
    assert lazy.summary() == full.summary() and lazy.summary().steady_from == 2
    assert lazy.warnings() == full.warnings()
    assert report(lazy) == report(full)
    assert lazy._ms is None, "a report converts no latency"
    assert [lazy.latency(i) for i in range(len(ns))] == list(full.ms) == [v / 1e6 for v in ns]
    assert lazy.ms == full.ms and lazy.ms.typecode == "d"


def test_a_batch_in_milliseconds_after_nanoseconds_keeps_every_latency() -> None:
    from array import array

    from warmscope.core.data.run import RunData

    for defer in (False, True):
        data = RunData()
        if defer:
            data.defer_ms()
        data.add_iterations_ns(0, array("q", [2_000_000, 1_000_000]), [0.0, 2.0])
        data.add_iterations(2, [1.5], [3.0])
        assert data.ns is None and list(data.ms) == [2.0, 1.0, 1.5] and data.count == 3
        assert data.summary().max_ms == 2.0


def test_runs_to_compare_are_counted_in_forked_processes_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read_summarized``: the runs beyond the first counted in other processes give the
    summaries a plain read gives."""
    from warmscope.core.data import reading
    from warmscope.core.data.run import RunData

    rng = random.Random(4)
    paths = []
    for k in range(3):
        ns = [8_000_000] + [1_000_000 + rng.randrange(-9_000, 9_000 * (k + 1)) for _ in range(500)]
        line = iterations_line(0, ns, list(range(len(ns))))
        paths.append(write_record(tmp_path / f"{k}.jsonl", header(), line, {"type": "end"}))
    taken: list[int] = []
    take = RunData.take_counted
    monkeypatch.setattr(RunData, "take_counted", lambda self, c: (taken.append(1), take(self, c)))
    monkeypatch.setattr(reading, "PARALLEL_COUNT", 0)
    monkeypatch.setattr(reading.os, "cpu_count", lambda: 4)
    runs = reading.read_summarized(paths)
    assert len(taken) == 2, "the second and third runs were counted elsewhere"
    assert [r.summary() for r in runs] == [read_run(p).summary() for p in paths]
    assert all(r._ms is None for r in runs), "no latency converted to be compared"


@settings(max_examples=200, deadline=None)
@given(batches(), st.integers(0, 2**40))
def test_a_batch_folded_from_its_columns_is_the_batch_folded_from_its_line(
    batch: Any, first: int
) -> None:
    """The session folds the columns it packed (``record_entry``); a reader folds the line
    as it reads back. Both must give the same run, down to the latencies' integer width."""
    ns, starts, shapes = batch
    ns = [abs(v) % 10**18 for v in ns]  # as a clock gives: a reader refuses any other
    message = {"t": "iters", "i0": 0, "ns": ns, "st": starts}
    if shapes is not None:
        message["sh"] = shapes
    line, packed = record_entry(message, 0.0)
    assert packed is not None and line is packed.line
    live, replayed = RunData(), RunData()
    if shapes is not None:
        live.shape_keys = replayed.shape_keys = ["a"]
    apply_line(live, line, packed)
    apply_line(replayed, json.loads(json.dumps(line)))
    assert live == replayed
    assert live.ns is not None and replayed.ns is not None
    assert live.ns.typecode == replayed.ns.typecode and list(live.ns) == list(replayed.ns) == ns
    assert list(live.start_ms) == list(replayed.start_ms)
    assert list(live.shape_of) == list(replayed.shape_of)


def test_a_column_is_stored_in_the_narrowest_width_that_holds_it() -> None:
    for values, code in [
        ([0, 127, -128], "b"),
        ([128], "h"),
        ([-129], "h"),
        ([2**15], "i"),
        ([-(2**31)], "i"),
        ([2**31], "q"),
        ([-(2**63)], "q"),
        ([2**63 - 1], "q"),
    ]:
        _, packed = record_entry({"t": "iters", "i0": 0, "ns": values, "st": [0] * len(values)}, 0)
        assert packed is not None
        assert packed.columns[0].typecode == code, values
        assert list(packed.columns[0]) == values


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**62 - 1), st.integers(0, 2**62 - 1)), min_size=1))
def test_gaps_taken_at_once_are_the_gaps_taken_one_by_one(pairs: list[tuple[int, int]]) -> None:
    """Starts and durations of a clock, [0, 2**62), in any order: every gap, negative and as
    wide as they come, reads back exact."""
    starts, ns = [s for s, _ in pairs], [d for _, d in pairs]
    line = packing.pack(0, ns, starts)
    assert line is not None
    batch, durations, _ = packing.unpack(json.loads(json.dumps(line)))
    assert list(durations) == ns and list(batch.starts()) == starts
