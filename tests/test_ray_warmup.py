"""`warmscope warmup --executor ray`: every process of the warm-up a Ray task on a whole node,
the candidate recipes (and what a recipe saves beside itself) carried with the tasks. Here:
what a warm-up says without Ray, or where no Ray listens, and the checks of a warm-up that ran
on Ray's nodes. The real runs are in test_ray_sweep, with every test that runs Ray: the
warm-up through Ray Client on the two-node cluster (which lives only while that module's tests
run), and the recipe whose artifact travels between tasks on an embedded Ray. How a sweep's
processes spread over nodes is test_ray_sweep's too."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, warmscope
from tests.test_warmup import check_document
from warmscope.core.run.ray_executor import INSTALL

CHEAP = ("sample:trivial", "--iters", "5", "--repeat", "1", "--quiet")
"""A TorchScript sample: a baseline process, then two candidates (warm-up calls, profiling
off), each verified in one process."""


def ray_warmup(tmp: Path, executor: str) -> Result:
    return warmscope(
        "warmup",
        *CHEAP,
        *("--executor", executor, "--record", str(tmp / "w"), "--emit", str(tmp / "recipe.py")),
        json_path=tmp / "w.json",
        timeout=300,
    )


def every_process(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for cell in (doc["baseline"], *doc["candidates"]) for p in cell["processes"]]


def assert_ran_on_nodes(r: Result, tmp: Path) -> dict[str, Any]:
    """A complete warm-up whose every process names its node, and whose verified processes
    ran each candidate's file from their task's own folder, not from this one."""
    doc = r.doc
    assert doc is not None, r.stderr
    check_document(doc, r.code, 1)
    assert doc["executor"].startswith("ray")
    assert [c["label"] for c in doc["candidates"]] == ["warm-up calls", "profiling off"]
    for p in every_process(doc):
        assert p["status"] == "ok", p
        assert p["node"]["node_id"] and p["node"]["hostname"]
    for c in doc["candidates"]:
        assert len(c["processes"]) == 1 and c["startup_ms"]["median"] > 0  # prepare() ran
        [record] = c["runs"]
        ran = recipe_of(Path(record))
        assert ran != c["file"] and Path(ran).name == Path(c["file"]).name
        assert not Path(ran).exists(), "the task's folder is gone with it"
    assert doc["recipe"]["text"] == (tmp / "recipe.py").read_text()
    assert r.stdout.startswith("answer     " + doc["verdict"])
    return doc


def recipe_of(record: Path) -> str:
    """The ``--recipe`` path a process ran with, from its record's settings."""
    import json

    with record.open() as f:
        for line in f:
            item = json.loads(line)
            if isinstance(item.get("settings"), dict):
                return str(item["settings"]["recipe"])
    raise AssertionError(f"{record}: no settings line")


# -- bad input ----------------------------------------------------------------------------------


def test_an_address_where_no_ray_listens_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'warmscope[ray]')")
    with socket.socket() as s:  # a loopback port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = warmscope(
        "warmup",
        *CHEAP,
        *("--executor", f"ray:127.0.0.1:{port}", "--record", str(tmp_path / "w")),
        timeout=60,
    )
    assert r.code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"warmscope: --executor ray:127.0.0.1:{port}: no Ray there")
    assert not (tmp_path / "w").exists()


def test_without_ray_one_line_says_how_to_install_it(tmp_path: Path) -> None:
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "__init__.py").write_text("raise ImportError('no ray here')\n")
    pythonpath = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    r = warmscope(
        "warmup",
        *CHEAP,
        *("--executor", "ray", "--record", str(tmp_path / "w")),
        env={"PYTHONPATH": pythonpath},
    )
    assert r.code == 2
    assert r.stderr.strip() == f"warmscope: {INSTALL}"
    assert not (tmp_path / "w").exists()


def test_a_bad_executor_is_one_line(tmp_path: Path) -> None:
    r = warmscope("warmup", *CHEAP, "--executor", "ray:", "--record", str(tmp_path / "w"))
    assert r.code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "an address after 'ray:'" in lines[0], r.stderr
    assert not (tmp_path / "w").exists()
