"""What watching costs: warmscope's loop against a bare perf_counter_ns loop, same model.

Runs, in alternation, a bare loop (a fresh Python that scripts the model and times each call
with perf_counter_ns, nothing else) and `warmscope run` on the same scripted model, both on one
thread, and prints the steady p50 and the iteration rate of each, with the ratios. warmscope is
measured twice: with its defaults (the profiling executor's log captured, so a marker is written
to stderr every iteration) and with log capture off.

    python benchmarks/observer_overhead.py [--iters N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = HERE / "overhead_model.py"

BARE = r"""
import importlib.util, json, sys, time, torch
torch.set_num_threads(1)
spec = importlib.util.spec_from_file_location("m", sys.argv[1]); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
model = torch.jit.script(m.make_model()); x = m.example_inputs()
n = int(sys.argv[2]); clock = time.perf_counter_ns; ns = []
with torch.no_grad():
    loop_start = clock()
    for _ in range(n):
        t0 = clock(); model(*x); t1 = clock(); ns.append(t1 - t0)
    loop_end = clock()
print(json.dumps({"ms": [v / 1e6 for v in ns], "loop_ms": (loop_end - loop_start) / 1e6}))
"""


def steady(ms: list[float], skip: int) -> list[float]:
    return ms[skip:]


def bare(iters: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", BARE, str(MODEL), str(iters)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    ms = doc["ms"]
    skip = len(ms) // 10
    # The rate over the same window as warmscope's: from the first steady start to the end.
    window = sum(ms[skip:])
    return {
        "p50_us": statistics.median(steady(ms, skip)) * 1000,
        "rate": len(ms) / (doc["loop_ms"] / 1000),
        "busy": window,
    }


def watched(iters: int, jit_log: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            sys.executable,
            "-m",
            "warmscope.core.cli",
            "run",
            f"{MODEL}:make_model",
            "--mode",
            "script",
            "--iters",
            str(iters),
            "--set",
            "intra_op_threads=1",
            "--set",
            "inter_op_threads=1",
            "--quiet",
            "--record",
            f"{tmp}/r.jsonl",
            "--json",
            f"{tmp}/r.json",
        ]
        if jit_log is not None:
            args += ["--jit-log", jit_log]
        subprocess.run(args, capture_output=True, text=True, check=True)
        doc = json.loads(Path(f"{tmp}/r.json").read_text())
    rows = doc["iterations"]
    ms = [r["ms"] for r in rows]
    skip = len(ms) // 10
    last = rows[-1]
    loop_ms = last["start_ms"] + last["ms"] - rows[0]["start_ms"]
    return {
        "p50_us": statistics.median(steady(ms, skip)) * 1000,
        "rate": len(ms) / (loop_ms / 1000),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iters", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {
        "bare": [],
        "warmscope": [],
        "warmscope, no log": [],
    }
    for r in range(args.rounds):
        results["bare"].append(bare(args.iters))
        results["warmscope"].append(watched(args.iters, None))
        results["warmscope, no log"].append(watched(args.iters, ""))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    med = {
        k: {m: statistics.median(x[m] for x in v) for m in ("p50_us", "rate")}
        for k, v in results.items()
    }
    base = med["bare"]
    print(
        f"model: {MODEL.name} (scripted, 1 thread), {args.iters} iterations, median of {args.rounds} rounds"
    )
    print(f"cpu: {os.cpu_count()} logical cores")
    print(f"{'loop':<20} {'steady p50':>12} {'rate':>14} {'p50 vs bare':>12} {'rate vs bare':>13}")
    for name, m in med.items():
        print(
            f"{name:<20} {m['p50_us']:>9.2f} µs {m['rate']:>10,.0f} it/s "
            f"{m['p50_us'] / base['p50_us'] * 100:>10.1f}% {m['rate'] / base['rate'] * 100:>12.1f}%"
        )
    added = 1e6 / med["warmscope"]["rate"] - 1e6 / base["rate"]
    print(f"added per iteration (defaults): {added:.2f} µs")


if __name__ == "__main__":
    main()
