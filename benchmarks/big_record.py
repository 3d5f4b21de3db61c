"""A long run's record at scale: its size, and what ``report``, ``compare`` and ``open`` cost.

    python benchmarks/big_record.py [--iters 10600000] [--keep DIR] [--skip-open]

Writes a synthetic but realistic record of ``--iters`` iterations (about 25 µs each with
noise and rare spikes, a warm-up of slow first iterations with their JIT events, samples at
10 Hz, batches every 50 ms as the agent sends them) through the session's own path
(``record_line`` then ``RecordWriter``), then measures, each against its goal:

- the record's size;
- ``warmscope report`` and ``warmscope compare A B``: wall and CPU time (user + system) and
  peak RSS of the process;
- ``warmscope open`` in a real pseudo-terminal: the time to its first frame, the time until
  the run's summary is drawn (``p50`` and the iteration count on screen), and its peak RSS.

The goals come from the issue "Light on the wire" (a 10.6M-iteration, 10-minute run).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tui_startup import Terminal  # the same pty harness as the first-frame benchmark

from warmscope.core.data.fold import record_line
from warmscope.core.data.record import VERSION, RecordWriter

ROOT = Path(__file__).resolve().parent.parent
WARMSCOPE = str(Path(sys.executable).parent / "warmscope")
FIXTURE = ROOT / "tests" / "data" / "speech-script.jsonl"

SIZE_GOAL_MB = 80.0
TIME_GOAL_S = 3.0
RSS_GOAL_MB = 300.0
FIRST_FRAME_GOAL_S = 1.0  # "a frame at once"

BATCH_S = 0.05  # the agent's flush period
SAMPLE_S = 0.1
POOL = 1 << 20


def _pools(seed: int) -> tuple[list[int], list[int]]:
    """Noise to slice batches from: durations ~25 µs (σ 0.8 µs, 1% spikes) and the gaps
    between one iteration's end and the next start (~0.4 µs)."""
    rng = random.Random(seed)
    durations = [
        25_000
        + int(rng.gauss(0, 800))
        + (int(rng.expovariate(1 / 20_000)) if rng.random() < 0.01 else 0)
        for _ in range(POOL)
    ]
    gaps = [300 + int(rng.expovariate(1 / 150)) for _ in range(POOL)]
    return durations, gaps


def write_record(path: Path, iters: int, seed: int = 1) -> None:
    """A record of ``iters`` iterations, written line by line as a session writes it."""
    rng = random.Random(seed)
    durations, gaps = _pools(seed)
    prelude, warm_events = [], []
    with FIXTURE.open(encoding="utf-8") as f:
        for raw in f:
            line = json.loads(raw)
            if line["type"] == "header":
                line["version"] = VERSION
                line["stderr_file"] = None
            if line["type"] in ("iters", "end", "graphs", "memory"):
                continue
            if line["type"] == "event" and line.get("iteration") is not None:
                warm_events.append(line)
            elif line["type"] != "sample":
                prelude.append(line)
    writer = RecordWriter.create(path, overwrite=True)
    for line in prelude:
        writer.write(line)
    warmup = [50_000_000, 20_000_000, 8_000_000, 2_000_000, 400_000, 90_000, 40_000, 30_000]
    i = 0
    clock = 0  # ns since the loop's start
    next_sample = 0.0
    per_batch = max(1, int(BATCH_S * 1e9 / 25_500))
    while i < iters:
        n = min(per_batch, iters - i)
        at = rng.randrange(POOL - n)
        ns = durations[at : at + n]
        gap = gaps[at : at + n]
        if i == 0:
            ns[: len(warmup)] = warmup[:n]
        st = []
        for d, g in zip(ns, gap, strict=True):
            clock += g
            st.append(clock)
            clock += d
        line = record_line({"t": "iters", "i0": i, "ns": ns, "st": st}, clock / 1e9)
        assert line is not None
        writer.write(line)
        if i == 0:
            for event in warm_events:
                writer.write({**event, "iteration": min(event["iteration"], 3)})
        i += n
        if clock / 1e9 >= next_sample:
            next_sample += SAMPLE_S
            writer.write(
                {
                    "type": "sample",
                    "cpu": round(rng.uniform(95, 100), 1),
                    "rss_mb": 230.0,
                    "threads": 3,
                    "procs": 1,
                    "sys_cpu": 100.0,
                    "t": round(clock / 1e9, 3),
                    "iteration": i,
                }
            )
        writer.flush()
    writer.write({"type": "end", "status": "completed", "detail": "", "exit_code": 0})
    writer.close()


