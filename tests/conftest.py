"""Shared helpers: run the real `warmscope` command line in a real child process."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from warmscope.core.child.cpp_make import CACHE_VAR as CPP_CACHE_VAR
from warmscope.core.run.proctree import RUN_ID_VAR

TARGETS = Path(__file__).parent / "targets"
FACTORIES = TARGETS / "factories.py"
PLANTED = Path(__file__).parent / "faults" / "planted.py"
K = 3  # the iteration in which a planted fault strikes


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    doc: dict[str, Any] | None

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        assert self.doc is not None
        return [e for e in self.doc["events"] if kind is None or e["kind"] == kind]


STATE_VAR = "XDG_STATE_HOME"
"""Where the default record folder lives (``record.record_dir``): the suite's own, never the
user's ``~/.local/state/warmscope/runs``."""


@pytest.fixture(scope="session", autouse=True)
def own_folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The whole session writes only into folders of its own, removed when it ends: the state
    folder (records a test leaves at their default place), the temporary folder (what Ray's
    tasks make, ``warmscope-ray-*``, left behind when a task is cancelled mid-way) and the
    compile caches (a compile warm-up measures on the user's cache too where it has entries).
    The C++ build cache (the agent, the recipes' libraries) is one folder for every worker of
    the test run, set before any test so that whatever builds (a fixture, a ``warmscope``
    command, a remote guardian) builds each key once under its lock, unless
    ``WARMSCOPE_CACHE_DIR`` names one already. Ray keeps its own session folder where it had
    it (``RAY_TMPDIR``): its socket paths have a length limit. Children inherit them through
    the environment."""
    tmp_path_factory.getbasetemp()  # pytest's own folders stay where pytest put them
    system_tmp = tempfile.gettempdir()
    # A short name under the system's: Ray's sockets under it must stay within 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="wst-", dir=system_tmp))
    (root / "tmp").mkdir()
    caches = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
    saved = {
        k: os.environ.get(k) for k in (STATE_VAR, "TMPDIR", "RAY_TMPDIR", CPP_CACHE_VAR, *caches)
    }
    os.environ[STATE_VAR] = str(root / "state")
    os.environ["TMPDIR"] = str(root / "tmp")
    for key in caches:  # the user's compile caches, neither read nor filled
        os.environ[key] = str(root / key.lower())
    os.environ.setdefault("RAY_TMPDIR", system_tmp)
    os.environ.setdefault(CPP_CACHE_VAR, str(shared_folder(tmp_path_factory) / "cpp-cache"))
    saved_tempdir, tempfile.tempdir = tempfile.tempdir, str(root / "tmp")
    try:
        yield root
    finally:
        tempfile.tempdir = saved_tempdir
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def ctrl_c_reaches_children() -> Iterator[None]:
    """Children the tests start take SIGINT as Ctrl-C. A suite started in the background by a
    shell without job control (``make test &``, some CI runners) inherits SIGINT ignored, and
    a child inherits that too: a test that presses Ctrl-C on a sweep would see it run on.
    With Python's handler here, a child starts with the default (a caught signal is reset at
    exec)."""
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.fixture
def record_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep default-location records out of the home folder."""
    path = tmp_path / "records"
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(path))
    return path


def warmscope(*args: str, json_path: Path | None = None, timeout: float = 120, **kw: Any) -> Result:
    """Run `warmscope ARGS` as a user would, through the console entry point."""
    argv = [sys.executable, "-m", "warmscope.cli", *args]
    if json_path is not None:
        argv += ["--json", str(json_path)]
    env = dict(os.environ, **kw.pop("env", {}))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, **kw)
    doc = (
        json.loads(json_path.read_text()) if json_path is not None and json_path.exists() else None
    )
    return Result(proc.returncode, proc.stdout, proc.stderr, doc)


