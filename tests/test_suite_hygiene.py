"""The test suite keeps out of the user's folders: no record in ``~/.local/state/warmscope``,
no ``/tmp/warmscope-ray-*`` left behind (``conftest.own_folders``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from warmscope.core.data.record import new_folder, record_dir


def test_default_records_go_to_the_sessions_own_state_folder(own_folders: Path) -> None:
    users = Path.home() / ".local" / "state" / "warmscope"
    assert not record_dir().is_relative_to(users)
    assert record_dir().is_relative_to(own_folders)
    # A child the tests start (``warmscope …``) finds the same folder.
    seen = subprocess.run(
        [
            sys.executable,
            "-c",
            "from warmscope.core.data.record import record_dir; print(record_dir())",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "WARMSCOPE_RECORD_DIR"},
    ).stdout.strip()
    assert Path(seen).is_relative_to(own_folders)
    folder = new_folder(None, "warmup", "sample:speech")  # what a warm-up without --record makes
    assert folder.is_relative_to(own_folders)


def test_temporary_folders_are_the_sessions_own(own_folders: Path) -> None:
    """What a Ray task makes (``tempfile.mkdtemp(prefix="warmscope-ray-")``), here and in the
    children, lands in a folder the session removes when it ends."""
    made = Path(tempfile.mkdtemp(prefix="warmscope-ray-"))
    assert made.is_relative_to(own_folders)
    child = subprocess.run(
        [sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp(prefix='warmscope-ray-'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(child).is_relative_to(own_folders)
    # Ray's own session folder stays where Ray keeps it (its socket paths are short).
    assert os.environ.get("RAY_TMPDIR")


def test_compile_caches_are_the_sessions_own(own_folders: Path) -> None:
    """A user's inductor/triton cache is neither filled by the suite nor measured on (a compile
    warm-up measures on the user's cache too, where it has entries)."""
    from warmscope.core.run.compile_cache import user_folders

    for path in user_folders(dict(os.environ)).values():
        assert path.is_relative_to(own_folders)


def test_cpp_builds_go_to_one_cache_every_worker_shares(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The C++ agent and the recipes' libraries are built once per test run, not once per
    worker nor into the user's ``~/.cache/warmscope``: every worker and every child it starts
    finds the same cache folder before any test asks for a build."""
    from tests.conftest import shared_folder
    from warmscope.core.child.cpp_make import CACHE_VAR, cache_root

    root = cache_root()
    assert root == Path(os.environ[CACHE_VAR])
    seen = subprocess.run(
        [
            sys.executable,
            "-c",
            "from warmscope.core.child.cpp_make import cache_root; print(cache_root())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(seen) == root
    if root != shared_folder(tmp_path_factory) / "cpp-cache":
        pytest.skip(f"{CACHE_VAR} names a cache of its own ({root}): the suite builds there")


def test_children_take_ctrl_c_however_the_suite_was_started() -> None:
    """A suite started in the background inherits SIGINT ignored; the tests that press Ctrl-C
    on a child need it to arrive (``conftest.ctrl_c_reaches_children``)."""
    seen = subprocess.run(
        [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert seen == "<built-in function default_int_handler>"
