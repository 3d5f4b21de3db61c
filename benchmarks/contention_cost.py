"""What measuring contention costs a call: the agent's run-queue readings, timed.

The agent reads its threads' run-queue delay (``core/child/cpu_waits.py``) after a call that
ends at least ``every_ns`` after its last reading; every other call pays one comparison. This
times, in one process with torch's intra-op pool started:

- one reading (``take``): its cost, per thread and in all, and the pace it sets;
- a loop of tiny calls (``x + 1`` on a one-element tensor, as the agent's loop times them)
  with the check and readings, against the same loop without, alternating rounds: the added
  cost per call. The goal: at most 2 µs a call.

    python benchmarks/contention_cost.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

GOAL_US = 2.0
HERE = Path(__file__).resolve().parent


def load_cpu_waits():  # the child's module, loaded by path as the agent loads it
    path = HERE.parent / "core" / "child" / "cpu_waits.py"
    spec = importlib.util.spec_from_file_location("cpu_waits", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bare(model, x, n: int) -> float:
    clock = time.perf_counter_ns
    durations = []
    start = clock()
    for _ in range(n):
        t0 = clock()
        model(x)
        t1 = clock()
        durations.append(t1 - t0)
    return (clock() - start) / n


def with_waits(model, x, n: int, cpu_waits) -> tuple[float, int]:
    clock = time.perf_counter_ns
    durations = []
    waits = cpu_waits.start()
    next_wait = clock() + waits.every_ns
    readings = 0
    start = clock()
    for i in range(n):
        t0 = clock()
        model(x)
        t1 = clock()
        durations.append(t1 - t0)
        if t1 >= next_wait:
            next_wait = waits.take(i, t1)
            readings += 1
    per_call = (clock() - start) / n
    waits.close()
    return per_call, readings


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    cpu_waits = load_cpu_waits()
    if not cpu_waits.KNOWN:
        sys.exit("this kernel keeps no run-queue delay (/proc/self/schedstat): nothing to time")
    x = torch.ones(1)
    big = torch.rand(512, 512)
    big @ big  # starts torch's intra-op pool: its threads are read too

    def model(t):
        return t + 1

    waits = cpu_waits.start()
    t0 = time.perf_counter_ns()
    for i in range(1000):
        waits.take(i, 0)
    take_ns = (time.perf_counter_ns() - t0) / 1000
    threads = len(waits._fds)
    waits.close()
    print(
        f"threads {threads} (intra-op {torch.get_num_threads()}); one reading {take_ns / 1000:.2f} µs "
        f"({take_ns / max(1, threads) / 1000:.2f} µs a thread); pace: a reading at most every "
        f"{waits.every_ns / 1e6:.2f} ms"
    )

    plain, watched, taken = [], [], []
    bare(model, x, 10_000)
    for _ in range(args.rounds):
        plain.append(bare(model, x, args.calls))
        per_call, readings = with_waits(model, x, args.calls, cpu_waits)
        watched.append(per_call)
        taken.append(readings)
    added = statistics.median(w - b for w, b in zip(watched, plain, strict=True))
    print(f"calls {args.calls:,} × {args.rounds} rounds, alternating")
    print(f"  without readings  {statistics.median(plain):8.0f} ns a call (median)")
    print(
        f"  with readings     {statistics.median(watched):8.0f} ns a call (median), "
        f"{statistics.median(taken):,.0f} readings a round"
    )
    print(
        f"  added             {added:8.0f} ns a call (goal ≤ {GOAL_US:.0f} µs): "
        f"{'met' if added <= GOAL_US * 1000 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
