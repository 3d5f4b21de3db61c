"""``warmscope exec``: real programs run under the real command, their streams read through the
real socket, with real torch.

- a threaded ``http.server`` serving an eager and a ``torch.compile``'d model, sent requests
  of two batch sizes: one call per request with its module and input shapes, each group's
  first call marked, the compiles pinned to the calls that made them, the server's own output
  passed through and its exit code kept;
- a ``multiprocessing`` pool whose workers call the model: a record per process;
- programs without torch where torch adds nothing: a command that is not Python, a Python
  program that calls no module, a command that does not exist, SIGTERM passed on with
  nothing of the program left running, a stream that is not the observer's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest

from warmscope.core.data.reading import read_run

WARMSCOPE = [sys.executable, "-m", "warmscope.cli"]
PYTHON = sys.executable

SERVER = textwrap.dedent(
    """
    import json, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 16)
            self.b = torch.nn.Linear(16, 4)
        def forward(self, x):
            return self.b(torch.relu(self.a(x)))

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 2)
        def forward(self, x):
            return torch.tanh(self.a(x))

    models = {"/eager": Net(), "/compiled": torch.compile(Head())}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            path, _, query = self.path.partition("?")
            if path == "/quit":
                self.reply(b"bye")
                threading.Thread(target=server.shutdown).start()
                return
            with torch.no_grad():
                out = models[path](torch.randn(int(query), 16))
            self.reply(json.dumps(list(out.shape)).encode())

        def reply(self, body):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            print("served", self.path, file=sys.stderr, flush=True)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("serving on", server.server_address[1], flush=True)
    server.serve_forever()
    sys.exit(7)
    """
)

REQUESTS = [
    ("/eager", 1),
    ("/eager", 4),
    ("/eager", 1),
    ("/compiled", 1),
    ("/compiled", 1),
    ("/compiled", 4),
    ("/eager", 4),
    ("/compiled", 4),
]


def exec_command(tmp: Path, *args: str, program: list[str]) -> list[str]:
    return [
        *WARMSCOPE,
        "exec",
        "--headless",
        "--record",
        str(tmp / "r.jsonl"),
        *args,
        "--",
        *program,
    ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The server run once under ``warmscope exec --headless``, every request answered."""
    tmp = tmp_path_factory.mktemp("served")
    (tmp / "server.py").write_text(SERVER)
    command = exec_command(tmp, "--json", str(tmp / "doc.json"), program=[PYTHON, "server.py"])
    proc = subprocess.Popen(
        command, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("serving on"), first + proc.stderr.read()  # type: ignore[union-attr]
    port = int(first.split()[-1])
    answers = []
    for path, batch in REQUESTS:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}?{batch}", timeout=60) as r:
            answers.append(json.loads(r.read()))
    urllib.request.urlopen(f"http://127.0.0.1:{port}/quit", timeout=10).read()
    out, err = proc.communicate(timeout=60)
    return {
        "code": proc.returncode,
        "stdout": first + out,
        "stderr": err,
        "answers": answers,
        "doc": json.loads((tmp / "doc.json").read_text()),
        "record": tmp / "r.jsonl",
    }


def test_the_server_runs_as_itself_its_output_and_exit_code_its_own(served: dict[str, Any]) -> None:
    assert served["code"] == 7, served["stderr"]
    assert served["answers"] == [[b, 4] if p == "/eager" else [b, 2] for p, b in REQUESTS]
    assert served["stderr"].count("served /eager") == 4  # its own log lines, passed through
    assert "Traceback" not in served["stderr"]


