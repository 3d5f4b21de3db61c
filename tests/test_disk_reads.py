"""Reads from disk: what the child read from storage during its calls, per batch of iterations
(the agent's ``reads``), named as a cause of the slow call it fell in. The rule as units over
``RunData``; then one real child whose first call reads a file the page cache has dropped."""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest

from tests.conftest import FACTORIES, warmscope
from warmscope.core.data.causes import DISK_READS, run_causes
from warmscope.core.data.document import read_document, to_document
from warmscope.core.data.record import read_run
from warmscope.core.data.run import DiskRead, RunData
from warmscope.core.data.schema import Shape, apply_line, check_line

MIB = 1 << 20


def run_with(latencies_ms: list[float], *reads: dict[str, int]) -> RunData:
    data = RunData()
    starts = [float(i) for i in range(len(latencies_ms))]
    data.add_iterations(0, latencies_ms, starts, None)
    for body in reads:
        line = {"type": "reads", **body}
        check_line(line)
        apply_line(data, line)
    return data


def disk_causes(data: RunData) -> list[tuple[int | None, str]]:
    return [(c.iteration, c.evidence) for c in run_causes(data) if c.name == DISK_READS]


def test_a_slow_call_that_read_from_disk_is_named_with_what_it_read() -> None:
    data = run_with([1675.0] + [0.2] * 99, {"i0": 0, "n": 1, "bytes": 211 * MIB, "majflt": 60})
    [(i, evidence)] = disk_causes(data)
    assert i == 0
    assert evidence.startswith("211 MiB read from disk and 60 major page faults in this call:")
    assert data.disk_read_at(0) == DiskRead(0, 1, 211 * MIB, 60) and data.disk_read_at(1) is None


def test_a_batch_of_calls_names_its_slowest_and_says_it_was_a_batch() -> None:
    latencies = [0.2] * 100
    latencies[3] = 40.0
    data = run_with(latencies, {"i0": 0, "n": 10, "bytes": 8 * MIB, "majflt": 0})
    [(i, evidence)] = disk_causes(data)
    assert i == 3
    assert "8.00 MiB read from disk in calls 0–9 (one batch of the counters)" in evidence


def test_little_read_or_no_slow_call_names_nothing() -> None:
    slow_first = [50.0] + [0.2] * 99
    assert (
        disk_causes(run_with(slow_first, {"i0": 0, "n": 1, "bytes": MIB // 2, "majflt": 3})) == []
    )
    # Steady calls reading as they go (a model that loads data each call): its cost, no cause.
    steady = run_with(slow_first, {"i0": 50, "n": 10, "bytes": 64 * MIB, "majflt": 0})
    assert disk_causes(steady) == []


@pytest.mark.parametrize(
    "body",
    [
        {"i0": 0, "n": 1, "bytes": -1, "majflt": 0},
        {"i0": 0, "n": 0, "bytes": 1, "majflt": 0},
        {"i0": 0, "n": 1, "bytes": "1", "majflt": 0},
        {"i0": 0, "n": 1, "bytes": 1},
        {"i0": -1, "n": 1, "bytes": 1, "majflt": 0},
        {"i0": 0, "n": 1, "bytes": True, "majflt": 0},
    ],
)
def test_a_reads_line_of_the_wrong_shape_is_refused(body: dict[str, object]) -> None:
    with pytest.raises(Shape):
        check_line({"type": "reads", **body})


def test_the_json_document_keeps_them_and_reads_back(tmp_path: Path) -> None:
    data = run_with([30.0] + [0.2] * 49, {"i0": 0, "n": 1, "bytes": 3 * MIB, "majflt": 2})
    doc = json.loads(json.dumps(to_document(data)))
    assert doc["disk_reads"] == [{"i0": 0, "n": 1, "bytes": 3 * MIB, "majflt": 2}]
    assert [c["name"] for c in doc["causes"]] == [DISK_READS]
    back = read_document(doc, tmp_path / "run.json")
    assert back.disk_reads == data.disk_reads


def page_cache_can_be_dropped(path: Path) -> bool:
    """Whether this file system reads a file from disk again once its pages are dropped
    (posix_fadvise): not so on tmpfs, or where the counters are not kept."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_inblock
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, MIB):
            pass
    finally:
        os.close(fd)
    return resource.getrusage(resource.RUSAGE_SELF).ru_inblock - before >= 4 * MIB // 512


def test_a_first_call_that_reads_a_dropped_file_is_named_with_its_reads(tmp_path: Path) -> None:
    cold = tmp_path / "weights.bin"
    with cold.open("wb") as f:
        f.write(os.urandom(16 * MIB))
        f.flush()
        os.fsync(f.fileno())
    if not page_cache_can_be_dropped(cold):
        pytest.skip(f"{tmp_path}'s file system keeps no page cache that can be dropped")
    record = tmp_path / "cold.jsonl"
    r = warmscope(
        *("run", f"{FACTORIES}:cold_read", "--input", "4", "--iters", "200", "--no-explain"),
        *("--record", str(record)),
        json_path=tmp_path / "cold.json",
        env={"COLD_READ_FILE": str(cold)},
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    first = r.doc["disk_reads"][0]
    assert first["i0"] == 0 and first["bytes"] >= 16 * MIB, r.doc["disk_reads"]
    [cause] = [c for c in r.doc["causes"] if c["name"] == DISK_READS]
    assert cause["iteration"] == 0 and "MiB read from disk" in cause["evidence"]
    assert "reads from disk" in r.stdout, "the summary names it beside the slow call"
    assert read_run(record).disk_reads[0].read_bytes == first["bytes"], "the record keeps it"
