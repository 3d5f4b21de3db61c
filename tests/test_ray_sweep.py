"""`warmscope sweep --executor ray`: each process a Ray task on a whole node, real Ray (an
embedded local instance, and a two-node cluster on this machine), real children, real torch.

Every test here that runs Ray is in this module, the warm-up's through Ray Client too: the
cluster (``ray_cluster``, module-scoped) starts for the first of them and is shut down with the
module, so its processes poll only while its tests run; the tests that need no cluster run
before it starts. One sweep on an embedded Ray serves the killed task, Ctrl-C, and the recipe
whose artifact travels (``embedded_sweep``)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import RayCluster, Result, run_id_of, running, survivors, wait_gone, warmscope
from tests.test_ray_warmup import assert_ran_on_nodes, ray_warmup, recipe_of
from warmscope.core.child.outcome import UsageError
from warmscope.core.run.ray_executor import (
    CLIENT_TRIES,
    INSTALL,
    RayExecutor,
    check_reachable,
    client_server_died,
    parse_executor,
    short,
)

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


def by_record(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The document's processes by their record's name (``c0-LABEL-r1.jsonl``)."""
    return {Path(p["record"]).name: p for p in processes(doc)}


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


def assert_came_back(doc: dict[str, Any]) -> None:
    """Every process ran to its end on a node, and its whole record and its stderr side file
    came back beside each other in the sweep's folder."""
    for p in processes(doc):
        assert p["status"] == "ok", p
        assert p["node"]["node_id"] and p["node"]["hostname"]
        record = Path(p["record"])
        assert record.parent == Path(doc["folder"])
        assert record.read_text().count("\n") >= 3  # the whole record came back
        stderr = list(record.parent.glob(record.stem + ".stderr*"))
        assert stderr, "the stderr side file came back beside the record"