def test_each_request_is_one_call_with_its_module_and_shapes(served: dict[str, Any]) -> None:
    doc = served["doc"]
    rows = doc["iterations"]
    want = [f"{'Net' if p == '/eager' else 'Head'}(float32[{b},16])" for p, b in REQUESTS]
    assert [r["shape"] for r in rows] == want  # one call per request, in the order served
    assert doc["status"] == "failed" and doc["exit_code"] == 7
    modules = {m["name"]: m for m in doc["exec"]["modules"].values()}
    assert modules["Net"]["kind"] == "eager" and modules["Head"]["kind"] == "compiled"
    assert modules["Net"]["params"] == 16 * 16 + 16 + 16 * 4 + 4
    # the threaded server calls each request on a thread of its own, each named
    threads = {r["thread"] for r in rows}
    assert len(threads) == len(REQUESTS)
    names = doc["exec"]["threads"]
    assert all("process_request_thread" in names[str(t)] for t in threads), names


def test_each_groups_first_call_is_marked_and_the_compiles_pinned(served: dict[str, Any]) -> None:
    doc = served["doc"]
    shapes = {row["key"]: row for row in doc["summary"]["shapes"]}
    firsts = {key: row["first_iteration"] for key, row in shapes.items()}
    assert firsts == {
        "Net(float32[1,16])": 0,
        "Net(float32[4,16])": 1,
        "Head(float32[1,16])": 3,
        "Head(float32[4,16])": 5,
    }
    compiles = [e for e in doc["events"] if e["kind"] == "compile"]
    # the compile ran inside the call that triggered it: the compiled model's first call,
    # and again at its first call of a new batch size; none on the eager model's calls
    assert [e["iteration"] for e in compiles] == [3, 5], compiles
    rows = doc["iterations"]
    assert rows[3]["label"] and rows[5]["label"]
    for n in (3, 5):  # the compile is most of that call
        ms = sum(e["ms"] for e in compiles if e["iteration"] == n)
        assert ms <= rows[n]["ms"] and ms > 0.5 * rows[n]["ms"]
    # and the same explanation, read back from the record
    data = read_run(served["record"])
    assert data.mode == "exec" and data.count == len(REQUESTS)
    assert data.label(3) == rows[3]["label"]


POOL = textwrap.dedent(
    """
    import multiprocessing as mp
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())

    def work(batch):
        with torch.no_grad():
            return tuple(model(torch.randn(batch, 8)).shape)

    if __name__ == "__main__":
        work(2)
        import subprocess, sys  # a Python helper that calls no module: no record of its own
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        pool = mp.get_context("fork").Pool(2)
        print(pool.map(work, [1, 2, 3, 4, 5, 6], chunksize=1), flush=True)
        pool.close()
        pool.join()
    """
)


