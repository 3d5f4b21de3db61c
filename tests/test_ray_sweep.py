"""`warmscope sweep --executor ray`: each process a Ray task on a whole node, real Ray (an
embedded local instance, and a two-node cluster on this machine), real children, real torch."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, warmscope
from warmscope.core.child.outcome import UsageError
from warmscope.core.run.ray_executor import INSTALL, parse_executor

IDENTICAL = ("--vary", "env.WARMSCOPE_AA=a,b", "--repeat", "2", "--iters", "10")
"""Two cells that differ only in an environment variable nothing reads."""


def ray_or_skip() -> Any:
    return pytest.importorskip("ray", reason="Ray is not installed (pip install 'warmscope[ray]')")


def started_ns(record: str) -> int:
    """When a process began, from its run id (``PID-TIME_NS``)."""
    with open(record) as f:
        return int(json.loads(f.readline())["run_id"].rsplit("-", 1)[1])


def processes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for c in doc["cells"] for p in c["processes"]]


def ray_sweep(tmp: Path, executor: str) -> Result:
    return warmscope(
        "sweep",
        "sample:trivial",
        *IDENTICAL,
        "--executor",
        executor,
        "--quiet",
        "--record",
        str(tmp / "records"),
        json_path=tmp / "sweep.json",
        timeout=300,
    )


def assert_complete(r: Result) -> dict[str, Any]:
    assert r.code == 0, r.stderr
    doc: dict[str, Any] = r.doc  # type: ignore[assignment]
    assert doc["executor"].startswith("ray") and doc["finished"] == 4 and not doc["stopped"]
    assert sorted(map(tuple, doc["schedule"])) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for p in processes(doc):
        assert p["status"] == "ok", p
        assert p["node"]["node_id"] and p["node"]["hostname"]
        assert p["iterations"] == 10
        record = Path(p["record"])
        assert record.parent == Path(doc["folder"])
        assert record.read_text().count("\n") >= 3  # the whole record came back
        stderr = list(record.parent.glob(record.stem + ".stderr*"))
        assert stderr, "the stderr side file came back beside the record"
    # Identical settings: same answer as the local executor, no verdict.
    assert [x["vs_best"] for x in doc["ranking"]] == ["best", "within noise"]
    assert "no setting is best beyond noise" in doc["answer"]
    return doc


def test_the_executor_is_parsed() -> None:
    assert parse_executor("local") == ("local", None)
    assert parse_executor("ray") == ("ray", None)
    assert parse_executor("ray:auto") == ("ray", "auto")
    assert parse_executor("ray:ray://127.0.0.1:10001") == ("ray", "ray://127.0.0.1:10001")
    for bad in ("ray:", "dask", "local:x"):
        with pytest.raises(UsageError):
            parse_executor(bad)


def test_without_ray_one_line_says_how_to_install_it(tmp_path: Path) -> None:
    """A ``ray`` that cannot be imported (shadowed here): one line, exit 2, nothing run."""
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "__init__.py").write_text("raise ImportError('no ray here')\n")
    pythonpath = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    r = warmscope(
        "sweep",
        "sample:trivial",
        *IDENTICAL,
        "--executor",
        "ray",
        "--record",
        str(tmp_path / "records"),
        env={"PYTHONPATH": pythonpath},
    )
    assert r.code == 2
    assert r.stderr.strip() == f"warmscope: {INSTALL}"
    assert not (tmp_path / "records").exists()


def test_a_bad_executor_is_one_line(tmp_path: Path) -> None:
    r = warmscope("sweep", "sample:trivial", *IDENTICAL, "--executor", "dask")
    assert r.code == 2 and "bad --executor 'dask'" in r.stderr
    assert "Traceback" not in r.stderr


def test_an_embedded_local_ray_runs_every_process(tmp_path: Path) -> None:
    ray_or_skip()
    doc = assert_complete(ray_sweep(tmp_path, "ray"))
    assert len({p["node"]["node_id"] for p in processes(doc)}) == 1
    assert "hosts" not in doc  # one machine: no host factor


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[str]:
    """A Ray cluster of two nodes on this machine, one CPU each; its address."""
    ray_or_skip()
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield str(cluster.address)
    finally:
        cluster.shutdown()


def test_a_two_node_cluster_runs_one_process_per_node_at_a_time(
    two_nodes: str, tmp_path: Path
) -> None:
    doc = assert_complete(ray_sweep(tmp_path, f"ray:{two_nodes}"))
    by_node: dict[str, list[dict[str, Any]]] = {}
    for p in processes(doc):
        by_node.setdefault(p["node"]["node_id"], []).append(p)
    assert len(by_node) == 2, "both nodes took processes"
    for mine in by_node.values():
        # One at a time: each process on a node starts after the one before it there has
        # sent its last line (the local copy's last write).
        mine.sort(key=lambda p: started_ns(p["record"]))
        for before, after in itertools.pairwise(mine):
            assert os.stat(before["record"]).st_mtime_ns < started_ns(after["record"])
    hosts = doc["hosts"]
    assert hosts["factor"] == "host" and len(hosts["hosts"]) == 2
    assert sum(h["processes"] for h in hosts["hosts"]) == 4
    assert {h["node_id"] for h in hosts["hosts"]} == set(by_node)
    assert len(hosts["pairs"]) == 1 and hosts["differ"] is False
    assert hosts["answer"] in doc["answer"]
    text = json.dumps(doc)
    assert "hosts within noise" in text
