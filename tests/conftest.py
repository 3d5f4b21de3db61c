"""Shared helpers: run the real `warmscope` command line in a real child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from warmscope.core.run.session import RUN_ID_VAR

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


@pytest.fixture(scope="session")
def cpp_agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The C++ agent (``--runtime cpp``), built once per test run: every worker of the run
    shares one cache folder (the run's temporary root, unless ``WARMSCOPE_CACHE_DIR`` names
    one), and the build's lock lets one build while the others wait. Skipped, with the reason,
    where no C++ compiler is found."""
    from warmscope.core.run import cpp_build

    try:
        cpp_build.compiler()
    except cpp_build.BuildError as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # popen-gwN's parent: the same folder for every worker
    # Inherited by the `warmscope` commands the tests start too.
    os.environ.setdefault(cpp_build.CACHE_VAR, str(root / "cpp-cache"))
    return cpp_build.build(cpp_build.agent_for(None))


@pytest.fixture(scope="session")
def cpp_archives(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TorchScript archives and input files for the C++ runtime's tests
    (``tests/targets/cpp_archives.py``), saved by a real torch in a child process."""
    folder = tmp_path_factory.mktemp("cpp_archives")
    subprocess.run(
        [sys.executable, "-m", "tests.targets.cpp_archives", str(folder)],
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return folder