@contextlib.contextmanager
def running(*args: str, **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """`warmscope ARGS` started for a test to drive (``popen``: ``subprocess.Popen``'s
    keywords): killed and reaped on the way out if it still runs, so a check that failed
    leaves no warmscope behind (what it started ends with it, as its guardian sees to)."""
    proc = subprocess.Popen([sys.executable, "-m", "warmscope.cli", *args], **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def run_id_of(record: Path) -> str:
    with record.open() as f:
        return json.loads(f.readline())["run_id"]


def survivors(run_id: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get(RUN_ID_VAR) == run_id and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def wait_gone(run_id: str, within: float) -> list[int]:
    deadline = time.monotonic() + within
    while (left := survivors(run_id)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test run's temporary root: under xdist, popen-gwN's parent, one folder for every
    worker, so a thing built once (under a lock) serves them all."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


BUILD_AOTI = """
import sys, torch
import torch._inductor.config as inductor
sys.path.insert(0, sys.argv[3])
from factories import TwoInputs
# A package built once for the tests: no precompiled headers (made for one use, they cost more
# than they save), scalar kernels (no compiler runs to pick a vector ISA), an unoptimized
# wrapper. What the tests read of a package is the same: its metadata, its wrapper's input
# checks, its compiled library, run by Python and by the C++ agent.
inductor.aot_inductor.precompile_headers = False
inductor.aot_inductor.compile_wrapper_opt_level = "O0"
inductor.cpp.vec_isa_ok = False
inputs = (torch.randn(4, 16), torch.randn(4, 8))
torch.export.save(torch.export.export(TwoInputs(), inputs), sys.argv[2])
with torch.no_grad():
    program = torch.export.export(TwoInputs().eval(), inputs)
    torch._inductor.aoti_compile_and_package(program, package_path=sys.argv[1])
"""


@pytest.fixture(scope="session")
def aoti_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-input model's AOTInductor package (``factories.TwoInputs``, inputs 4x16 and 4x8),
    compiled by torch with the C++ compiler once per test run: half a minute of CPU that the
    Python and the C++ runtime's tests share. Beside it, ``AOTI_PROGRAM``: the same model's
    exported program (``torch.export.save``), saved by the same child. Skipped, with the
    reason, without a compiler."""
    from filelock import FileLock  # torch's own dependency

    if not (shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")):
        pytest.skip("no C++ compiler (g++ or c++): AOTInductor cannot build a package")
    root = shared_folder(tmp_path_factory)
    path = root / "aoti" / "two_inputs.pt2"
    with FileLock(str(root / "aoti.lock")):
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            partial = path.with_suffix(".partial.pt2")
            program = path.with_name(AOTI_PROGRAM)
            subprocess.run(
                [sys.executable, "-c", BUILD_AOTI, str(partial), str(program), str(TARGETS)],
                check=True,
                env=dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(root / "aoti" / "cache")),
                capture_output=True,
                timeout=600,
            )
            partial.rename(path)
    return path


AOTI_PROGRAM = "two_inputs_program.pt2"
"""The exported program of the AOTInductor package's model, beside the package."""


@pytest.fixture(scope="session")
def cpp_agent() -> Path:
    """The C++ agent (``--runtime cpp``), built once per test run: every worker of the run
    shares one cache folder (``own_folders``), and the build's lock lets one build while the
    others wait. Skipped, with the reason, where no C++ compiler is found."""
    from warmscope.core.run import cpp_build

    try:
        cpp_build.compiler()
    except cpp_build.BuildError as exc:
        pytest.skip(str(exc))
    return cpp_build.build(cpp_build.agent_for(None))


@pytest.fixture(scope="session")
def cpp_archives(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TorchScript archives and input files for the C++ runtime's tests
    (``tests/targets/cpp_archives.py``), saved by a real torch in a child process once per
    test run: every worker of the run shares them (as ``aoti_package``), under a lock."""
    from filelock import FileLock  # torch's own dependency

    root = shared_folder(tmp_path_factory)
    folder = root / "cpp_archives"
    with FileLock(str(root / "cpp_archives.lock")):
        if not folder.exists():
            partial = root / "cpp_archives.partial"
            shutil.rmtree(partial, ignore_errors=True)
            subprocess.run(
                [sys.executable, "-m", "tests.targets.cpp_archives", str(partial)],
                check=True,
                cwd=Path(__file__).resolve().parent.parent,
            )
            partial.rename(folder)
    return folder


LONGEST_FIRST = (
    "test_cpp_warmup.py",
    "test_ray_sweep.py",
    "test_warmup.py",
    "test_pt2_targets.py",
    "test_exec.py",
    "test_exec_watch.py",
    "test_recipe_knobs.py",
    "test_warmup_outcomes.py",
    "test_remote.py",
    "test_hostile.py",
    "test_traffic.py",
    "test_reliability.py",
    "test_tui_hostile.py",
    "test_no_write_through_links.py",
    "test_tui_sweep.py",
    "test_tui_find.py",
    "test_feeding.py",
    "test_tui_compare.py",
    "test_run_plan.py",
    "test_markers.py",
    "test_tui_records.py",
    "test_tui_live.py",
    "test_hostile_documents.py",
    "test_first_call_explained.py",
    "test_profile_report.py",
    "test_tui_wire.py",
    "test_remote_targets.py",
    "test_tui_terminal_control.py",
    "test_live_record.py",
    "test_sweep.py",
    "test_event_reasons.py",
    "test_recipe_syntax.py",
    "test_cgroup.py",
    "test_cpp_knobs.py",
    "test_tui_profile.py",
    "test_export_command.py",
    "test_tui_faults.py",
    "test_cpp_runtime.py",
    "test_hostile_runs.py",
    "test_integration_run.py",
    "test_tui_snapshots.py",
    "test_hostile_archives.py",
    "test_hostile_ssh.py",
    "test_tui_honest_figures.py",
    "test_tui_fake_live.py",
    "test_first_contact.py",
    "test_bad_input.py",
    "test_one_fold.py",
    "test_hints_run.py",
    "test_observer_placement.py",
    "test_safe_text.py",
    "test_tui_start.py",
    "test_fresh_inputs.py",
    "test_env_keys.py",
    "test_core_units.py",
    "test_tui_terminals.py",
    "test_racing.py",
    "test_cpp_settings.py",
    "test_cli_errors.py",
)
"""Every file that takes 7 s or more (children by the dozen, a C++ build, a Ray cluster, the
TUI driven in process), longest first, by its tests' time in a whole run: with a file to a
worker (``--dist loadfile --no-loadscope-reorder``, as ``make pytest`` runs), a long file left
for the end keeps one worker busy while the other idles (with the 24 longest named, the last
minute of a run left a core half idle). Xdist's own order (most tests first) put the long files
of few tests last. A scheduling hint only: files not named keep their order, after these."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@dataclass
class RayCluster:
    address: str
    """The cluster's GCS address (``ray:ADDRESS`` joins it)."""
    client: str
    """Its Ray Client server's ``ray://`` address."""


QUIET_RAY: dict[str, Any] = {
    "memory_monitor_refresh_ms": 0,  # each raylet reads the memory figures every 250 ms
    "debug_dump_period_milliseconds": 0,  # each writes its state to a file every 10 s
    "task_events_report_interval_ms": 0,  # every worker and driver reports its tasks each second
    "enable_metrics_collection": False,  # no metrics from the agents, raylets and workers
    "prestart_worker_first_driver": False,  # a worker for the first driver's job, left idle
}
"""Ray's settings for the suite's cluster (``_system_config``): what a test cluster does not
need, left undone. (``event_stats_print_interval_ms=-1``, documented as "disabled", keeps
the GCS busy: not here.)"""


NO_GRPC_FORK = ("GRPC_ENABLE_FORK_SUPPORT", "0")
"""The environment a Ray head whose Ray Client server takes connections needs (docs/ray.md)."""


def two_node_cluster(client_port: int, *, grpc_fork: bool = False) -> Any:
    """A ``ray.cluster_utils.Cluster`` of two nodes on this machine, one CPU each, its head's
    Ray Client server on ``client_port``. Only what a test cluster needs runs: no autoscaler
    monitor, no log monitor (warmscope's drivers take no worker logs), and ``QUIET_RAY``.
    The head's processes start with gRPC's fork support off unless ``grpc_fork``: with it on,
    the client server's per-connection server, forked from a busy gRPC process, can die as it
    starts (ray#63202: three connections in a row, once, in a whole test run here)."""
    from ray.cluster_utils import Cluster

    with pytest.MonkeyPatch.context() as env:  # the head's processes inherit it; this one not
        if not grpc_fork:
            env.setenv(*NO_GRPC_FORK)
        cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 1,
                "include_dashboard": False,
                "ray_client_server_port": client_port,
                "no_monitor": True,
                "include_log_monitor": False,
                "_system_config": QUIET_RAY,
            },
        )
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
    except BaseException:
        cluster.shutdown()
        raise
    return cluster


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    """``two_node_cluster`` with its Ray Client server on a free loopback port, for one
    module's tests (test_ray_sweep holds every test that joins it): it lives only while they
    run, since its dozen processes poll all the while (about 3 CPU-seconds a minute here), and
    starting one takes a minute on a busy machine."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'warmscope[ray]')")
    pytest.importorskip("grpc", reason="Ray Client needs 'ray[client]'")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cluster = two_node_cluster(port)
    try:
        client = f"ray://127.0.0.1:{port}"
        wait_client_ready(client)
        yield RayCluster(str(cluster.address), client)
    finally:
        cluster.shutdown()


def wait_client_ready(address: str, within: float = 120) -> None:
    """Wait until the Ray Client server at ``address`` (``ray://HOST:PORT``) takes
    connections: the head starts it beside itself, and on a busy machine it listens some
    seconds later. No connection is made through it here: each starts a server on the head
    (a process importing Ray), and a connection whose server dies as it starts (inside Ray)
    is warmscope's to try again (``ray_executor.client_server_died``)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    deadline = time.monotonic() + within
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
            return
        except OSError as exc:
            if time.monotonic() > deadline:
                pytest.fail(f"no Ray Client server at {address}: {exc}")
            time.sleep(0.1)
