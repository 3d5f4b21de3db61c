"""What device time costs a CUDA run: the host time of a call with and without the agent's CUDA
events around it. Needs a GPU.

Two measures, both printed:

- in one process, blocks of calls alternating the agent's two loop bodies (host only: the
  call and a wait on the current stream; with device time: an event pair from the agent's own
  ``DeviceTimer``, the start recorded before the clock starts, the end the one waited on),
  paired block by block: the added host time per call, free of the spread between processes
  (a GPU's steady p50 moves by tens of percent from one process to the next). The two bodies
  take turns going first (ABBA), so whatever the block before leaves behind (a drained
  queue, a clock that moved) falls on each alike;
- fresh ``warmscope run`` processes alternating ``device_time=on`` and ``off``: the steady
  p50 each, for context.

The goal: at most 2 µs added per call, judged on the 95% interval of the median added time
(from the blocks' order statistics): met when the whole interval is within it, missed when
the whole interval is above it, and otherwise not resolved (exit 2): the blocks vary more
than the goal is wide; more blocks, or a quieter machine, narrow it.

    python benchmarks/device_time_cost.py [--blocks 40] [--calls 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_US = 2.0
ROOT = Path(__file__).resolve().parents[1]


def in_process(blocks: int, calls: int) -> dict[str, float]:
    """Blocks of calls alternating the agent's two CUDA loop bodies, host time each: without
    device time (the call, then a wait on an event recorded on the current stream: the agent's
    ``stream_sync``) and with it (the agent's ``DeviceTimer`` pair around the call, waited on
    by its end event); and, for reference, the call then ``torch.cuda.synchronize()``."""
    import torch

    from warmscope.core.child.cuda_timing import DeviceTimer, stream_sync
    from warmscope.core.child.timed_loop import FLUSH_MAX_ITERS
    from warmscope.sample_models.cnn import make_model

    model = make_model().cuda().eval()
    x = torch.randn(1, 3, 64, 64, device="cuda")
    clock = time.perf_counter_ns
    sync = stream_sync(torch)
    timer = DeviceTimer(torch, FLUSH_MAX_ITERS + 1)
    pairs, stream, record, wait = timer.pairs, timer.stream, timer.record, timer.wait
    added: list[float] = []
    device_sync: list[float] = []
    host_p50: list[float] = []
    read_us: list[float] = []
    with torch.no_grad():
        for _ in range(300):
            model(x)
        sync()
        for _ in range(blocks):
            plain: list[int] = []
            timed: list[int] = []
            whole: list[int] = []
            for body in (plain, timed) if len(added) % 2 == 0 else (timed, plain):
                if body is plain:
                    for _ in range(calls):  # the agent's body without device time
                        t0 = clock()
                        model(x)
                        sync()
                        plain.append(clock() - t0)
                    continue
                for k in range(calls):  # and with it
                    start, end = pairs[k]
                    record(start, stream)
                    t0 = clock()
                    model(x)
                    clock()  # the agent's "forward returned" reading
                    record(end, stream)
                    wait(end)
                    timed.append(clock() - t0)
            for _ in range(calls):  # a device-wide synchronize, for reference
                t0 = clock()
                model(x)
                torch.cuda.synchronize()
                whole.append(clock() - t0)
            r0 = clock()
            timer.read(list(range(calls)))  # the read-back, with each batch, outside any call
            read_us.append((clock() - r0) / 1e3 / calls)
            p50 = statistics.median(plain)
            added.append((statistics.median(timed) - p50) / 1e3)
            device_sync.append((statistics.median(whole) - p50) / 1e3)
            host_p50.append(p50 / 1e3)
    lo, hi = median_interval(added)
    return {
        "host_p50_us": statistics.median(host_p50),
        "added_us": statistics.median(added),
        "added_lo_us": lo,
        "added_hi_us": hi,
        "device_sync_us": statistics.median(device_sync),
        "read_us_per_call": statistics.median(read_us),
    }


MIN_BLOCKS = 6
"""Fewer blocks than this give no 95% interval of the median (all of them cover less)."""


def median_rank(n: int) -> int:
    """The 1-based rank ``k`` whose order statistics ``k`` and ``n + 1 - k`` bound the median
    of ``n`` values with at least 95% confidence: the largest ``k`` whose exact binomial
    coverage, P(k <= B <= n - k) for B ~ Binomial(n, 1/2), is at least 0.95."""
    best = 1
    for k in range(1, n // 2 + 1):
        if median_coverage(n, k) >= 0.95:
            best = k
    return best


def median_coverage(n: int, k: int) -> float:
    """How often the order statistics ``k`` and ``n + 1 - k`` (1-based) hold the median."""
    return sum(math.comb(n, b) for b in range(k, n - k + 1)) / 2**n


def median_interval(values: list[float]) -> tuple[float, float]:
    """A distribution-free 95% interval of the median of ``values`` (at least ``MIN_BLOCKS``
    of them): the order statistics ``median_rank`` in from each end."""
    ordered = sorted(values)
    n = len(ordered)
    if n < MIN_BLOCKS:
        return ordered[0], ordered[-1]  # below 95%: the verdict says not resolved
    k = median_rank(n)
    return ordered[k - 1], ordered[n - k]


def verdict(lo: float, hi: float, goal: float) -> tuple[str, int]:
    """``met`` (exit 0) when the interval lies within the goal, ``missed`` (1) when it lies
    above it, else ``not resolved`` (2): the measurement cannot tell."""
    if hi <= goal:
        return "met", 0
    if lo > goal:
        return "missed", 1
    return "not resolved (the interval spans the goal: more --blocks, or a quieter machine)", 2


def processes(rounds: int, iters: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for mode in ("off", "on") if r % 2 else ("on", "off"):
                path = Path(tmp) / f"{mode}{r}.json"
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "warmscope.cli",
                        "run",
                        "sample:cnn",
                        "--mode",
                        "eager",
                        "--device",
                        "cuda",
                        "--iters",
                        str(iters),
                        "--no-explain",
                        "--set",
                        f"device_time={mode}",
                        "--json",
                        str(path),
                    ],
                    check=True,
                    capture_output=True,
                    cwd=tmp,
                )
                out[mode].append(json.loads(path.read_text())["summary"]["p50_ms"] * 1000)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=3000)
    args = parser.parse_args()
    one = in_process(args.blocks, args.calls)
    print(
        f"in one process ({args.blocks} pairs of {args.calls}-call blocks): host p50 "
        f"{one['host_p50_us']:.1f} µs; device time adds {one['added_us']:.2f} µs a call "
        f"(95% interval {one['added_lo_us']:.2f} to {one['added_hi_us']:.2f}); reading the events "
        f"back {one['read_us_per_call']:.2f} µs a call, outside the calls; a device-wide "
        f"torch.cuda.synchronize() instead of the stream's wait: {one['device_sync_us']:+.2f} µs"
    )
    many = processes(args.rounds, args.iters) if args.rounds else {"on": [], "off": []}
    if many["on"]:
        print(
            "fresh processes, steady p50 (µs): device_time=on "
            + ", ".join(f"{v:.1f}" for v in many["on"])
            + " · off "
            + ", ".join(f"{v:.1f}" for v in many["off"])
        )
    said, code = verdict(one["added_lo_us"], one["added_hi_us"], GOAL_US)
    if args.blocks < MIN_BLOCKS:
        said, code = f"not resolved (at least {MIN_BLOCKS} --blocks give a 95% interval)", 2
    print(f"goal: at most {GOAL_US} µs added a call: {said}")
    return code


if __name__ == "__main__":
    sys.exit(main())
