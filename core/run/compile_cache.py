"""torch.compile's on-disk caches made explicit: ``--compile-cache cold|warm|user``.

inductor (``TORCHINDUCTOR_CACHE_DIR``) and triton (``TRITON_CACHE_DIR``) keep compiled code on
disk across processes, so a compile run's cold start depends on what ran before it: one run
measured 12.3 s with an empty cache, then 1.7 s. Each compile run says which cache it had:

- ``cold``: a fresh, empty folder for each process, removed when the run ends;
- ``warm``: a folder filled by an unrecorded first process (the caller runs it and passes the
  folder to every measured process);
- ``user``: the user's own cache, as torch finds it; the record says whether it had entries.

Standard library only; torch's default folders are worked out without importing torch.
"""

from __future__ import annotations

import getpass
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warmscope.core.data.settings.setting import COMPILE_CACHE_MODES as MODES

INDUCTOR_VAR = "TORCHINDUCTOR_CACHE_DIR"
TRITON_VAR = "TRITON_CACHE_DIR"
COUNT_LIMIT = 100_000
"""Stop counting a cache's files here: a user's cache may be huge, and "has entries" is the fact."""


def count_files(folder: Path, limit: int = COUNT_LIMIT) -> int:
    """Files under ``folder`` (0 if it does not exist), counted up to ``limit``."""
    n = 0
    for _root, _dirs, files in os.walk(folder):
        n += len(files)
        if n >= limit:
            return limit
    return n


def user_folders(env: dict[str, str]) -> dict[str, Path]:
    """Where torch would put its caches for a child with ``env`` (torch's own defaults)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        user = str(os.getuid())
    safe_user = "".join(c if c.isalnum() or c in "-_." else "_" for c in user)
    inductor = Path(
        env.get(INDUCTOR_VAR) or Path(tempfile.gettempdir()) / f"torchinductor_{safe_user}"
    )
    triton = Path(env.get(TRITON_VAR) or Path.home() / ".triton" / "cache")
    return {"inductor": inductor, "triton": triton}


def user_has_entries(env: dict[str, str]) -> bool:
    """Whether the user's own caches, as torch would find them for a child with ``env``, hold
    anything (the first file found answers)."""
    return any(count_files(path, limit=1) for path in user_folders(env).values())


@dataclass
class CacheSetup:
    """The environment one compile process gets, and what the record says about it."""

    mode: str
    env: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    remove: Path | None = None
    """A cold folder, removed when the run ends."""

    def cleanup(self) -> None:
        if self.remove is not None:
            shutil.rmtree(self.remove, ignore_errors=True)
            self.remove = None


def folders_env(folder: Path) -> dict[str, str]:
    return {INDUCTOR_VAR: str(folder / "inductor"), TRITON_VAR: str(folder / "triton")}


def prepare(mode: str, child_env: dict[str, str], warm_folder: Path | None = None) -> CacheSetup:
    """The cache one compile process gets. ``warm`` needs ``warm_folder`` (filled by an
    unrecorded process); without one it starts empty, and the record says so."""
    if mode not in MODES:
        raise ValueError(f"--compile-cache {mode!r}: one of {', '.join(MODES)}")
    if mode == "user":
        found = user_folders(child_env)
        entries = {name: count_files(path) for name, path in found.items()}
        return CacheSetup(
            mode,
            info={
                "mode": mode,
                "folders": {k: str(v) for k, v in found.items()},
                "entries_before": sum(entries.values()),
                "had_entries": any(entries.values()),
            },
        )
    setup = CacheSetup(mode)
    if mode == "cold" or warm_folder is None:
        folder = Path(tempfile.mkdtemp(prefix="warmscope-compile-cache-"))
        setup.remove = folder
    else:
        folder = warm_folder
    setup.env = folders_env(folder)
    total = sum(count_files(Path(p)) for p in setup.env.values())
    setup.info = {
        "mode": mode,
        "folders": {"inductor": setup.env[INDUCTOR_VAR], "triton": setup.env[TRITON_VAR]},
        "entries_before": total,
        "had_entries": total > 0,
    }
    if mode == "warm" and warm_folder is None:
        setup.info["note"] = "no warming process ran: the cache started empty"
    return setup
