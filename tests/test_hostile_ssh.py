"""``--host`` against an ``ssh`` that misbehaves: a fake ``ssh`` executable first on ``PATH`` (a
real process, as the attacker's was) that never reads its stdin, answers a hello without its
fields, or sends an endless line after a valid hello. Every wait has a deadline, and the ssh
is ended on every way out, SIGTERM of warmscope included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import running
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.settings import RunSettings
from warmscope.core.run import pipes, remote
from warmscope.core.run.run_plan import start_run

FAKE = """#!{python}
# A stand-in for ssh: it says where it runs, then does as its kind says.
import json, os, sys, threading, time
kind = {kind!r}
with open({pidfile!r}, "w") as f:
    f.write(str(os.getpid()))


def drain():
    while os.read(0, 1 << 16):
        pass


if kind == "deaf":  # never reads its stdin, never answers
    time.sleep(600)
threading.Thread(target=drain, daemon=True).start()
hello = {{"t": "remote"}}
if kind == "endless":
    hello.update(home="/nonexistent/warmscope-remote", pid=os.getpid(), ring={{}})
out = sys.stdout.buffer
out.write(json.dumps(hello).encode() + b"\\n")
out.flush()
if kind == "endless":  # a line that never ends
    chunk = b"x" * (1 << 16)
    while True:
        out.write(chunk)
        out.flush()
time.sleep(600)
"""


def fake_ssh(folder: Path, kind: str) -> tuple[dict[str, str], Path]:
    """A folder holding an ``ssh`` of that ``kind``, and the environment that finds it first."""
    folder.mkdir(exist_ok=True)
    pidfile = folder / "ssh.pid"
    script = folder / "ssh"
    script.write_text(FAKE.format(python=sys.executable, kind=kind, pidfile=str(pidfile)))
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}, pidfile


def ssh_gone(pidfile: Path, within: float) -> bool:
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def deaf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    env, pidfile = fake_ssh(tmp_path / "bin", "deaf")
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setattr(remote, "HELLO_TIMEOUT_S", 3.0)
    return pidfile


def test_an_ssh_that_never_reads_is_given_up_on_and_ended(deaf: Path, tmp_path: Path) -> None:
    """The bootstrap alone is more than a pipe holds: writing it waited for ever."""
    settings = RunSettings(target="sample:trivial", host="stalled-box", iters=2)
    t0 = time.monotonic()
    with pytest.raises(UsageError, match=r"--host stalled-box: .*no answer in 3 s"):
        start_run(settings, record_path=tmp_path / "r.jsonl")
    assert time.monotonic() - t0 < 30
    assert ssh_gone(deaf, 5)


def test_large_inputs_to_an_ssh_that_never_reads_are_given_up_on(
    deaf: Path, tmp_path: Path
) -> None:
    inputs = tmp_path / "inputs.pt"
    inputs.write_bytes(b"\0" * (8 << 20))  # beyond any pipe or ssh window
    settings = RunSettings(
        target="sample:trivial", host="stalled-box", iters=2, inputs_file=str(inputs)
    )
    t0 = time.monotonic()
    with pytest.raises(UsageError, match="no answer in 3 s"):
        start_run(settings, record_path=tmp_path / "r.jsonl")
    assert time.monotonic() - t0 < 30
    assert ssh_gone(deaf, 5)


def test_sigterm_while_ssh_stalls_ends_warmscope_and_the_ssh(tmp_path: Path) -> None:
    env, pidfile = fake_ssh(tmp_path / "bin", "deaf")
    with running(
        *("run", "sample:trivial", "--host", "box"),
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # warmscope is now writing to the ssh, which never reads
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode != 0
    assert "Traceback" not in err
    assert ssh_gone(pidfile, 10), "the ssh outlived warmscope"


def test_a_hello_without_its_fields_is_one_line(tmp_path: Path) -> None:
    env, pidfile = fake_ssh(tmp_path / "bin", "bare")
    r = subprocess.run(
        [sys.executable, "-m", "warmscope.cli", "run", "sample:trivial", "--host", "box"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "--host box" in lines[0] and "home" in lines[0]
    assert ssh_gone(pidfile, 5)


def test_an_endless_line_after_a_valid_hello_ends_the_run_in_seconds(tmp_path: Path) -> None:
    env, pidfile = fake_ssh(tmp_path / "bin", "endless")
    record = tmp_path / "endless.jsonl"
    t0 = time.monotonic()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "warmscope.cli",
            "run",
            "sample:trivial",
            "--host",
            "box",
            "--record",
            str(record),
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=150,
    )
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    assert took < 60, f"{took:.0f} s to read {pipes.MAX_PROTOCOL_LINE >> 20} MiB"
    end = json.loads(record.read_text().splitlines()[-1])
    assert end["type"] == "end" and end["status"] == "failed"
    assert ssh_gone(pidfile, 10)
