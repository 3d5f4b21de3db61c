"""What a default compile warm-up costs, against one cold compile-and-serve process.

The case: a tiny compiled transformer (``tests/targets/warmup_models.py:tiny_gpt``, inductor)
over two sizes, on empty compile caches (the user's cache pointed at an empty folder, so no
second pass runs in it). First one ``warmscope run`` with the same inputs on a cold cache
(no explaining process: one compile-and-serve process), then ``warmscope warmup`` with its
defaults. Printed: each one's wall time, the ratio (goal: at most 8x), the estimate the warm-up
stated before its first process ended against what it took (goal: within 10%), its verdict and
processes.

    python benchmarks/compile_warmup_cost.py [--sizes 16,32] [--folder DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "targets" / "warmup_models.py"
GOAL_RATIO = 8.0
GOAL_ESTIMATE = 0.10


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    return time.monotonic() - t0, proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,32")
    parser.add_argument("--folder", type=Path)
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="compile-warmup-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    empty = folder / "user-cache"
    empty.mkdir(exist_ok=True)
    env = dict(
        os.environ,
        TORCHINDUCTOR_CACHE_DIR=str(empty / "inductor"),
        TRITON_CACHE_DIR=str(empty / "triton"),
    )
    target = [
        f"{MODELS}:tiny_gpt", "--mode", "compile", "--input", "int64[1,L]",
        "--dim", f"L={args.sizes}", "--iters", "40",
    ]  # fmt: skip
    cli = [sys.executable, "-m", "warmscope.cli"]
    one_s, one = timed(
        [*cli, "run", *target, "--compile-cache", "cold", "--no-explain", "--quiet",
         "--record", str(folder / "one.jsonl")],
        env,
    )  # fmt: skip
    if one.returncode != 0:
        sys.exit(f"the cold process failed (exit {one.returncode}): {one.stderr[-800:]}")
    print(f"one cold compile-and-serve process: {one_s:.1f} s")
    doc_path = folder / "warmup.json"
    warm_s, warm = timed(
        [*cli, "warmup", *target, "--record", str(folder / "warmup"), "--emit",
         str(folder / "recipe.py"), "--json", str(doc_path), "--quiet"],
        env,
    )  # fmt: skip
    if not doc_path.exists():
        sys.exit(f"warmup wrote no document (exit {warm.returncode}): {warm.stderr[-800:]}")
    doc = json.loads(doc_path.read_text())
    print(warm.stderr.rstrip())
    print(warm.stdout.splitlines()[0])
    ratio = warm_s / one_s
    print(
        f"default compile warm-up: {warm_s:.1f} s = {ratio:.1f}x one cold process "
        f"(goal <= {GOAL_RATIO:g}x: {'met' if ratio <= GOAL_RATIO else 'missed'}); "
        f"{sum(doc['planned_processes'][k] for k in ('observe', 'artifact', 'verify'))} "
        f"processes, {doc['repeat']} per cell; verdict {doc['verdict']} (exit {warm.returncode})"
    )
    estimate = doc.get("estimate_s")
    if estimate is None:
        print("no estimate was stated")
    else:
        off = (estimate - doc["wall_s"]) / doc["wall_s"]
        print(
            f"estimate stated during the first process: {estimate:.1f} s; took {doc['wall_s']:.1f} s "
            f"({off:+.0%}; goal within {GOAL_ESTIMATE:.0%}: "
            f"{'met' if abs(off) <= GOAL_ESTIMATE else 'missed'})"
        )
    print(f"records under {folder}")


if __name__ == "__main__":
    main()
