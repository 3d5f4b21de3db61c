"""What the live view costs over the wire: bytes a second the TUI writes to its terminal, and
its CPU, while a model runs; and what an idle screen writes. Each figure against its goal.

    python benchmarks/tui_wire.py [--seconds 10] [--target sample:speech] [--rounds 2]

The TUI runs in a real pseudo-terminal of each size (no tmux needed); the first seconds (start,
first frame, the model's setup) are not counted.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time

import psutil

GOALS = {(120, 40): 10.0, (80, 24): 5.0}  # KiB/s, from the issue "Light on the wire"
UI_CPU_GOAL = 5.0  # % of a core at ~300 it/s
SETTLE_S = 8.0


def measure(target: str, size: tuple[int, int], seconds: float, folder: str) -> tuple[float, float]:
    """(KiB/s written, UI CPU % of a core) over ``seconds`` once the run is going."""
    cols, rows = size
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    record = os.path.join(folder, f"wire-{cols}x{rows}-{time.time_ns()}.jsonl")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "warmscope.core.cli",
            target,
            "--duration",
            str(SETTLE_S + seconds + 30),
            "--record",
            record,
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        env=dict(os.environ, TERM="xterm-256color"),
    )
    os.close(slave)
    ui = psutil.Process(proc.pid)
    counted = 0
    started = time.monotonic()
    cpu0 = None
    try:
        while (now := time.monotonic()) - started < SETTLE_S + seconds:
            if cpu0 is None and now - started >= SETTLE_S:
                t = ui.cpu_times()
                cpu0 = (now, t.user + t.system)
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                chunk = os.read(master, 1 << 16)
                if now - started >= SETTLE_S:
                    counted += len(chunk)
        t = ui.cpu_times()
        assert cpu0 is not None
        cpu = 100 * (t.user + t.system - cpu0[1]) / (time.monotonic() - cpu0[0])
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    return counted / 1024 / seconds, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--target", default="sample:speech")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"cpu: {os.cpu_count()} logical cores, load {os.getloadavg()[0]:.2f}; {args.target}")
    with tempfile.TemporaryDirectory() as folder:
        for size, goal in GOALS.items():
            runs = [measure(args.target, size, args.seconds, folder) for _ in range(args.rounds)]
            kib = [k for k, _ in runs]
            cpu = [c for _, c in runs]
            verdict = "met" if statistics.median(kib) <= goal else "missed"
            print(
                f"{size[0]}x{size[1]}: {statistics.median(kib):.1f} KiB/s "
                f"({min(kib):.1f}-{max(kib):.1f}, {args.rounds} rounds), goal <= {goal:g}: {verdict}; "
                f"UI CPU {statistics.median(cpu):.1f}% of a core (goal <= {UI_CPU_GOAL:g} at ~300 it/s)"
            )


if __name__ == "__main__":
    main()