def one_at_a_time_on_each_node(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Both nodes took processes, and each ran one at a time: each process on a node started
    after the one before it there had sent its last line (the local copy's last write). The
    processes by node."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    for p in processes(doc):
        by_node.setdefault(p["node"]["node_id"], []).append(p)
    assert len(by_node) == 2, "both nodes took processes"
    for mine in by_node.values():
        mine.sort(key=lambda p: started_ns(p["record"]))
        for before, after in itertools.pairwise(mine):
            assert os.stat(before["record"]).st_mtime_ns < started_ns(after["record"])
    return by_node


def assert_complete(r: Result) -> dict[str, Any]:
    assert r.code == 0, r.stderr
    doc: dict[str, Any] = r.doc  # type: ignore[assignment]
    assert doc["executor"].startswith("ray") and doc["finished"] == 4 and not doc["stopped"]
    assert sorted(map(tuple, doc["schedule"])) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert_came_back(doc)
    assert all(p["iterations"] == 10 for p in processes(doc))
    # Identical settings: same answer as the local executor, no verdict.
    assert [x["vs_best"] for x in doc["ranking"]] == ["best", "cannot tell"]
    assert "no setting is best beyond noise" in doc["answer"]
    return doc


def first_iterations(
    record: Path, proc: subprocess.Popen[str] | None = None, within: float = 120
) -> str:
    """Wait until ``record`` holds an iteration; its run id. ``proc`` ending first fails."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if record.exists() and '"type":"iter' in record.read_text():
            return run_id_of(record)
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the sweep ended first ({proc.returncode}): {proc.communicate()[1]}")
        time.sleep(0.2)
    pytest.fail(f"{record.name}: no iteration came back")


@contextlib.contextmanager
def ab_sweep(folder: Path, repeat: int, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``warmscope sweep sample:trivial --vary env.WARMSCOPE_AA=a,b`` running (40 iterations a
    process), its records in ``folder/records`` and its document ``folder/sweep.json``, for a
    test to interrupt; killed on the way out if a check failed before it ended."""
    argv = ["sweep", "sample:trivial", "--vary", "env.WARMSCOPE_AA=a,b"]
    argv += ["--repeat", str(repeat), "--iters", "40", "--gap", "0.1", *args, "--quiet"]
    argv += ["--record", str(folder / "records"), "--json", str(folder / "sweep.json")]
    with running(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        yield proc


# -- the logic, as units ----------------------------------------------------------------------


def test_the_executor_is_parsed() -> None:
    assert parse_executor("local") == ("local", None)
    assert parse_executor("ray") == ("ray", None)
    assert parse_executor("ray:auto") == ("ray", "auto")
    assert parse_executor("ray:ray://127.0.0.1:10001") == ("ray", "ray://127.0.0.1:10001")
    for bad in ("ray:", "dask", "local:x"):
        with pytest.raises(UsageError):
            parse_executor(bad)


def test_a_servers_traceback_is_cut_to_one_line() -> None:
    """Ray Client reports a failure on its server with the server's traceback."""
    sent = RuntimeError(
        "Initialization failure from server:\nTraceback (most recent call last):\n"
        '  File "proxier.py", line 745, in Datapath\n    raise RuntimeError(\n'
        "RuntimeError: Starting Ray client server failed.\n"
    )
    assert short(sent) == (
        "Initialization failure from server: RuntimeError: Starting Ray client server failed."
    )
    assert short(ConnectionError("ray client connection timeout")) == (
        "ray client connection timeout"
    )
    assert short(TimeoutError()) == "TimeoutError"


def test_a_client_server_that_died_as_it_started_is_tried_again() -> None:
    """Ray Client's per-connection server dies as it starts on a busy head (Ray's issue
    63202): the head says so, or its wait for the process meets a zombie. Anything else is
    the answer."""
    said = ConnectionAbortedError(
        "Initialization failure from server:\nTraceback (most recent call last):\n"
        "RuntimeError: Starting Ray client server failed. See ray_client_server_23001.err\n"
    )
    zombie = ConnectionAbortedError(
        "Initialization failure from server:\nTraceback (most recent call last):\n"
        '  File "proxier.py", line 369, in start_specific_server\n'
        "psutil.ZombieProcess: PID still exists but it's a zombie (pid=3341)\n"
    )
    assert client_server_died(said) and client_server_died(zombie)
    assert not client_server_died(ConnectionError("ray client connection timeout"))
    assert not client_server_died(RuntimeError("Version mismatch: the cluster runs 2.51.0"))


def test_a_client_server_dying_at_every_try_says_how_to_start_the_head(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where every try meets that (here: Ray's own words from a run on this machine), the one
    line says how the head is started so that it does not happen; another failure is not
    tried again, and its line says nothing of it."""
    ray = ray_or_skip()
    died = ConnectionAbortedError(
        "Initialization failure from server:\nTraceback (most recent call last):\n"
        '  File "proxier.py", line 745, in Datapath\n    raise RuntimeError(\n'
        "RuntimeError: Starting Ray client server failed. See ray_client_server_23002.err "
        "for detailed logs.\n"
    )
    tries: list[str] = []
    raised: list[BaseException] = []

    def init(**kwargs: Any) -> None:
        tries.append(kwargs["address"])
        raise raised[0]

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        address = f"ray://127.0.0.1:{listening.getsockname()[1]}"
        for failure, expected_tries, cure in (
            (died, CLIENT_TRIES, True),
            (TimeoutError(), 1, False),
        ):
            tries.clear()
            raised[:] = [failure]
            with pytest.raises(UsageError) as refused:
                RayExecutor(address).start()
            assert tries == [address] * expected_tries
            line = str(refused.value)
            assert ("GRPC_ENABLE_FORK_SUPPORT=0" in line) is cure, line
            assert "\n" not in line


def hosts_of(values: dict[str, list[tuple[int, float]]]) -> dict[str, Any] | None:
    """The host factor of a sweep whose processes ran where ``values`` says:
    ``{node: [(cell, objective value), …]}``."""
    from warmscope.core.data.run import RunData
    from warmscope.core.data.settings import RunSettings
    from warmscope.core.data.sweep_state import Cell, Process
    from warmscope.core.output.sweep_hosts import host_factor
    from warmscope.core.run.sweep import Sweep

    cells = [Cell(label, RunSettings(target="sample:trivial")) for label in ("a", "b")]
    sweep = Sweep(target="sample:trivial", cells=cells, repeat=20)
    for node, runs in values.items():
        for r, (cell, value) in enumerate(runs):
            where = {"node_id": node, "hostname": "box"}
            sweep.processes.append(Process(cell, r, RunData(), value, where))
    return host_factor(sweep)


def test_a_slow_node_is_found_not_averaged_away() -> None:
    """Cell b is twice cell a everywhere; node n3 runs 30% slower than n1 and n2, in both
    cells. The host factor, pooled over cells by each cell's median, names n3 beyond noise
    slower than each other node and n1 within noise of n2."""
    fast = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.00]
    slow = [1.3 * v for v in fast]
    hosts = hosts_of(
        {
            "n1": [(i % 2, v * (1 + i % 2)) for i, v in enumerate(fast)],
            "n2": [(i % 2, v * (1 + i % 2)) for i, v in enumerate(reversed(fast))],
            "n3": [(i % 2, v * (1 + i % 2)) for i, v in enumerate(slow)],
        }
    )
    assert hosts is not None and hosts["differ"] is True
    called = {(p["a"], p["b"]) for p in hosts["pairs"] if p["comparison"]["beyond_noise"]}
    labels = {h["node_id"]: h["label"] for h in hosts["hosts"]}
    slow_label = labels["n3"]
    assert slow_label.startswith("box·")  # one hostname: the node id tells them apart
    assert {b for _, b in called} == {slow_label} and len(called) == 2
    assert hosts["answer"].startswith("hosts differ beyond noise: " + slow_label)
    assert hosts["hosts"][-1]["label"] == slow_label  # the slowest last


def test_nodes_alike_are_within_noise_and_one_node_is_no_factor() -> None:
    same = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 0.98, 1.01]
    hosts = hosts_of(
        {
            "n1": [(i % 2, v) for i, v in enumerate(same)],
            "n2": [(i % 2, v) for i, v in enumerate(reversed(same))],
        }
    )
    assert hosts is not None and hosts["differ"] is False
    assert hosts["answer"].startswith("hosts within noise")
    assert hosts_of({"n1": [(0, 1.0), (1, 1.0)]}) is None


def test_a_cell_that_ran_on_one_host_is_said() -> None:
    """Each cell on a host of its own: the host factor cannot tell machine from setting."""
    hosts = hosts_of({"n1": [(0, 1.0), (0, 1.1), (0, 0.9)], "n2": [(1, 2.0), (1, 2.1), (1, 1.9)]})
    assert hosts is not None and len(hosts["one_host"]) == 2
    assert hosts["one_host"][0].startswith("a ran only on box·")
    assert "setting and host not told apart there" in hosts["answer"]
    mixed = hosts_of({"n1": [(0, 1.0), (1, 2.0)], "n2": [(1, 2.1), (0, 1.1)]})
    assert mixed is not None and mixed["one_host"] == []


# -- bad input: one line, nothing run ---------------------------------------------------------


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


def unused_port() -> int:
    """A loopback port nothing listens on once this closes it."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_address_where_no_ray_listens_is_refused_before_ray_is_asked() -> None:
    """Ray itself would retry for minutes: a ``HOST:PORT`` or ``ray://HOST:PORT`` that takes
    no connection is one line (the command line's one real child: the test below)."""
    port = unused_port()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(UsageError) as caught:
            check_reachable(address)
        assert str(caught.value).startswith(f"--executor ray:{address}: no Ray there (")
    with pytest.raises(UsageError, match="expected HOST:PORT or ray://HOST:PORT"):
        check_reachable("ray://head")
    check_reachable(None)  # an embedded Ray, and ``auto``: nothing to reach first
    check_reachable("auto")


def test_an_address_where_no_ray_listens_is_one_line(tmp_path: Path) -> None:
    """Through Ray Client's form here; test_ray_warmup's runs the ``HOST:PORT`` form."""
    ray_or_skip()
    address = f"ray://127.0.0.1:{unused_port()}"
    r = warmscope(
        "sweep",
        "sample:trivial",
        *IDENTICAL,
        *("--executor", f"ray:{address}", "--record", str(tmp_path / "records")),
        timeout=60,
    )
    assert r.code == 2, r.stderr
    assert r.stderr.strip().startswith(f"warmscope: --executor ray:{address}: no Ray there")
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "records").exists()


# -- an embedded Ray: one node, its processes one after another ----------------------------------

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
"""A recipe that saves an artifact beside itself where it finds none and loads it where it
does, as a cache-artifact recipe does."""


@dataclass
class Interrupted:
    """A sweep on an embedded Ray, its third process's worker killed, Ctrl-C in its fourth."""

    code: int
    stderr: str
    doc: dict[str, Any]
    killed: str
    """The run id of the process whose Ray worker was SIGKILLed."""
    stopped: str
    """The run id of the process Ctrl-C stopped."""
    recipe: Path


@pytest.fixture(scope="module")
def embedded_sweep(tmp_path_factory: pytest.TempPathFactory) -> Interrupted:
    """One sweep on an embedded local Ray (one node, so one process at a time, in the plan's
    order a, b, a, b), every process with ``SAVES_BESIDE`` as its recipe: the first saves
    the artifact, the second is sent it and loads it; the Ray worker running the third is
    SIGKILLed while its child runs; Ctrl-C during the fourth. Its tests read what it left."""
    ray_or_skip()
    tmp = tmp_path_factory.mktemp("embedded")
    recipe = tmp / "recipes" / "saves.py"
    recipe.parent.mkdir()
    recipe.write_text(SAVES_BESIDE)
    records = tmp / "records"
    with ab_sweep(tmp, 2, "--recipe", str(recipe), "--executor", "ray") as proc:
        killed = first_iterations(records / "c0-env.WARMSCOPE_AA=a-r1.jsonl", proc)
        child = survivors(killed)
        assert child, "the child runs on the node"
        worker = psutil.Process(child[0]).parent()
        assert worker is not None
        worker.kill()
        stopped = first_iterations(records / "c1-env.WARMSCOPE_AA=b-r1.jsonl", proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    doc = json.loads((tmp / "sweep.json").read_text())
    return Interrupted(proc.returncode, err, doc, killed, stopped, recipe)


def test_a_task_killed_half_way_keeps_its_lines_and_ctrl_c_stops_the_next(
    embedded_sweep: Interrupted,
) -> None:
    """The Ray worker running a process is SIGKILLed while its child runs: the record keeps
    the iterations streamed so far, the process is failed with the reason, its child ends
    with it, and the sweep goes on. Ctrl-C during the next stops it: its iterations so far
    kept, its child gone, the sweep ``stopped`` (exit 130)."""
    run = embedded_sweep
    assert run.code == 130, run.stderr
    assert wait_gone(run.killed, 10) == [], "the child ended with its task"
    assert wait_gone(run.stopped, 10) == [], "the stopped child ended"
    assert run.doc["stopped"] is True
    ran = by_record(run.doc)
    before = [ran["c0-env.WARMSCOPE_AA=a-r0.jsonl"], ran["c1-env.WARMSCOPE_AA=b-r0.jsonl"]]
    assert [p["status"] for p in before] == ["ok", "ok"], before
    killed = ran["c0-env.WARMSCOPE_AA=a-r1.jsonl"]
    stopped = ran["c1-env.WARMSCOPE_AA=b-r1.jsonl"]
    assert killed["status"] == "failed" and "ended early" in killed["detail"], (killed, stopped)
    assert 0 < killed["iterations"] < 40, "the iterations sent before the kill were kept"
    assert stopped["status"] == "stopped", stopped["detail"]
    assert 0 < stopped["iterations"] < 40


def test_a_recipe_and_the_artifact_it_saves_travel_with_the_tasks(
    embedded_sweep: Interrupted,
) -> None:
    """As a cache-artifact recipe does: the first process finds no artifact beside its recipe
    and saves one; it comes back beside the local recipe; the next process is given it beside
    its own copy of the recipe, in another folder, and loads it. (The processes stopped later
    leave nothing beside it.)"""
    recipe = embedded_sweep.recipe
    first, second, *_ = sorted(processes(embedded_sweep.doc), key=lambda p: started_ns(p["record"]))
    assert first["status"] == second["status"] == "ok", (first, second)
    artifact = recipe.parent / "saves.cache.bin"
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


# -- the suite's two-node cluster, directly and through Ray Client -------------------------------


@pytest.fixture
def two_nodes(ray_cluster: RayCluster) -> str:
    """The module's Ray cluster of two nodes on this machine, one CPU each: its address."""
    return ray_cluster.address


@pytest.fixture
def client_server(ray_cluster: RayCluster) -> str:
    """The ``ray://`` address of the module's cluster's Ray Client server, as a user gives it."""
    return ray_cluster.client


def test_a_ray_cluster_races_as_the_local_executor_does(two_nodes: str, tmp_path: Path) -> None:
    """A first call 300 ms slower in one cell, adaptive with a cap of 5: as with the local
    executor (test_sweep), the slower cell is dropped after round 4 and the sweep stops,
    decided, after 8 processes, though the two nodes finish a round's processes in any
    order (a round starts once the one before it is looked at). Joined at the cluster's own
    address, each task streams its record back, whole, with its stderr side file, and each
    node runs one process at a time."""
    from tests.conftest import TARGETS

    r = warmscope(
        "sweep",
        f"{TARGETS / 'first_call.py'}:slow_first_call",
        *("--vary", "env.WARMSCOPE_FIRST_SLEEP_MS=300,0", "--adaptive"),
        *("--repeat", "5", "--iters", "5", "--set", "intra_op_threads=1"),
        *("--executor", f"ray:{two_nodes}", "--quiet", "--record", str(tmp_path / "records")),
        json_path=tmp_path / "adaptive.json",
        timeout=300,
    )
    assert r.code == 0, r.stderr
    doc: dict[str, Any] = r.doc  # type: ignore[assignment]
    assert doc["executor"] == f"ray:{two_nodes}" and doc["decided"] is True
    assert doc["decided_round"] == 4 == doc["rounds"] and doc["looks"] == [4]
    assert doc["finished"] == doc["planned"] == 8
    assert doc["processes_fixed"] == 10 and doc["processes_saved"] == 2
    [drop] = doc["dropped"]
    assert drop["cell"] == 0 and drop["round"] == 4 and drop["against"] == 1
    assert_came_back(doc)
    one_at_a_time_on_each_node(doc)
    assert doc["ranking"][0]["label"] == "env.WARMSCOPE_FIRST_SLEEP_MS=0"
    assert doc["answer"].startswith(
        "by first iteration, env.WARMSCOPE_FIRST_SLEEP_MS=0 is best beyond noise: its first "
        "call is "
    )
    assert "decided after round 4" in r.stdout
    assert "dropped    env.WARMSCOPE_FIRST_SLEEP_MS=300" in r.stdout
    assert f"ray:{two_nodes}: 2 nodes" in r.stdout
    # The document reads back as it was written.
    shown = warmscope("compare", str(tmp_path / "adaptive.json"))
    assert shown.code == 0 and shown.stdout.splitlines()[0] == f"answer     {doc['answer']}"


def test_through_ray_client_two_nodes_run_the_sweep_one_process_each_at_a_time(
    client_server: str, tmp_path: Path
) -> None:
    """``ray:ray://HOST:PORT``: the driver joins through Ray Client; every process runs on a
    node of the cluster, both nodes take processes, one a node at a time, and the whole
    records come back; the nodes are a factor of the answer (``hosts``)."""
    r = ray_sweep(tmp_path, f"ray:{client_server}")
    doc = assert_complete(r)
    assert doc["executor"] == f"ray:{client_server}"
    assert f"ray:{client_server}: 2 nodes" in r.stdout
    by_node = one_at_a_time_on_each_node(doc)
    hosts = doc["hosts"]
    assert hosts["factor"] == "host" and len(hosts["hosts"]) == 2
    assert sum(h["processes"] for h in hosts["hosts"]) == 4
    assert {h["node_id"] for h in hosts["hosts"]} == set(by_node)
    assert len(hosts["pairs"]) == 1 and hosts["differ"] is False
    assert hosts["answer"] in doc["answer"]
    shown = [line for line in r.stdout.splitlines() if line.startswith("hosts ")]
    assert len(shown) == 1 and all(h["label"] in shown[0] for h in hosts["hosts"])
    text = json.dumps(doc)
    assert "hosts within noise" in text


def test_a_warmup_through_ray_client_ships_its_candidates(
    client_server: str, tmp_path: Path
) -> None:
    """``warmscope warmup --executor ray:ray://HOST:PORT``: every process through the Ray
    Client server on the cluster's nodes, the candidate recipes carried with their tasks."""
    r = ray_warmup(tmp_path, f"ray:{client_server}")
    doc = assert_ran_on_nodes(r, tmp_path)
    assert doc["executor"] == f"ray:{client_server}"
    assert f"· ray:{client_server}: 2 nodes" in r.stdout


def test_ctrl_c_through_ray_client_stops_the_task_and_its_child(
    client_server: str, tmp_path: Path
) -> None:
    """Under Ray Client a task streams through an actor: Ctrl-C stops its child, the
    iterations so far kept, the sweep ``stopped`` (exit 130)."""
    records = tmp_path / "records"
    with ab_sweep(tmp_path, 1, "--executor", f"ray:{client_server}") as proc:
        first = first_iterations(records / "c0-env.WARMSCOPE_AA=a-r0.jsonl", proc)
        assert survivors(first), "the child runs on the node"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert wait_gone(first, 10) == [], "the stopped child ended"
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert doc["stopped"] is True
    ran = {Path(p["record"]).name: p for p in processes(doc)}
    stopped = ran["c0-env.WARMSCOPE_AA=a-r0.jsonl"]
    assert stopped["status"] == "stopped", stopped["detail"]
    assert 0 < stopped["iterations"] < 40
    # The other node's process, started beside it, is stopped too (unless it was done).
    assert all(p["status"] in ("stopped", "ok") for p in ran.values()), ran
