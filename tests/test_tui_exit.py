"""The TUI's exit code, in a real terminal: as ``warmscope run`` would give for its last run."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest


def _tui_until_quit(*args: str, wait_for: bytes, record_dir: Path) -> tuple[int, bytes]:
    """Start ``warmscope ARGS`` in a 100x30 terminal, press ``q`` once ``wait_for`` is on the
    screen, and return its exit code and everything it wrote."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", WARMSCOPE_RECORD_DIR=str(record_dir))
    proc = subprocess.Popen(
        [sys.executable, "-m", "warmscope.cli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    out = b""
    quit_sent = False
    deadline = time.monotonic() + 90
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    out += os.read(master, 65536)
                except OSError:
                    break
            if not quit_sent and wait_for in out:
                time.sleep(0.5)
                os.write(master, b"q")
                quit_sent = True
        assert quit_sent, f"never saw {wait_for!r}: {out[-2000:]!r}"
        return proc.wait(timeout=30), out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


@pytest.mark.parametrize(
    ("args", "code", "status"),
    [
        pytest.param(["--input", "1x300x41"], 1, "failed", id="its only run failed"),
        pytest.param(["--input", "1x300x40"], 0, "ok", id="its run completed"),
    ],
)
def test_the_tui_exits_as_its_last_run_ended(
    args: list[str], code: int, status: str, tmp_path: Path
) -> None:
    mark = "✓" if status == "ok" else "✗"
    returncode, out = _tui_until_quit(
        "sample:speech",
        *args,
        "--iters",
        "5",
        wait_for=f"{mark} {status}".encode(),
        record_dir=tmp_path,
    )
    assert returncode == code, out[-2000:]
    assert f"run #1 {status}: ".encode() in out, "the record's place is said on the way out"
