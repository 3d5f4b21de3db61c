"""``warmscope exec``'s child side: real programs, started with the bootstrap on ``PYTHONPATH``
and their streams read from a socket this test listens on, with real torch.

Each torch program is one process (the torch import is most of a test's time): one eager
program covers the calls, signatures, threads, nesting, fork and the environment's own
``sitecustomize``; one compiled program is run watched and unwatched and its dynamo counters
compared; the failure cases run programs without torch where torch adds nothing.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

BOOT = Path(__file__).resolve().parent.parent / "core" / "child" / "exec_boot"


@dataclass
class Stream:
    """One process's stream, decoded: its lines in order, the calls unpacked."""

    lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def hello(self) -> dict[str, Any]:
        assert self.lines and self.lines[0]["t"] == "hello", self.lines[:1]
        return self.lines[0]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["t"] == kind]

    def table(self, kind: str) -> dict[int, dict[str, Any]]:
        return {line["id"]: line for line in self.of(kind)}

    def calls(self) -> list[dict[str, Any]]:
        """Every call as a dict (number, module, signature, thread, start, duration), by
        number."""
        found = []
        for batch in self.of("calls"):
            if "n" not in batch:
                continue
            columns = {name: _column(batch[name]) for name in ("n", "m", "s", "th", "st", "ns")}
            found += [
                dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)
            ]
        return sorted(found, key=lambda call: call["n"])


def _column(text: str) -> list[int]:
    import base64

    values = array("q")
    values.frombytes(base64.b64decode(text))
    if sys.byteorder == "big":
        values.byteswap()
    return list(values)


class Listener:
    """The parent's end: a Unix socket in a short private folder (socket paths are short),
    each connection read to its end as one stream."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="wsx-")
        self.path = os.path.join(self.folder, "exec.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(16)
        self.raw: list[bytearray] = []
        self.readers: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            data = bytearray()
            self.raw.append(data)
            reader = threading.Thread(target=self._read, args=(conn, data), daemon=True)
            self.readers.append(reader)
            reader.start()

    @staticmethod
    def _read(conn: socket.socket, data: bytearray) -> None:
        with conn:
            while chunk := conn.recv(1 << 16):
                data += chunk

    def streams(self) -> list[Stream]:
        """Every stream, once each has ended (its process gone)."""
        for reader in list(self.readers):
            reader.join(timeout=30)
        return [
            Stream([json.loads(line) for line in bytes(data).splitlines()]) for data in self.raw
        ]

    def close(self) -> None:
        self.server.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


def run(
    program: Path, *, watch: str | None, pythonpath: Sequence[Path] = (), **env: str
) -> subprocess.CompletedProcess[str]:
    """``program`` as the user would run it; with ``watch`` (a socket path), with the
    bootstrap first on ``PYTHONPATH``."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("WARMSCOPE_EXEC")}
    paths = [str(p) for p in pythonpath]
    if watch is not None:
        paths.insert(0, str(BOOT))
        environment["WARMSCOPE_EXEC_SOCKET"] = watch
    environment["PYTHONPATH"] = os.pathsep.join(paths)
    environment.update(env)
    # Its own process group: a program that hangs is ended with everything it forked.
    proc = subprocess.Popen(
        [sys.executable, str(program)],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=program.parent,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


# -- an eager program ------------------------------------------------------------------------

EAGER = """
    import multiprocessing, os, sys, threading
    import torch
    from torch import nn

    torch.set_num_threads(1)  # a fork after OpenMP ran in another thread can hang, watched or not

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(2))

        def forward(self, x, mask=None):
            for block in self.blocks:
                x = block(x)
            return NORM(x)  # a module of the program's, not a child: called nested

    NORM = nn.LayerNorm(8)
    model, head = Model(), nn.Linear(8, 2)
    with torch.no_grad():
        model(torch.randn(2, 8))                                 # call 0: [2,8]
        model(torch.randn(2, 8))                                 # call 1: [2,8] again
        model(torch.randn(4, 8), mask=torch.ones(4, dtype=torch.bool))  # a new signature
        head(model(torch.randn(2, 8)))                           # two outermost calls
        worker = threading.Thread(target=model, args=(torch.randn(1, 8),), name="worker")
        worker.start()
        worker.join()
        forked = multiprocessing.get_context("fork").Process(target=model, args=(torch.randn(3, 8),))
        forked.start()
        forked.join()
    print("done", os.environ.get("USER_SITECUSTOMIZE"))
    sys.exit(3)
"""

USER_SITECUSTOMIZE = """
    import os
    os.environ["USER_SITECUSTOMIZE"] = "ran"
"""


def test_an_eager_programs_calls(tmp_path: Path, listener: Listener) -> None:
    program = write(tmp_path, "serve.py", EAGER)
    site = tmp_path / "site"
    site.mkdir()
    write(site, "sitecustomize.py", USER_SITECUSTOMIZE)

    proc = run(program, watch=listener.path, pythonpath=[site])
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "done ran\n", "")

    streams = sorted(listener.streams(), key=lambda s: s.hello["pid"])
    assert len(streams) == 2, [s.lines[:1] for s in streams]  # the program and its fork
    main, forked = streams
    assert forked.hello["ppid"] == main.hello["pid"]
    assert main.hello["argv"][-1] == str(program)
    assert [p["name"] for p in main.of("phase")] == ["import torch"]

    modules = main.table("module")
    signatures = {k: v["text"] for k, v in main.table("signature").items()}
    calls = main.calls()
    named = [(modules[c["m"]]["name"], signatures[c["s"]]) for c in calls]
    # One call per outermost forward: Model's four, head's, the thread's; never Block,
    # Linear (as a child) or the LayerNorm called inside Model's forward.
    assert named == [
        ("Model", "float32[2,8]"),
        ("Model", "float32[2,8]"),
        ("Model", "float32[4,8], mask=bool[4]"),
        ("Model", "float32[2,8]"),
        ("Linear", "float32[2,8]"),
        ("Model", "float32[1,8]"),
    ]
    assert modules[calls[0]["m"]]["cls"] == "__main__.Model"
    assert modules[calls[0]["m"]]["kind"] == "eager"
    assert modules[calls[0]["m"]]["params"] == 2 * 2 * (8 * 8 + 8)  # NORM is not a child
    # One signature line each, sent before the first call that has it.
    assert sorted(signatures.values()) == sorted(set(signatures.values()))
    assert [c["s"] for c in calls] == [0, 0, 1, 0, 0, 2]
    threads = {t["th"]: t["name"] for t in main.of("thread")}
    assert threads[calls[0]["th"]] == "MainThread"
    assert threads[calls[-1]["th"]] == "worker"
    assert calls[-1]["th"] != calls[0]["th"]
    assert all(c["ns"] > 0 for c in calls)
    assert all(a["st"] + a["ns"] <= b["st"] for a, b in itertools.pairwise(calls))

    # The forked worker's call is in its own stream, with its own tables.
    (worker_call,) = forked.calls()
    assert forked.table("module")[worker_call["m"]]["name"] == "Model"
    assert forked.table("signature")[worker_call["s"]]["text"] == "float32[3,8]"
    assert worker_call["th"] == forked.hello["pid"]


