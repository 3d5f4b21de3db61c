"""``--host``: the child over a real ``ssh`` client to an SSH server on the loopback.

The server is asyncssh, in this process, on 127.0.0.1 (``tests/ssh_server.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import FACTORIES, PLANTED, Result, run_id_of, wait_gone, warmscope
from tests.ssh_server import Server, ssh_server
from warmscope.core.data.reading import read_run
from warmscope.core.data.run_summary import summary_dict
from warmscope.core.run.integrity import INTEGRITY
from warmscope.core.run.proctree import RUN_ID_VAR

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client")
PYTHON = sys.executable  # the remote interpreter: this one, which has torch
ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "tests" / "data" / "nvml" / "recorded-h100.json"  # a real H100's answers
HOSTILE = ROOT / "tests" / "faults" / "hostile.py"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with ssh_server(tmp_path_factory.mktemp("ssh")) as running:
        yield running


def _kinds_at(path: Path) -> list[tuple[object, object, object]]:
    return [(e.kind, e.iteration, e.title) for e in read_run(path).events]


@pytest.fixture(scope="module")
def over_host(server: Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    """sample:trivial over ``--host``: a sweep of two settings, each process there, read by the
    sweep's test; and its first setting's run here, with the same arguments, for the run
    there to be held to (shared: a sweep's process is the run that ``run`` starts)."""
    tmp_path = tmp_path_factory.mktemp("over_host")
    args = ["sample:trivial", "--iters", "20"]
    swept = warmscope(
        "sweep",
        *args,
        "--vary",
        "profiling_executor=on,off",
        "--repeat",
        "1",
        "--host",
        "127.0.0.1",
        "--python",
        PYTHON,
        "--record",
        str(tmp_path / "sweep"),
        env=server.env(),
        timeout=300,
    )
    assert swept.code == 0, swept.stderr
    # The run here explains nothing: the sweep's processes do not (they are samples).
    here = warmscope(
        "run", *args, "--set", "profiling_executor=on", "--no-explain", "--quiet",
        "--record", str(tmp_path / "local.jsonl"),
    )  # fmt: skip
    assert here.code == 0, here.stderr
    return tmp_path, swept


def _first_there(tmp_path: Path) -> Path:
    """The sweep's process of its first setting (``profiling_executor=on``), run there."""
    (first,) = (tmp_path / "sweep").glob("c0-*.jsonl")
    return first


def test_a_run_over_host_matches_a_local_one(
    server: Server, over_host: tuple[Path, Result]
) -> None:
    tmp_path, _ = over_host
    there = _first_there(tmp_path)
    remote, local = read_run(there), read_run(tmp_path / "local.jsonl")
    assert remote.settings.knobs == local.settings.knobs
    assert remote.settings.knobs["profiling_executor"] is True
    assert (remote.status, remote.count) == (local.status, local.count) == ("ok", 20)
    assert summary_dict(remote)["first_ms"] is not None
    # The same events, pinned to the same iterations.
    assert _kinds_at(there) == _kinds_at(tmp_path / "local.jsonl")
    # The record names the machine that ran the child; its samples were taken there.
    assert remote.env["host"] == "127.0.0.1"
    assert remote.env["hostname"] == socket.gethostname()
    assert remote.env["python_executable"] == PYTHON
    assert remote.env["torch"] == local.env["torch"]
    assert remote.env["samples"].startswith("taken there, from /proc")
    assert isinstance(remote.env["gpus"], list) and remote.env["nvml"]
    assert remote.samples and local.samples
    # No NVML there (this interpreter's, no GPU): the record says so, no GPU field sampled.
    env, gpu_fields = _gpu_of(there)
    assert env.keys() == {"gpus", "nvml"} and str(env["nvml"]).startswith("no GPU: NVML unavail")
    assert gpu_fields and not any(gpu_fields)
    for sample in remote.samples:  # the fields a local sample has, of the remote agent's tree
        assert sample.keys() >= {"cpu", "rss_mb", "threads", "procs", "sys_cpu", "t"}
    # The same process (an agent holding torch) as the local samples see, not the ssh client.
    peak = max(s["rss_mb"] for s in remote.samples)
    assert 0.5 < peak / max(s["rss_mb"] for s in local.samples) < 2
    # Nothing left on either side.
    assert wait_gone(run_id_of(there), 5) == []
    assert server.left() == []


@pytest.mark.parametrize(
    "case",
    ["unreachable", "refused key", "no python there", "not a python", "no torch there"],
)
def test_bad_remotes_say_why_in_one_line(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    """Through the command line's own ``main``, in this process (its ``ssh`` and whatever the
    remote end starts are real processes): no model runs, so no ``warmscope`` child is needed
    to see the exit code and the line."""
    from warmscope.cli import main

    python, env = PYTHON, server.env()
    if case == "unreachable":
        with socket.socket() as s:  # a port that was free a moment ago: nobody listens
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = server.env(port=port)
    elif case == "refused key":
        env = server.env(key=server.key.with_name("stranger"))
    elif case == "no python there":
        python = str(tmp_path / "nowhere" / "python3")
    elif case == "not a python":
        python = "/bin/ls"
    else:  # an interpreter with the standard library only
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
        python = str(tmp_path / "bare" / "bin" / "python")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    record = tmp_path / "r.jsonl"
    capsys.readouterr()
    argv = ["run", "sample:trivial", "--iters", "5", "--host", "127.0.0.1", "--python", python]
    code = main([*argv, "--record", str(record)])
    result = Result(code, *capsys.readouterr(), None)
    lines = result.stderr.strip().splitlines()
    assert result.code == 2, result.stderr
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    expected = {
        "unreachable": "Connection refused",
        "refused key": "Permission denied",
        "no python there": "no " + python,
        "not a python": "could not start the run",
        "no torch there": "has no torch",
    }[case]
    assert expected in lines[0]
    if case != "no torch there":  # the run never started: no record either
        assert not record.exists()
    assert server.left() == []


def _ssh_of(proc: subprocess.Popen[str]) -> psutil.Process | None:
    for child in psutil.Process(proc.pid).children(recursive=True):
        if child.name() == "ssh":
            return child
    return None


def _long_run(server: Server, record: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "warmscope.cli", "run", "sample:trivial"]
    argv += ["--duration", "60", "--host", "127.0.0.1", "--python", PYTHON]
    argv += ["--record", str(record)]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, **server.env()),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until the remote agent runs its iterations
        if record.exists() and '"type":"iters"' in record.read_text():
            return proc
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the remote run never started its iterations")


def test_a_stop_reaches_the_remote_agent(server: Server, tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    proc = _long_run(server, record)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    data = read_run(record)
    assert (data.status, data.status_detail) == ("stopped", "stopped by the user")
    assert data.count > 0
    assert wait_gone(run_id_of(record), 5) == []
    assert server.left() == []


def test_a_dropped_connection_ends_the_remote_run(server: Server, tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    proc = _long_run(server, record)
    run_id = run_id_of(record)
    ssh = _ssh_of(proc)
    assert ssh is not None
    ssh.kill()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    data = read_run(record)
    assert data.status == "crashed"
    assert data.status_detail.startswith("the connection to 127.0.0.1 was lost (ssh was killed")
    assert wait_gone(run_id, 10) == []  # the remote agent (it carries the run id) is gone
    deadline = time.monotonic() + 10
    while server.left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.left() == []


def test_the_record_says_the_command_that_reproduces_it(
    over_host: tuple[Path, Result],
) -> None:
    tmp_path, _ = over_host
    header = json.loads(_first_there(tmp_path).read_text().splitlines()[0])
    assert header["settings"]["host"] == "127.0.0.1"


def test_a_warm_compile_cache_is_refused_over_host(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each remote process has its own folder, gone with it: no cache outlives it to be warm.
    (Refused before anything runs: through ``main``, in this process.)"""
    from warmscope.cli import main

    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", server.options())
    record = tmp_path / "r.jsonl"
    capsys.readouterr()
    argv = ["run", "sample:trivial", "--mode", "compile", "--compile-cache", "warm"]
    code = main([*argv, "--host", "127.0.0.1", "--python", PYTHON, "--record", str(record)])
    result = Result(code, *capsys.readouterr(), None)
    assert result.code == 2
    assert result.stderr.strip().splitlines() == [
        "warmscope: --compile-cache warm: not over --host; use cold or user"
    ]
    assert not record.exists() and server.left() == []


def test_the_tui_shows_a_remote_run_live(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.pilot import Pilot

    from tests.tui_support import run, wait_for
    from warmscope.core.data.settings import RunSettings
    from warmscope.tui.app import build_app
    from warmscope.tui.widgets.run.iteration_table import IterationTable
    from warmscope.tui.widgets.run.run_header import RunHeader

    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", server.options())
    settings = RunSettings(target="sample:trivial", iters=30, host="127.0.0.1", python=PYTHON)
    settings.explain = False  # no second process there to explain a call: not what is shown
    app = build_app(settings=settings)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs)
        entry = app.runs[-1]
        table = app.screen.query_one(IterationTable)
        await wait_for(pilot, lambda: entry.view.finished)
        await wait_for(pilot, lambda: len(table.rows) > 0)
        assert entry.view.status == "ok"
        assert entry.session is not None
        data = read_run(entry.session.record_path)
        assert (data.count, data.env["host"]) == (30, "127.0.0.1")
        assert "on 127.0.0.1" in app.screen.query_one(RunHeader).plain, "where the child ran"

    run(app, scenario)
    assert server.left() == []


def test_warmscope_killed_leaves_nothing_on_the_remote(server: Server, tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    proc = _long_run(server, record)
    run_id = run_id_of(record)
    ssh = _ssh_of(proc)
    assert ssh is not None
    proc.kill()  # no handler runs: only the closed connection tells the remote end
    proc.communicate(timeout=30)
    assert wait_gone(run_id, 10) == []
    ssh.wait(timeout=10)
    deadline = time.monotonic() + 10
    while server.left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.left() == []


def test_a_sweep_runs_every_process_on_the_host(
    server: Server, over_host: tuple[Path, Result]
) -> None:
    tmp_path, _ = over_host
    folder = tmp_path / "sweep"
    records = sorted(folder.glob("*.jsonl"))
    assert len(records) == 2
    for record in records:
        data = read_run(record)
        assert (data.status, data.count, data.env["host"]) == ("ok", 20, "127.0.0.1")
        assert data.samples
    assert (folder / "sweep.json").is_file()
    assert server.left() == []


def test_a_memory_limit_holds_on_the_host(server: Server, tmp_path: Path) -> None:
    """On the loopback the factories file is at the same path on both ends."""
    record = tmp_path / "hog.jsonl"
    result = warmscope(
        "run",
        f"{FACTORIES}:hog",
        "--input",
        "4",
        "--iters",
        "40",
        "--memory-limit",
        "2G",
        "--host",
        "127.0.0.1",
        "--python",
        PYTHON,
        "--record",
        str(record),
        env=server.env(),
        timeout=180,
    )
    assert result.code == 1, result.stderr
    data = read_run(record)
    assert data.status == "failed"
    assert data.status_detail.startswith("out of memory: "), data.status_detail
    assert "--memory-limit 2G" in data.status_detail
    assert data.count < 40, "it ran out before the end"
    held = data.env["containment"]
    assert (held["memory_limit"], held["memory_by"]) == (2 << 30, "RLIMIT_AS")
    assert server.left() == []


def _kept(path: Path) -> tuple[object, ...]:
    """What a crashed run's record says of it: its end, its iterations, and its events (the
    recovered ones and where the crash's own text is pinned), as (kind, iteration, title)."""
    data = read_run(path)
    events = [(e.kind, e.iteration, e.title) for e in data.events]
    return data.status, data.status_detail, data.count, events


@pytest.mark.parametrize("fault_at", ["3", "4000"])
def test_a_hard_crash_over_host_keeps_what_a_local_one_keeps(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault_at: str
) -> None:
    """A segfault in iteration K: the iterations measured but not sent come back from the
    guardian's ring, and the crash's text is pinned to the iteration in flight, as locally.
    (K = 3 strikes before any batch is sent; K = 4000 after some were.)"""
    monkeypatch.setenv("FAULT_AT", fault_at)  # the server's commands inherit it, as the CLI does
    args = [f"{PLANTED}:segfault", "--input", "4", "--iters", str(2 * int(fault_at) + 20)]
    args += ["--mode", "eager", "--jit-log", "profiling_graph_executor_impl"]  # markers on
    there = warmscope(
        "run", *args, "--host", "127.0.0.1", "--python", PYTHON,
        "--record", str(tmp_path / "remote.jsonl"), env=server.env(),
    )  # fmt: skip
    here = warmscope("run", *args, "--record", str(tmp_path / "local.jsonl"))
    assert there.code == here.code == 1, there.stderr
    status, detail, count, events = _kept(tmp_path / "remote.jsonl")
    assert (status, detail, count) == ("crashed", "the child died from SIGSEGV", int(fault_at))
    recovered = [e for e in events if e[2].startswith("recovered ")]
    assert recovered, "some iterations were still unsent as the child died"
    assert [e[1] for e in events if "Segmentation fault" in e[2]] == [int(fault_at)]
    if fault_at == "3":  # nothing sent before the crash: the same record, event for event
        assert _kept(tmp_path / "remote.jsonl") == _kept(tmp_path / "local.jsonl")
    else:
        assert _kept(tmp_path / "local.jsonl")[:3] == (status, detail, count)
    assert wait_gone(run_id_of(tmp_path / "remote.jsonl"), 5) == []
    assert server.left() == []


def test_a_forged_ring_over_host_fails_the_run_as_locally(server: Server, tmp_path: Path) -> None:
    """What the guardian's ring held goes through a local ring's checks: a model that fills it
    with forged timings and dies fails its run, naming the ring, and no forged timing is kept."""
    record = tmp_path / "r.jsonl"
    started = time.monotonic()
    result = warmscope(
        "run", f"{HOSTILE}:writes_ring", "--input", "4", "--iters", "20",
        "--host", "127.0.0.1", "--python", PYTHON, "--record", str(record), env=server.env(),
    )  # fmt: skip
    took = time.monotonic() - started
    assert result.code == 1, result.stderr
    data = read_run(record)
    assert data.status == "failed" and data.status_detail.startswith(INTEGRITY)
    assert "the shared ring" in data.status_detail, data.status_detail
    assert all(0 <= ms < took * 1000 for ms in data.ms), "no forged timing was kept"
    assert server.left() == []


NVML_FROM_RECORDING = f"""
\"\"\"pynvml for a test: nvidia-ml-py's own errors, the answers of a recording
(tests/nvml_replay.py), the recorded child's pid read as the agent's (this process's child).\"\"\"
import os, sys
from pathlib import Path

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
del sys.modules["pynvml"]
import pynvml  # nvidia-ml-py itself, for its error classes

sys.path.insert(0, {str(ROOT)!r})
from tests import nvml_replay

recording = nvml_replay.load(Path({str(RECORDING)!r}))


def agent_child():
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{{name}}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{{name}}/cmdline", "rb") as f:
                agent = b"agent.py" in f.read()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and agent:
            return int(name)
    return None


class AgentPid(dict):
    found = None  # kept once found: a zombie's command line reads empty

    def __bool__(self):
        return True

    def get(self, pid, default=None):
        if pid != recording["child_pid"]:
            return default
        self.found = self.found or agent_child()
        return self.found or default


sys.modules["pynvml"] = nvml_replay.replay(recording, pid_map=AgentPid())
"""


def _gpu_of(path: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    data = read_run(path)
    env = {k: v for k, v in data.env.items() if k in ("gpu", "gpus", "driver", "nvml")}
    return env, [{k: v for k, v in s.items() if k.startswith("gpu_")} for s in data.samples]


def test_the_gpu_is_sampled_on_the_remote(server: Server, tmp_path: Path) -> None:
    """NVML from a recording stands in on both ends (no GPU here; the real NVML path is tested
    on a GPU machine, tests/gpu/). This torch has no CUDA, so a ``cuda:0`` run stops at its
    device, after torch's import: samples enough, taken by the guardian over there, with the
    same GPU fields and the same ``env`` as a local run's. (Without NVML there, none:
    ``test_a_run_over_host_matches_a_local_one``.)"""
    shim = tmp_path / "nvml"
    shim.mkdir()
    (shim / "pynvml.py").write_text(NVML_FROM_RECORDING)
    remote_python = tmp_path / "python-with-nvml"  # the interpreter there finds the recording
    remote_python.write_text(f'#!/bin/sh\nPYTHONPATH={shim} exec {PYTHON} "$@"\n')
    remote_python.chmod(0o755)
    args = ["run", "sample:trivial", "--device", "cuda:0"]
    runs = {"remote": ["--host", "127.0.0.1", "--python", str(remote_python)], "local": []}
    for name, extra in runs.items():
        env = {"PYTHONPATH": str(shim)} if name == "local" else server.env()
        result = warmscope(*args, *extra, "--record", str(tmp_path / f"{name}.jsonl"), env=env)
        assert result.code == 2, result.stderr
        assert "CUDA is not available" in result.stderr.strip().splitlines()[-1]
    env, samples = _gpu_of(tmp_path / "remote.jsonl")
    assert env["driver"] == "580.159.04" and env["nvml"] == "ok"
    assert env["gpu"]["name"] == "NVIDIA H100 80GB HBM3"  # type: ignore[index]
    assert samples and samples[-1]["gpu_util"] == 99
    assert samples[-1]["gpu_proc_mem_mb"] == 838.0, "the remote agent's own share"
    assert samples[0].keys() == _gpu_of(tmp_path / "local.jsonl")[1][0].keys()
    assert env == _gpu_of(tmp_path / "local.jsonl")[0]
    assert read_run(tmp_path / "remote.jsonl").env["samples"].endswith("and NVML (the GPU)")
    assert server.left() == []


def test_a_connection_gone_as_the_agent_starts_ends_it_and_its_folder(tmp_path: Path) -> None:
    """The guardian's start read, then EOF at once (ssh gone as the agent forks): the agent,
    which may not yet lead a process group of its own, ends, and so do the guardian and its
    folder. A few rounds: the fork's window is short."""
    from warmscope.core.run import remote

    start, _ = remote.payload({"kind": "module"}, {RUN_ID_VAR: f"{os.getpid()}-gone"}, 10.0)
    env = dict(os.environ, TMPDIR=str(tmp_path))
    for _ in range(5):
        guardian = subprocess.Popen(
            [PYTHON, "-c", remote.BOOTSTRAP],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        assert guardian.stdin is not None
        guardian.stdin.write(start)
        guardian.stdin.close()
        try:
            guardian.wait(timeout=20)
        finally:
            with contextlib.suppress(OSError):
                os.killpg(guardian.pid, signal.SIGKILL)
            guardian.wait()
            assert wait_gone(f"{os.getpid()}-gone", 10) == []
        assert list(tmp_path.iterdir()) == []


def test_a_signal_reaches_an_agent_not_yet_leading_its_group() -> None:
    from warmscope.core.child.remote_guardian import Agent, end_run

    child = subprocess.Popen(["sleep", "60"])  # in this process's group, as before its setsid
    agent = Agent(child.pid)
    end_run(child.pid, "")  # its group is not its own: this alone misses it
    assert child.poll() is None
    agent.signal(signal.SIGKILL)
    assert os.WTERMSIG(agent.wait()) == signal.SIGKILL
    agent.signal(signal.SIGKILL)  # reaped: its pid may be another's, and is left alone