def test_a_pools_workers_each_have_a_record(tmp_path: Path) -> None:
    (tmp_path / "pool.py").write_text(POOL)
    r = subprocess.run(
        exec_command(tmp_path, program=[PYTHON, "pool.py"]),
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "[(1, 8), (2, 8)" in r.stdout
    main = read_run(tmp_path / "r.jsonl")
    streams = main.exec["streams"]
    assert len(streams) == 2, streams  # the two workers, not the helper
    assert sorted(p.name for p in tmp_path.glob("r*.jsonl")) == sorted(["r.jsonl", *streams])
    workers = [read_run(tmp_path / name) for name in streams]
    assert main.count == 1 and main.shape_keys == ["Sequential(float32[2,8])"]
    assert sum(w.count for w in workers) == 6
    pids = {w.exec["process"]["pid"] for w in workers}
    assert all(w.exec["process"]["ppid"] == main.exec["process"]["pid"] for w in workers)
    assert len(pids) == 2
    for w in workers:
        assert all(k.startswith("Sequential(float32[") for k in w.shape_keys)
        assert w.status == "ok"


def run_exec(tmp: Path, program: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        exec_command(tmp, program=program), cwd=tmp, capture_output=True, text=True,
        timeout=60, **kw,
    )  # fmt: skip


def test_a_command_that_is_not_python_says_so_and_exits_as_it_did(tmp_path: Path) -> None:
    r = run_exec(tmp_path, ["sh", "-c", "echo from sh; exit 4"])
    assert r.returncode == 4
    assert r.stdout == "from sh\n"
    assert r.stderr.strip().splitlines() == [
        "warmscope: no process of sh loaded warmscope's observer: exec watches Python programs "
        "(a script, python -m, a console script) that read PYTHONPATH and run site "
        "(not python -S, -E or -I)"
    ]
    assert not (tmp_path / "r.jsonl").exists()  # nothing watched: no record


def test_a_program_that_calls_no_module_says_so(tmp_path: Path) -> None:
    r = run_exec(tmp_path, [PYTHON, "-c", "print('hello'); raise SystemExit(5)"])
    assert r.returncode == 5
    assert r.stdout == "hello\n"
    assert "the program never called a torch module" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 2  # the process watched, and that line


def test_bad_usage_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for program in (["no-such-command-here"], []):
        r = run_exec(tmp_path, program)
        assert r.returncode == 2
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr
    r = subprocess.run(
        [*WARMSCOPE, "exec", "--watch", "not a spec", "--headless", "--", PYTHON, "-c", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "--watch not a spec: expected MODULE:ATTRIBUTE" in r.stderr


def test_sigterm_reaches_the_program_and_nothing_of_it_is_left(tmp_path: Path) -> None:
    program = (
        "import subprocess, sys, time\n"
        "helper = subprocess.Popen(['sleep', '120'], start_new_session=True)\n"
        "print(helper.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen(
        exec_command(tmp_path, program=[PYTHON, "-c", program]),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    helper = int(proc.stdout.readline())
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    deadline = time.monotonic() + 5
    while psutil.pid_exists(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    gone = not psutil.pid_exists(helper) or psutil.Process(helper).status() == "zombie"
    assert gone, "the program's helper outlived it"


def test_a_stream_that_is_not_the_observers_is_dropped_and_the_program_runs_on(
    tmp_path: Path,
) -> None:
    program = (
        "import os, socket\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.connect(os.environ['WARMSCOPE_EXEC_SOCKET'])\n"
        "s.sendall(b'\\x1b[2J not json\\n' + b'x' * 100000)\n"
        "s.close()\n"
        "print('still here')\n"
    )
    r = run_exec(tmp_path, [PYTHON, "-c", program])
    assert r.returncode == 0, r.stderr
    assert r.stdout == "still here\n"
    assert "Traceback" not in r.stderr and "\x1b" not in r.stderr


def test_the_bootstrap_keeps_the_environments_own_sitecustomize(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import builtins; builtins.SITE_WAS_HERE = 1\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    r = run_exec(tmp_path, [PYTHON, "-c", "print(SITE_WAS_HERE)"], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "1\n"


LIBRARY = textwrap.dedent(
    """
    import torch

    def predict(x):
        return torch.nn.functional.linear(x, torch.ones(4, x.shape[-1]))

    class Runner:
        def run(self, x):
            return predict(x) * 2  # a watched call inside a watched call: not outermost

    runner = Runner()
    """
)


def test_watch_times_the_callables_it_names(tmp_path: Path) -> None:
    (tmp_path / "mylib.py").write_text(LIBRARY)
    program = "import torch, mylib\nfor b in (1, 2, 1):\n    mylib.runner.run(torch.randn(b, 8))\n"
    watches = ["--watch", "mylib:predict", "--watch", "mylib:runner.run", "--watch", "mylib:gone"]
    r = subprocess.run(
        exec_command(tmp_path, *watches, program=[PYTHON, "-c", program]),
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    data = read_run(tmp_path / "r.jsonl")
    assert data.shape_keys == ["runner.run(float32[1,8])", "runner.run(float32[2,8])"]
    assert data.count == 3  # predict ran inside each run: never an outermost call
    warnings = [e.title for e in data.events if e.kind == "warning"]
    assert warnings == ["--watch mylib:gone: not watched (mylib has no gone once imported)"]