def measure(argv: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MB, exit code) of one command, its output
    discarded. CPU: user + system of the command and the processes it waited for; on a
    machine others share, the wall time says as much about them as about the command."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.stderr.write(proc.stderr.read().decode(errors="replace") if proc.stderr else "")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def measure_open(record: Path, count: int) -> tuple[float, float, float, float]:
    """(seconds to the first frame, seconds until the run's summary is drawn, CPU seconds
    until it quit, peak RSS MB)."""
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="100", LINES="30")
    shown = f"{count:,}".encode()  # the run header's iteration count: the run is on screen
    term = Terminal(
        [WARMSCOPE, "open", str(record)], env, first=b"Quit"
    )  # the footer: the first frame is drawn
    term.markers[shown] = 0.0
    deadline = time.perf_counter() + 180
    while not all(term.markers.values()):
        if time.perf_counter() > deadline or term.proc.poll() is not None:
            break
        time.sleep(0.01)
    os.write(term.master, b"q")
    _, _, usage = os.wait4(term.proc.pid, 0)
    first = term.markers[b"Quit"] - term.t0 if term.markers[b"Quit"] else float("nan")
    loaded = term.markers[shown] - term.t0 if term.markers[shown] else float("nan")
    return first, loaded, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def verdict(value: float, goal: float) -> str:
    return "ok" if value <= goal else "OVER"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=10_600_000)
    parser.add_argument("--keep", type=Path, help="write the records here and keep them")
    parser.add_argument("--skip-open", action="store_true", help="do not time the TUI")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="warmscope-big-"))
    folder.mkdir(parents=True, exist_ok=True)
    a, b = folder / "big-a.jsonl", folder / "big-b.jsonl"
    t0 = time.perf_counter()
    write_record(a, args.iters, seed=1)
    write_record(b, args.iters, seed=2)
    print(f"wrote two records of {args.iters:,} iterations in {time.perf_counter() - t0:.1f} s")
    size = a.stat().st_size / 1e6
    per = a.stat().st_size / args.iters
    print(
        f"record size        {size:8.1f} MB ({per:.1f} B/iteration)"
        f"   goal <= {SIZE_GOAL_MB:.0f} MB  {verdict(size, SIZE_GOAL_MB)}"
    )
    for name, argv in (
        ("report", [WARMSCOPE, "report", str(a)]),
        ("compare A B", [WARMSCOPE, "compare", str(a), str(b)]),
    ):
        wall, cpu, rss, code = measure(argv)
        print(
            f"{name:<18} {wall:8.2f} s ({cpu:.2f} s CPU)  {rss:6.0f} MB RSS   "
            f"goal <= {TIME_GOAL_S:.0f} s, "
            f"<= {RSS_GOAL_MB:.0f} MB  {verdict(wall, TIME_GOAL_S)}/{verdict(rss, RSS_GOAL_MB)}"
            + (f"  (exit {code})" if code else "")
        )
    if not args.skip_open:
        first, loaded, cpu, rss = measure_open(a, args.iters)
        print(
            f"open: first frame {first:8.2f} s   goal <= {FIRST_FRAME_GOAL_S:.0f} s  "
            f"{verdict(first, FIRST_FRAME_GOAL_S)}"
        )
        print(
            f"open: run shown   {loaded:8.2f} s ({cpu:.2f} s CPU to quit)  {rss:6.0f} MB RSS   "
            f"goal <= {TIME_GOAL_S:.0f} s, "
            f"<= {RSS_GOAL_MB:.0f} MB  {verdict(loaded, TIME_GOAL_S)}/{verdict(rss, RSS_GOAL_MB)}"
        )
    if args.keep is None:
        for path in (a, b):
            path.unlink()
        folder.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
