"""``--memory-limit``: a run that hits it ends failed, naming memory; a bad size is one line."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from warmscope.core.data.record import read_run
from warmscope.core.run.cgroup import RunCgroup, out_of_memory

FACTORIES = Path(__file__).parent / "targets" / "factories.py"


def warmscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warmscope.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_model_that_outgrows_the_limit_fails_naming_memory(tmp_path: Path) -> None:
    record = tmp_path / "hog.jsonl"
    r = warmscope(
        "run",
        f"{FACTORIES}:hog",
        "--input",
        "4",
        "--iters",
        "40",
        "--memory-limit",
        "2G",
        "--record",
        str(record),
    )
    assert r.returncode == 1, r.stderr
    data = read_run(record)
    assert data.status == "failed"
    assert data.status_detail.startswith("out of memory: "), data.status_detail
    assert "--memory-limit 2G" in data.status_detail
    assert data.count < 40, "it ran out before the end"
    containment = data.env["containment"]
    assert containment["memory_limit"] == 2 << 30
    assert containment["memory_by"] in ("cgroup memory.max", "RLIMIT_AS")
    assert data.settings.memory_limit == "2G"
    assert "--memory-limit 2G" in " ".join(data.settings.command_line())


@pytest.mark.parametrize("size", ["lots", "1M", "3X"])
def test_a_bad_size_is_one_line(size: str) -> None:
    r = warmscope("run", f"{FACTORIES}:tiny", "--input", "8", "--memory-limit", size)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--memory-limit" in r.stderr
    assert "Traceback" not in r.stderr


def _limited_group(tmp_path: Path, oom_kills: int) -> RunCgroup:
    (tmp_path / "memory.events").write_text(f"low 0\nhigh 0\nmax 3\noom 1\noom_kill {oom_kills}\n")
    (tmp_path / "memory.peak").write_text(str(3 << 30))
    return RunCgroup(tmp_path, memory_limited=True)


def test_the_cgroup_oom_count_names_the_limit(tmp_path: Path) -> None:
    group = _limited_group(tmp_path, 1)
    why = out_of_memory(group, "3G", -signal.SIGKILL, False, None, [100.0])
    assert why == "the OOM killer ended it at --memory-limit 3G; it held 3,072 MB at most"
    assert out_of_memory(_limited_group(tmp_path, 0), "3G", 0, False, None, []) is None


def test_a_sigkill_with_the_hosts_oom_count_risen_names_memory() -> None:
    why = out_of_memory(None, None, -signal.SIGKILL, True, None, [2048.0, 5120.0])
    assert why is not None and "OOM killer" in why and "5,120 MB" in why
    assert out_of_memory(None, None, -signal.SIGKILL, False, None, []) is None
    assert out_of_memory(None, None, -signal.SIGTERM, True, None, []) is None


def test_an_allocation_error_under_an_address_space_limit() -> None:
    error = {"message": "RuntimeError: DefaultCPUAllocator: can't allocate memory: 512 MB"}
    why = out_of_memory(None, "2G", 1, False, error, [])
    assert why is not None and why.endswith("(under --memory-limit 2G, as RLIMIT_AS)")
    assert out_of_memory(None, None, 1, False, error, []) is None, "no limit: torch's own error"
    other = {"message": "ValueError: shapes do not match"}
    assert out_of_memory(None, "2G", 1, False, other, []) is None