# -- the failures ----------------------------------------------------------------------------

PLAIN = """
    import sys
    print("plain", sys.argv[0].rpartition("/")[2])
    sys.stderr.write("to stderr\\n")
    sys.exit(5)
"""


def test_a_warmscope_that_cannot_be_reached_leaves_the_program_alone(tmp_path: Path) -> None:
    program = write(tmp_path, "plain.py", PLAIN)
    log = tmp_path / "exec.log"
    alone = run(program, watch=None)
    unreached = run(program, watch=str(tmp_path / "no.sock"), WARMSCOPE_EXEC_LOG=str(log))
    assert (unreached.returncode, unreached.stdout, unreached.stderr) == (
        alone.returncode,
        alone.stdout,
        alone.stderr,
    )
    assert alone.returncode == 5
    (line,) = log.read_text().splitlines()
    assert "cannot reach warmscope" in line and "no.sock" in line


HANGS_UP = """
    import sys, time
    import torch
    model = torch.nn.Linear(4, 4)
    for _ in range(200):
        model(torch.randn(2, 4))
        time.sleep(0.002)
    print("served")
    sys.exit(4)
"""


def test_a_parent_that_hangs_up_leaves_the_program_running(tmp_path: Path) -> None:
    program = write(tmp_path, "serve.py", HANGS_UP)
    folder = tempfile.mkdtemp(prefix="wsx-")
    path = os.path.join(folder, "exec.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def hang_up() -> None:  # reads the hello, then goes away
        conn, _ = server.accept()
        conn.recv(4096)
        time.sleep(0.05)
        conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        proc = run(program, watch=path)
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (4, "served\n", "")


BROKEN_SITECUSTOMIZE = """
    import os
    os.environ["USER_SITECUSTOMIZE"] = "half"
    raise RuntimeError("the environment's own")
"""

SHOWS_SITECUSTOMIZE = """
    import os, sys
    import sitecustomize
    print(os.environ.get("USER_SITECUSTOMIZE"), sitecustomize.__file__)
    print(sys.path[:1] == [os.path.dirname(os.path.abspath(__file__))])
"""


def test_the_environments_own_sitecustomize_runs_as_it_would_have(
    tmp_path: Path, listener: Listener
) -> None:
    program = write(tmp_path, "show.py", SHOWS_SITECUSTOMIZE)
    site = tmp_path / "site"
    site.mkdir()
    write(site, "sitecustomize.py", USER_SITECUSTOMIZE)
    alone = run(program, watch=None, pythonpath=[site])
    watched = run(program, watch=listener.path, pythonpath=[site])
    assert watched.stdout == alone.stdout == f"ran {site / 'sitecustomize.py'}\nTrue\n"
    assert watched.stderr == alone.stderr == ""

    # One that raises: the same one-line report from the interpreter, and the program runs
    # (``import sitecustomize`` then fails in both, as it would have).
    write(site, "sitecustomize.py", BROKEN_SITECUSTOMIZE)
    program = write(tmp_path, "plain.py", PLAIN)
    alone = run(program, watch=None, pythonpath=[site])
    watched = run(program, watch=listener.path, pythonpath=[site])
    assert (watched.returncode, watched.stdout, watched.stderr) == (
        alone.returncode,
        alone.stdout,
        alone.stderr,
    )
    assert "Error in sitecustomize" in alone.stderr
    streams = listener.streams()
    assert [s.hello["argv"][-1] for s in streams] == [str(tmp_path / "show.py"), str(program)]


# -- torch.compile ---------------------------------------------------------------------------

COMPILED = """
    import json
    import torch
    from torch import nn
    from torch._dynamo.utils import counters

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

        def forward(self, x):
            y = self.a(x)
            if y.sum() > 1e9:  # data-dependent: a graph break where it is traced whole
                print("large")
            return self.b(torch.relu(y))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(2))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    graphs = {}

    def counting(name):
        def backend(gm, example_inputs):
            graphs[name] = graphs.get(name, 0) + 1
            return gm.forward
        return backend

    torch.manual_seed(0)
    wrapped = torch.compile(Model(), backend=counting("wrapped"))
    in_place = Model()
    in_place.compile(backend=counting("in_place"))
    inner = Model()
    function = torch.compile(lambda x: inner(x), backend=counting("function"))
    for shape in [(2, 8), (2, 8), (5, 8), (7, 8), (5, 8)]:
        x = torch.randn(*shape)
        for compiled in (wrapped, in_place, function):
            compiled(x)
    print(json.dumps({"graphs": graphs, "counters": {k: dict(v) for k, v in counters.items()}}))
"""


def _log_text(stderr: str) -> str:
    """torch's log lines without their time and process id."""
    return re.sub(r"(?m)^([IWE])\d{4} [\d:.]+ \d+ ", r"\1 ", stderr)


def test_watching_changes_nothing_torch_compile_does(tmp_path: Path, listener: Listener) -> None:
    program = write(tmp_path, "compiled.py", COMPILED)
    alone = run(program, watch=None)
    watched = run(program, watch=listener.path)
    assert alone.returncode == watched.returncode == 0, alone.stderr + watched.stderr
    assert _log_text(watched.stderr) == _log_text(alone.stderr)  # torch's own warnings alike
    unwatched_counts = json.loads(alone.stdout.splitlines()[-1])
    watched_counts = json.loads(watched.stdout.splitlines()[-1])
    assert watched_counts == unwatched_counts
    counters = unwatched_counts["counters"]
    assert counters["stats"]["unique_graphs"] >= 6  # two shapes each: recompiles happened
    assert counters["graph_break"]  # and graph breaks

    (stream,) = listener.streams()
    modules = stream.table("module")
    calls = stream.calls()
    kinds = [(modules[c["m"]]["name"], modules[c["m"]]["kind"]) for c in calls]
    # Five shapes through three compiled callables: the two compiled modules' calls are
    # timed as compiled, the function's model as the eager module it calls.
    assert kinds == [("Model", "compiled"), ("Model", "compiled"), ("Model", "eager")] * 5
    compiles = stream.of("event")
    numbers = {c["n"] for c in calls}
    pinned = [e for e in compiles if e["kind"] == "compile" and "call" in e]
    assert pinned and {e["call"] for e in pinned} <= numbers
    assert any(e["kind"] == "graph_break" for e in compiles)
    first = calls[0]["n"]
    assert any(e["call"] == first for e in pinned)  # the first call compiled
