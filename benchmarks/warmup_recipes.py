"""Verified warm-up recipes: ``warmscope warmup`` on a scripted speech model and a compiled
GPT-like model, then each emitted file in plain fresh processes outside warmscope.

For each case: per candidate and the no-recipe baseline, the worst first-call / steady-p50
ratio over the shapes (median and 95% interval across processes) and the start-up cost; the
wall time of the whole derivation; then the emitted recipe run by a bare ``python`` that
serves the shapes in reverse order (first call of each against that shape's median of later
calls). Goals: a verified recipe at most 1.2x on every shape; the speech case verified in at
most 60 s; the cache-artifact recipe starting in at most 40% of the cold compile recipe's
start-up.

    python benchmarks/warmup_recipes.py [--repeat 6] [--case speech|compile|both] [--plain 6]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPEECH = ROOT / "sample_models" / "speech.py"
MODELS = ROOT / "tests" / "targets" / "warmup_models.py"
GOAL_RATIO = 1.2
GOAL_SPEECH_S = 60.0
GOAL_ARTIFACT = 0.40

CASES = {
    "speech": (
        SPEECH,
        "make_model",
        ["sample:speech", "--input", "1xTx40", "--dim", "T=200,300,400", "--iters", "60"],
    ),
    "compile": (
        MODELS,
        "tiny_gpt",
        [
            f"{MODELS}:tiny_gpt",
            "--mode",
            "compile",
            "--input",
            "int64[1,L]",
            "--dim",
            "L=16,32,48,64",
            "--iters",
            "40",
            "--cache-artifact",
        ],
    ),
}

PLAIN = r"""
import importlib.util, json, statistics, sys, time
import torch
torch.set_num_threads(1)

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

recipe = load(sys.argv[1], "recipe")
model = getattr(load(sys.argv[2], "m"), sys.argv[3])()
t0 = time.perf_counter()
model = recipe.prepare(model)
startup = (time.perf_counter() - t0) * 1e3
ratios = {}
with torch.no_grad():
    shapes = list(reversed(recipe.SHAPES))
    feeds = {i: recipe.make_inputs(d) for i, d in enumerate(shapes)}
    times = {i: [] for i in feeds}
    for _ in range(12):
        for i, (args, kwargs) in feeds.items():
            t = time.perf_counter(); model(*args, **kwargs); times[i].append((time.perf_counter() - t) * 1e3)
for i, d in enumerate(shapes):
    ratios[",".join(f"{k}={v}" for k, v in d.items())] = times[i][0] / statistics.median(times[i][1:])
print(json.dumps({"startup_ms": startup, "ratios": ratios}))
"""


def warmup(case: str, repeat: int, folder: Path) -> tuple[dict[str, Any], float]:
    args = CASES[case][2]
    doc_path = folder / f"{case}.json"
    argv = [
        sys.executable,
        "-m",
        "warmscope.cli",
        "warmup",
        *args,
        "--set",
        "intra_op_threads=1",
        "--repeat",
        str(repeat),
        "--record",
        str(folder / case),
        "--emit",
        str(folder / f"{case}_recipe.py"),
        "--json",
        str(doc_path),
        "--quiet",
    ]
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if not doc_path.exists():
        sys.exit(f"{case}: warmup wrote no document (exit {proc.returncode}): {proc.stderr[-800:]}")
    print(proc.stdout)
    return json.loads(doc_path.read_text()), wall


def worst(cell: dict[str, Any]) -> str:
    shapes = [s for s in cell.get("shapes", []) if s["ratio"]["median"] is not None]
    if not shapes:
        return "-"
    s = max(shapes, key=lambda s: s["ratio"]["median"])
    r = s["ratio"]
    return f"{r['median']:.2f}x ({r['lo']:.2f}-{r['hi']:.2f}) at {s['key']}"


def plain(recipe: Path, case: str, runs: int) -> list[dict[str, Any]]:
    source, factory, _ = CASES[case]
    out = []
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-I", "-c", PLAIN, str(recipe), str(source), factory],
            capture_output=True,
            text=True,
            cwd=recipe.parent,
        )
        if proc.returncode != 0:
            print(f"  plain run failed: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def report(case: str, doc: dict[str, Any], wall: float, folder: Path, runs: int) -> None:
    print(f"== {case}: {doc['verdict']} in {wall:.1f} s ({doc['repeat']} processes per cell)")
    print(f"   {'cell':28} {'worst first/p50':34} start-up")
    cells = [("no recipe", doc["baseline"])] + [(c["label"], c) for c in doc["candidates"]]
    for label, cell in cells:
        st = cell.get("startup_ms") or {}
        start = (
            "-"
            if label == "no recipe" or st.get("median") is None
            else (f"{st['median']:.0f} ms ({st['lo']:.0f}-{st['hi']:.0f})")
        )
        verdict = cell.get("verdict", "")
        print(f"   {label:28} {worst(cell):34} {start}  {verdict}")
    if case == "speech":
        ok = doc["verdict"] == "verified" and wall <= GOAL_SPEECH_S
        print(f"   goal: verified in <= {GOAL_SPEECH_S:.0f} s: {'met' if ok else 'missed'}")
    by = {c["label"]: c for c in doc["candidates"]}
    cold, art = by.get("compile dynamic"), by.get("compile + cache artifact")
    if cold and art and art.get("startup_ms", {}).get("median") and cold["startup_ms"]["median"]:
        share = art["startup_ms"]["median"] / cold["startup_ms"]["median"]
        met = "met" if share <= GOAL_ARTIFACT else "missed"
        print(
            f"   cache artifact start-up / cold compile start-up: {share:.0%} "
            f"(goal <= {GOAL_ARTIFACT:.0%}: {met})"
        )
    recipe = folder / f"{case}_recipe.py"
    if runs and recipe.exists():
        results = plain(recipe, case, runs)
        if results:
            worsts = [max(r["ratios"].values()) for r in results]
            starts = [r["startup_ms"] for r in results]
            print(
                f"   emitted recipe, {len(results)} plain processes (shapes reversed): worst "
                f"first/median {statistics.median(worsts):.2f}x (max {max(worsts):.2f}x), "
                f"start-up {statistics.median(starts):.0f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--plain", type=int, default=6, help="plain processes per recipe")
    parser.add_argument("--case", choices=("speech", "compile", "both"), default="both")
    parser.add_argument("--folder", type=Path)
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="warmup-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    for case in ["speech", "compile"] if args.case == "both" else [args.case]:
        doc, wall = warmup(case, args.repeat, folder)
        report(case, doc, wall, folder, args.plain)
    print(f"records under {folder}")


if __name__ == "__main__":
    main()
