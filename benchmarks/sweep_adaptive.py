"""Adaptive sweeps against fixed ones: processes used, wall time, and whether each decided.

1. The simulation first (no child process): the A/A false-difference rate of adaptive sweeps
   (2 and 4 identical cells, cap 10, heavy-tailed noise) and the share of processes a clear 2×
   difference needs; the same code the tests run.
2. ``sample:speech --preset torchscript,no-profiling --iters 50 --set intra_op_threads=1``,
   fixed ``--repeat 10`` then ``--adaptive --repeat 10``. Goal: the adaptive sweep decides
   (no-profiling best, beyond noise) with at most 50% of the fixed design's processes.
3. The README's 4-preset sweep (``--preset torchscript,no-profiling,no-optimizer,frozen
   --repeat 5 --iters 50 --set intra_op_threads=1``), fixed then ``--adaptive`` with the same
   cap: processes and wall time saved.

Each sweep runs once (they take minutes on a busy machine); ``--only sim`` skips the sweeps.

    python benchmarks/sweep_adaptive.py [--only sim|speech|four] [--cap 10]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests' simulation helpers

GOAL_SHARE = 0.50
THREADS = ["--set", "intra_op_threads=1"]


def simulation() -> None:
    from tests.test_racing import NOISES, measured_spread, race

    rng = random.Random(2026)
    for cells in (2, 4):
        sweeps = 2000
        false = sum(bool(race(rng, [NOISES[s % 3]] * cells, 10)[0].drops) for s in range(sweeps))
        print(
            f"simulation  A/A, {cells} identical cells × cap 10, {sweeps} adaptive sweeps "
            f"(lognormal+outliers, Pareto, Student-t): false differences {false / sweeps:.2%} "
            "(goal ≤ 5%)"
        )
    used = decided = 0
    sweeps = 1000
    for _ in range(sweeps):
        r, n, _ = race(rng, [lambda g: 2 * measured_spread(g), measured_spread], 10)
        used += n
        decided += r.decided
    print(
        f"simulation  2× first call, cap 10: decided {decided / sweeps:.1%}, processes "
        f"{used / (sweeps * 20):.0%} of the fixed design's"
    )


def sweep(args: list[str], folder: Path, name: str) -> dict[str, Any]:
    """One ``warmscope sweep``; its document, with the wall time seen from outside."""
    out = folder / f"{name}.json"
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "warmscope.cli", "sweep", *args, "--quiet"),
            *("--record", str(folder / name), "--json", str(out)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"{name}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}")
    doc: dict[str, Any] = json.loads(out.read_text())
    doc["outside_s"] = wall
    print(f"$ warmscope sweep {' '.join(args)}")
    print(proc.stdout.rstrip("\n"))
    print()
    return doc


def line(name: str, doc: dict[str, Any]) -> str:
    decided = f"decided after round {doc['decided_round']}" if doc.get("decided") else "not decided"
    best = doc["ranking"][0]["label"] if doc.get("ranking") else "-"
    return (
        f"{name:<16} processes {doc['finished']:>3} · wall {doc['outside_s']:6.1f} s · "
        f"{decided} · lowest {best}"
    )


def compare(label: str, args: list[str], cap: int, folder: Path) -> None:
    fixed = sweep([*args, "--repeat", str(cap)], folder, f"{label}-fixed")
    adaptive = sweep([*args, "--repeat", str(cap), "--adaptive"], folder, f"{label}-adaptive")
    print(line(f"{label} fixed", fixed))
    print(line(f"{label} adaptive", adaptive))
    share = adaptive["finished"] / fixed["finished"]
    saved_s = fixed["outside_s"] - adaptive["outside_s"]
    print(
        f"{label:<16} adaptive used {share:.0%} of the fixed processes "
        f"({fixed['finished'] - adaptive['finished']} saved), {saved_s:.1f} s of wall time saved"
    )
    for d in adaptive.get("dropped", []):
        print(f"{label:<16} dropped {d['label']} after round {d['round']}: {d['why']}")
    if label == "speech":
        best = adaptive["ranking"][0]["label"] if adaptive.get("ranking") else None
        met = adaptive.get("decided") and best == "no-profiling" and share <= GOAL_SHARE
        print(
            f"goal        adaptive decides no-profiling best with ≤ {GOAL_SHARE:.0%} of the "
            f"processes: {'met' if met else 'not met'}"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=["sim", "speech", "four"])
    p.add_argument("--cap", type=int, default=10, help="the speech pair's --repeat (default 10)")
    a = p.parse_args()
    if a.only in (None, "sim"):
        simulation()
    if a.only == "sim":
        return
    with tempfile.TemporaryDirectory(prefix="sweep-adaptive-") as tmp:
        folder = Path(tmp)
        common = ["sample:speech", "--iters", "50", *THREADS]
        if a.only in (None, "speech"):
            compare("speech", [*common, "--preset", "torchscript,no-profiling"], a.cap, folder)
        if a.only in (None, "four"):
            four = [*common, "--preset", "torchscript,no-profiling,no-optimizer,frozen"]
            compare("four presets", four, 5, folder)


if __name__ == "__main__":
    main()
