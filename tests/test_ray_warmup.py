"""`warmscope warmup --executor ray`: every process of the warm-up a Ray task on a whole node,
the candidate recipes (and what a recipe saves beside itself) carried with the tasks; real Ray
(an embedded local instance), real children, real torch. The warm-up through Ray Client on the
two-node cluster is in test_ray_sweep, with every test that joins the cluster, which lives
only while that module's tests run; how a sweep's processes spread over nodes is
test_ray_sweep's too."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from tests.conftest import Result, warmscope
from tests.test_ray_sweep import processes, ray_or_skip, started_ns
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


SAVES_BESIDE = """\
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ARTIFACT = os.path.join(HERE, "saves.cache.bin")


def prepare(model, example_inputs=None):
    if os.path.exists(ARTIFACT):
        with open(ARTIFACT) as f:
            print("loaded: " + f.read(), file=sys.stderr)
    else:
        with open(ARTIFACT, "w") as f:
            f.write("saved in " + HERE)
    return model
"""


def test_a_recipe_and_the_artifact_it_saves_travel_with_the_tasks(tmp_path: Path) -> None:
    """As a cache-artifact recipe does: the first process finds no artifact beside its recipe
    and saves one; it comes back beside the local recipe; the next process is given it beside
    its own copy of the recipe, in another folder, and loads it."""
    ray_or_skip()
    recipe = tmp_path / "recipes" / "saves.py"
    recipe.parent.mkdir()
    recipe.write_text(SAVES_BESIDE)
    r = warmscope(
        "sweep",
        "sample:trivial",
        *("--vary", "env.WARMSCOPE_AA=a,b", "--repeat", "1", "--iters", "3"),
        *("--recipe", str(recipe), "--executor", "ray", "--quiet"),
        *("--record", str(tmp_path / "records")),
        json_path=tmp_path / "sweep.json",
        timeout=300,
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None
    first, second = sorted(processes(r.doc), key=lambda p: started_ns(p["record"]))
    artifact = tmp_path / "recipes" / "saves.cache.bin"
    saved = artifact.read_text()
    assert artifact.stat().st_mode == recipe.stat().st_mode, "made as the recipe makes it"
    made_in = str(Path(recipe_of(Path(first["record"]))).parent)
    assert saved == "saved in " + made_in and made_in != str(recipe.parent)
    assert not Path(made_in).exists(), "the task's folder is gone with it"
    loaded_by = str(Path(recipe_of(Path(second["record"]))).parent)
    assert loaded_by not in (made_in, str(recipe.parent))
    [stderr] = Path(second["record"]).parent.glob(Path(second["record"]).stem + ".stderr*")
    assert f"loaded: saved in {made_in}" in stderr.read_text()
    assert sorted(p.name for p in recipe.parent.iterdir()) == ["saves.cache.bin", "saves.py"]


# -- bad input ----------------------------------------------------------------------------------


def test_an_address_where_no_ray_listens_is_one_line(tmp_path: Path) -> None:
    ray_or_skip()
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
