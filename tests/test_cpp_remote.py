"""``--runtime cpp --host``: the C++ agent's source travels with the Python files, is built
there against the remote interpreter's torch (cached there), and runs as a local one does; no
compiler there is one line. A real ``ssh`` client to an SSH server on the loopback."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_id_of, wait_gone, warmscope
from tests.ssh_server import Server, ssh_server
from warmscope.core.data.reading import read_run

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client")
PYTHON = sys.executable


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with ssh_server(tmp_path_factory.mktemp("ssh")) as running:
        yield running


def test_an_archive_runs_in_cpp_on_the_host(
    cpp_agent: Path, cpp_archives: Path, server: Server, tmp_path: Path
) -> None:
    """Built there (here: found in the cache the test run shares, the same key), started by
    the guardian, its dumps pinned to iterations 0 and 1, its start-up measured there."""
    r = warmscope(
        "run",
        str(cpp_archives / "speech.pt"),
        "--runtime",
        "cpp",
        "--input",
        "1x300x40",
        "--iters",
        "10",
        "--host",
        "127.0.0.1",
        "--python",
        PYTHON,
        "--no-explain",
        "--record",
        str(tmp_path / "remote.jsonl"),
        env=server.env(),
    )
    assert r.code == 0, r.stderr
    data = read_run(tmp_path / "remote.jsonl")
    assert (data.status, data.count) == ("ok", 10)
    assert data.env["runtime"] == "cpp" and data.env["host"] == "127.0.0.1"
    assert data.env["cpp_agent"]["path"] == str(cpp_agent)
    assert "start to main" in data.phases
    jit = {e.title: e.iteration for e in data.events if e.kind == "jit" and e.iteration is not None}
    assert jit["Profiled Graph"] == 0 and jit["Optimized Graph"] == 1
    assert wait_gone(run_id_of(tmp_path / "remote.jsonl"), 5) == []
    assert server.left() == []


def test_no_compiler_there_is_one_line(
    cpp_agent: Path, cpp_archives: Path, server: Server, tmp_path: Path
) -> None:
    bare = tmp_path / "python"
    bare.write_text(f'#!/bin/sh\nunset CXX\nexport PATH=/nonexistent\nexec {PYTHON} "$@"\n')
    bare.chmod(0o755)
    r = warmscope(
        "run",
        str(cpp_archives / "speech.pt"),
        "--runtime",
        "cpp",
        "--input",
        "1x300x40",
        "--iters",
        "2",
        "--host",
        "127.0.0.1",
        "--python",
        str(bare),
        "--no-explain",
        env=server.env(),
    )
    assert r.code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--host 127.0.0.1" in lines[0] and "install g++" in lines[0]
    assert server.left() == []
