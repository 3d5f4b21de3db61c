"""Why a served shape's first call stays slow after a warm-up recipe on a GPU: variants, each
in a fresh process (process-wide state: the CUDA context, cuDNN's autotuning cache, the
TorchScript executor), with torch alone.

    python benchmarks/gpu_first_call_probe.py            # every variant, a table at the end
    python benchmarks/gpu_first_call_probe.py VARIANT    # one, as JSON (what the table runs)

Each variant builds ``sample:cnn``, warms it up as a recipe would (three calls per shape), then
serves the shapes in the other order and times each call with the host clock around a
synchronize and with CUDA events (device time). ``events`` measures what the events cost per
call on a steady model, interleaved with host-only blocks.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHAPES = [64, 96, 128]
SERVE = [128, 96, 64]
VARIANTS = {
    "script-asc": dict(mode="script", recipe=SHAPES, benchmark=True),
    "script-desc": dict(mode="script", recipe=SERVE, benchmark=True),
    "script-asc-same-tensors": dict(mode="script", recipe=SHAPES, benchmark=True, same=True),
    "script-asc-sleep": dict(mode="script", recipe=SHAPES, benchmark=True, sleep=0.2),
    "script-asc-extra-pass": dict(mode="script", recipe=SHAPES + SERVE, benchmark=True),
    "script-asc-nobench": dict(mode="script", recipe=SHAPES, benchmark=False),
    "eager-asc": dict(mode="eager", recipe=SHAPES, benchmark=True),
    "eager-asc-nobench": dict(mode="eager", recipe=SHAPES, benchmark=False),
    "script-asc-profiled": dict(mode="script", recipe=SHAPES, benchmark=True, profile=True),
}


def inputs(torch, s, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn([1, 3, s, s], generator=g).cuda()


def one(name: str) -> dict:
    import torch

    sys.path.insert(0, str(ROOT))
    from sample_models.cnn import make_model

    v = VARIANTS[name]
    torch.backends.cudnn.benchmark = v["benchmark"]
    torch.cuda.init()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    model = make_model().cuda()
    if v["mode"] == "script":
        model = torch.jit.script(model)
    feeds = {s: inputs(torch, s) for s in SHAPES}
    out: dict = {"variant": name, "recipe": []}
    with torch.no_grad():
        t_recipe = time.perf_counter()
        made = feeds if v.get("same") else {s: inputs(torch, s) for s in SHAPES}
        for s in v["recipe"]:
            for _ in range(3):
                t0 = time.perf_counter_ns()
                model(made[s])
                torch.cuda.synchronize()
                out["recipe"].append((s, (time.perf_counter_ns() - t0) / 1e3))
        del made
        out["recipe_ms"] = (time.perf_counter() - t_recipe) * 1e3
        if v.get("sleep"):
            time.sleep(v["sleep"])
        host, dev, order = [], [], []
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(60)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(60)]
        for i in range(60):
            s = SERVE[i % 3]
            if i == 0 and v.get("profile"):
                with torch.profiler.profile(
                    activities=[
                        torch.profiler.ProfilerActivity.CPU,
                        torch.profiler.ProfilerActivity.CUDA,
                    ]
                ) as prof:
                    t0 = time.perf_counter_ns()
                    starts[i].record()
                    model(feeds[s])
                    ends[i].record()
                    torch.cuda.synchronize()
                    t1 = time.perf_counter_ns()
                rows = sorted(prof.key_averages(), key=lambda a: -a.self_cpu_time_total)[:20]
                out["profile"] = [
                    (a.key[:60], round(a.self_cpu_time_total, 1), a.count) for a in rows
                ]
            else:
                t0 = time.perf_counter_ns()
                starts[i].record()
                model(feeds[s])
                ends[i].record()
                torch.cuda.synchronize()
                t1 = time.perf_counter_ns()
            host.append((t1 - t0) / 1e3)
            order.append(s)
        dev = [a.elapsed_time(b) * 1e3 for a, b in zip(starts, ends, strict=True)]
    per: dict = {}
    for s in SERVE:
        h = [x for x, o in zip(host, order, strict=True) if o == s]
        d = [x for x, o in zip(dev, order, strict=True) if o == s]
        per[s] = {
            "first_us": round(h[0], 1),
            "p50_us": round(statistics.median(h[3:]), 1),
            "ratio": round(h[0] / statistics.median(h[3:]), 2),
            "dev_first_us": round(d[0], 1),
            "dev_p50_us": round(statistics.median(d[3:]), 1),
        }
    out["per_shape"] = per
    out["first_six_us"] = [round(x) for x in host[:6]]
    return out


def events_cost() -> dict:
    """Host latency per call with and without a pair of CUDA events around it, in blocks."""
    import torch

    sys.path.insert(0, str(ROOT))
    from sample_models.cnn import make_model

    model = make_model().cuda().eval()
    x = inputs(torch, 64)
    clock = time.perf_counter_ns
    sync = torch.cuda.synchronize
    with torch.no_grad():
        for _ in range(200):
            model(x)
        sync()
        plain: list[float] = []
        timed: list[float] = []
        pool = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(256)
        ]
        stream = torch.cuda.current_stream()
        for _block in range(20):
            for _ in range(200):
                t0 = clock()
                model(x)
                sync()
                plain.append((clock() - t0) / 1e3)
            for k in range(200):
                a, b = pool[k % 256]
                t0 = clock()
                a.record(stream)
                model(x)
                b.record(stream)
                sync()
                timed.append((clock() - t0) / 1e3)
            # the read-back, in a batch, outside the timed calls
            _ = [a.elapsed_time(b) for a, b in pool[:200]]
    return {
        "plain_p50_us": round(statistics.median(plain), 2),
        "events_p50_us": round(statistics.median(timed), 2),
        "added_us": round(statistics.median(timed) - statistics.median(plain), 2),
    }


def main() -> None:
    if len(sys.argv) > 1:
        name = sys.argv[1]
        print(json.dumps(events_cost() if name == "events" else one(name)))
        return
    results = []
    for name in [*VARIANTS, "events", "events"]:
        p = subprocess.run(
            [sys.executable, __file__, name], capture_output=True, text=True, timeout=120
        )
        if p.returncode:
            print(name, "failed:", p.stderr[-2000:])
            continue
        results.append(json.loads(p.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    print()
    for r in results:
        if "per_shape" in r:
            cells = "  ".join(
                f"S={s}: {c['first_us']:.0f}/{c['p50_us']:.0f}us {c['ratio']:.2f}x dev {c['dev_first_us']:.0f}/{c['dev_p50_us']:.0f}"
                for s, c in r["per_shape"].items()
            )
            print(f"{r['variant']:<26} {cells}")
        else:
            print(f"events: {r}")


if __name__ == "__main__":
    main()
