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
from warmscope.core.data.cause_kinds import DISK_READS
from warmscope.core.data.causes import run_causes
from warmscope.core.data.document import read_document, to_document
from warmscope.core.data.record import read_run
from warmscope.core.data.run import DiskRead, RunData
from warmscope.core.data.schema import Shape, apply_line, check_line
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.session import RunSession

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


def test_a_batch_of_warm_up_calls_names_its_slowest_and_says_it_was_a_batch() -> None:
    latencies = [10.0, 12.0, 40.0, 8.0] + [0.2] * 96
    data = run_with(latencies, {"i0": 0, "n": 10, "bytes": 8 * MIB, "majflt": 0})
    [(i, evidence)] = disk_causes(data)
    assert i == 2
    assert "8.00 MiB read from disk in calls 0–9 (one batch of the counters)" in evidence


def test_a_steady_call_slow_by_chance_or_a_profiled_one_is_not_blamed() -> None:
    latencies = [30.0] + [0.2] * 99
    latencies[60] = 9.0  # a spike in the steady state, in a batch that read
    steady = run_with(latencies, {"i0": 55, "n": 10, "bytes": 8 * MIB, "majflt": 0})
    assert disk_causes(steady) == []
    # Profiled in this process: the profiler's start reads its own libraries in that batch.
    profiled = run_with([30.0] + [0.2] * 99, {"i0": 0, "n": 1, "bytes": 8 * MIB, "majflt": 0})
    profiled.profiles[0] = {"iteration": 0, "ops": []}
    assert disk_causes(profiled) == []


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


def test_a_reads_line_of_the_wrong_shape_from_the_child_breaks_the_protocol(
    tmp_path: Path,
) -> None:
    """As the session's reader hands it a line (no child needed to read one): refused before it
    is folded or recorded, so no reader of the record meets it."""
    settings = RunSettings(target=f"{FACTORIES}:tiny", inputs=["2x8"], iters=1)
    session = RunSession(settings, record_path=tmp_path / "r.jsonl")
    try:
        session.protocol_lines([b'{"t":"reads","i0":"0","n":1,"bytes":"x","majflt":0}'])
        broke = [e for e in session.data.events if e.title == "the child broke the protocol"]
        assert broke and "'i0'" in broke[0].text, [e.text for e in session.data.events]
        assert session.data.disk_reads == []
        assert '"reads"' not in (tmp_path / "r.jsonl").read_text()
    finally:
        session.discard()


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
    drop_from_page_cache(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        while os.read(fd, MIB):
            pass
    finally:
        os.close(fd)
    return resource.getrusage(resource.RUSAGE_SELF).ru_inblock - before >= 4 * MIB // 512


def drop_from_page_cache(path: Path) -> None:
    """Advise the kernel to drop ``path``'s pages; written back first (a dirty page stays)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def written(path: Path, size: int) -> Path:
    with path.open("wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())
    return path


def test_a_load_and_a_first_call_that_read_dropped_files_are_named(tmp_path: Path) -> None:
    cold, weights = written(tmp_path / "lib.bin", 16 * MIB), written(tmp_path / "w.bin", 8 * MIB)
    if not page_cache_can_be_dropped(cold):
        pytest.skip(f"{tmp_path}'s file system keeps no page cache that can be dropped")
    record = tmp_path / "cold.jsonl"
    r = warmscope(
        *("run", f"{FACTORIES}:cold_read", "--input", "4", "--iters", "200", "--no-explain"),
        *("--record", str(record)),
        json_path=tmp_path / "cold.json",
        env={"COLD_READ_FILE": str(cold), "COLD_LOAD_FILE": str(weights)},
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert r.doc["disk_reads"], r.doc["summary"]
    first = r.doc["disk_reads"][0]
    # Dropping pages is advice: most of the file, not every page of it, is read again.
    assert first["i0"] == 0 and first["bytes"] >= 4 * MIB, r.doc["disk_reads"]
    [cause] = [c for c in r.doc["causes"] if c["name"] == DISK_READS and "phase" not in c]
    assert cause["iteration"] == 0 and "MiB read from disk" in cause["evidence"]
    assert "reads from disk" in r.stdout, "the summary names it beside the slow call"
    assert read_run(record).disk_reads[0].read_bytes == first["bytes"], "the record keeps it"
    # The load phase read the weights: said with the phases.
    [load] = [p for p in r.doc["phases"] if p["name"] == "load"]
    assert load["read_bytes"] >= 2 * MIB, r.doc["phases"]
    assert any(c["phase"] == "load" for c in r.doc["causes"] if c["name"] == DISK_READS)
    assert "load: reads from disk (" in r.stdout
    assert read_run(record).phase_reads["load"][0] == load["read_bytes"]


def test_the_cpp_agent_counts_what_its_load_read_from_disk(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """The C++ agent keeps the same counters: an archive dropped from the page cache is read
    from disk by libtorch's load, and the load phase says how much."""
    archive = cpp_archives / "heavy.pt"  # 8 MiB of weights
    if not page_cache_can_be_dropped(archive):
        pytest.skip(f"{archive.parent}'s file system keeps no page cache that can be dropped")
    drop_from_page_cache(archive)  # the check above read it back in
    r = warmscope(
        *("run", str(archive), "--runtime", "cpp", "--input", "4x1024", "--iters", "20"),
        "--no-explain",
        json_path=tmp_path / "cpp.json",
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    [load] = [p for p in r.doc["phases"] if p["name"] == "load"]
    assert load["read_bytes"] >= 4 * MIB, r.doc["phases"]
    assert any(c.get("phase") == "load" for c in r.doc["causes"] if c["name"] == DISK_READS)


def test_a_phase_that_read_from_disk_is_named_and_kept() -> None:
    data = run_with([0.2] * 10)
    for line in (
        {"type": "phase", "name": "import torch", "ms": 4880.0, "read_bytes": 412 * MIB},
        {"type": "phase", "name": "load", "ms": 3.0, "read_bytes": 4096, "majflt": 1},
        {"type": "phase", "name": "inputs", "ms": 1.0},
    ):
        check_line(line)
        apply_line(data, line)
    named = [(c.phase, c.evidence) for c in run_causes(data) if c.name == DISK_READS]
    assert named == [("import torch", "412 MiB")], "a phase that read under 1 MiB is not named"
    doc = json.loads(json.dumps(to_document(data)))
    assert doc["phases"][0] == {
        "name": "import torch",
        "ms": 4880.0,
        "read_bytes": 412 * MIB,
        "majflt": 0,
    }
    assert doc["phases"][2] == {"name": "inputs", "ms": 1.0}
    with pytest.raises(Shape):
        check_line({"type": "phase", "name": "load", "ms": 1.0, "read_bytes": -5})
