"""How long warmscope takes to end a run after its agent exits, when the model left a helper
holding the stderr pipe (tests/faults/hostile.py:spawns_inheriting_stderr), and the parent's
peak memory while a model prints a line on every pass.

    python benchmarks/hostile_exit.py [--rounds 5] [--print-iters 1000000]

Prints each figure with its spread over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "faults" / "hostile.py"


def agent_exit_to_warmscope_exit(folder: Path) -> float:
    record = folder / f"r{time.time_ns()}.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "warmscope.cli",
            "run",
            f"{HOSTILE}:spawns_inheriting_stderr",
            "--input",
            "4",
            "--iters",
            "200",
            "--record",
            str(record),
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    agent = None
    while agent is None and proc.poll() is None:
        if record.exists():
            for line in record.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("type") == "spawned":
                    agent = psutil.Process(entry["pid"])
        time.sleep(0.01)
    assert agent is not None, "the run never spawned"
    while agent.is_running() and agent.status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.001)
    exited = time.monotonic()
    proc.wait()
    return time.monotonic() - exited


def peak_rss_printing(folder: Path, iters: int) -> tuple[float, float, int]:
    """(parent peak RSS in MB, wall seconds, stderr events kept) for a model printing every pass."""
    record = folder / f"p{time.time_ns()}.jsonl"
    doc = folder / f"p{time.time_ns()}.json"
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "warmscope.cli",
            "run",
            f"{HOSTILE}:prints_every_pass",
            "--input",
            "4",
            "--iters",
            str(iters),
            "--record",
            str(record),
            "--json",
            str(doc),
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    parent = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:  # the parent alone: the agent's torch is not warmscope's cost
        try:
            peak = max(peak, parent.memory_info().rss)
        except psutil.Error:
            break
        time.sleep(0.1)
    wall = time.monotonic() - started
    events = [e for e in json.loads(doc.read_text())["events"] if e["kind"] == "stderr"]
    return peak / 2**20, wall, len(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--print-iters", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ.setdefault("WARMSCOPE_RECORD_DIR", tmp)
        gaps = [agent_exit_to_warmscope_exit(folder) for _ in range(args.rounds)]
        print(f"cpu: {os.cpu_count()} logical cores, load {os.getloadavg()[0]:.2f}")
        print(
            "agent exit -> warmscope exit, a helper holding stderr: "
            f"median {statistics.median(gaps):.3f} s (min {min(gaps):.3f}, max {max(gaps):.3f}, "
            f"{args.rounds} rounds)"
        )
        mb, wall, kept = peak_rss_printing(folder, args.print_iters)
        print(
            f"headless, a model printing every pass, {args.print_iters:,} iterations: parent "
            f"peak RSS {mb:.0f} MB, {wall:.1f} s, {kept} stderr event(s) kept"
        )


if __name__ == "__main__":
    main()
