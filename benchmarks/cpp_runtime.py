"""Python against C++: the speech sample, saved as a TorchScript archive, run by both agents.

Fresh processes, alternating (python, cpp, python, cpp, ...), each through ``RunSession`` as
``warmscope run`` starts it, on one intra-op thread. Side by side, the median across processes
with its 95% interval (order statistics, from 6 processes each):

- process start to first iteration: from the spawn to the loop's first call, by the parent's
  monotonic clock (the arrival of the first batch, less what that batch measured);
- first call: iteration 0;
- steady p50;
- observer cost per iteration: the loop's own time per pass, each iteration's start-to-start
  period less its call, over the steady iterations (the batching, the ring, the marker check,
  and the cache misses they meet after a 4 ms call: a trivial model's pass costs the C++ loop
  0.2 µs, 0.5 µs with log capture on).

The goal: C++'s steady p50 no higher than Python's beyond noise, and its start well below.

    python benchmarks/cpp_runtime.py [--rounds R] [--iters N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.child import protocol
from warmscope.core.data.intervals import median_interval, verdict
from warmscope.core.data.settings import RunSettings
from warmscope.core.run import cpp_build
from warmscope.core.run.session import RunSession

ROOT = Path(__file__).resolve().parent.parent
SAVE = """
import sys, torch
sys.path.insert(0, sys.argv[2])
import speech
torch.jit.save(torch.jit.script(speech.make_model().eval()), sys.argv[1])
"""
RUNTIMES = ("python", "cpp")


class Timed(RunSession):
    """A session that notes when its first batch of iterations arrives (the parent's clock)
    and where, after the loop's start, the batch's last iteration ended: their difference is
    the loop's start on the parent's clock (give or take the pipe's latency)."""

    loop_start: float | None = None

    def protocol_lines(self, lines: list[bytes]) -> None:
        if self.loop_start is None:
            arrived = time.monotonic()
            for line in lines:
                if b'"t":"iters"' in line:
                    ns, st, _ = protocol.iteration_columns(protocol.decode(line))
                    self.loop_start = arrived - (st[-1] + ns[-1]) / 1e9
                    break
        super().protocol_lines(lines)


def one(archive: Path, runtime: str, iters: int, folder: Path) -> dict[str, float]:
    settings = RunSettings(target=str(archive), inputs=["1x300x40"], iters=iters)
    settings.set(f"runtime={runtime}")
    settings.set("intra_op_threads=1")
    session = Timed(settings, record_path=folder / f"{runtime}-{time.time_ns()}.jsonl")
    session.start()
    session.wait()
    data = session.data
    if data.status != "ok" or session.loop_start is None:
        raise SystemExit(f"{runtime}: {data.status} {data.status_detail}")
    ms, st = list(data.ms), list(data.start_ms)
    summary = data.summary()
    sf = summary.steady_from or 0
    costs = [st[i + 1] - st[i] - ms[i] for i in range(sf, len(ms) - 1)]
    return {
        "start_s": session.loop_start - session._t0 + st[0] / 1e3,
        "setup_s": sum(data.phases.values()) / 1e3,
        "first_ms": ms[0],
        "p50_ms": summary.p50_ms or 0.0,
        "observer_us": statistics.median(costs) * 1e3 if costs else float("nan"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="processes per runtime (6)")
    parser.add_argument("--iters", type=int, default=300, help="iterations per process (300)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="warmscope-cpp-bench-") as tmp:
        folder = Path(tmp)
        archive = folder / "speech.pt"
        subprocess.run(
            [sys.executable, "-c", SAVE, str(archive), str(ROOT / "sample_models")], check=True
        )
        child = cpp_build.child_for(None, None)
        if not child.built:
            t0 = time.monotonic()
            print("building the C++ agent (once per torch build)...", file=sys.stderr)
            child.build()
            print(f"built in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        got: dict[str, list[dict[str, float]]] = {r: [] for r in RUNTIMES}
        for k in range(args.rounds):
            for runtime in RUNTIMES:
                got[runtime].append(one(archive, runtime, args.iters, folder))
            print(f"round {k + 1}/{args.rounds}", file=sys.stderr)
    print(render(got, args))
    return 0


def render(got: dict[str, list[dict[str, float]]], args: Any) -> str:
    rows = [
        ("process start to first iteration", "start_s", lambda v: f"{v:.2f} s"),
        ("  of which setup phases", "setup_s", lambda v: f"{v:.2f} s"),
        ("first call", "first_ms", fmt_ms),
        ("steady p50", "p50_ms", fmt_ms),
        ("observer cost per iteration", "observer_us", lambda v: f"{v:.2f} µs"),
    ]
    width = 36
    out = [
        f"speech sample as a TorchScript archive, 1x300x40, one thread; {args.rounds} fresh "
        f"processes each, alternating, {args.iters} iterations; median (95% interval)",
        f"{'':{width}}{'python':<30}{'cpp':<30}cpp / python",
    ]
    for label, key, show in rows:
        cells = []
        ivs = []
        for runtime in RUNTIMES:
            iv = median_interval([r[key] for r in got[runtime]])
            ivs.append(iv)
            cells.append(
                f"{show(iv.median)} ({show(iv.lo)}–{show(iv.hi)})" if iv is not None else "-"
            )
        ratio = (
            f"{ivs[1].median / ivs[0].median:.2f}×"
            if ivs[0] is not None and ivs[1] is not None and ivs[0].median
            else "-"
        )
        out.append(f"{label:{width}}{cells[0]:<30}{cells[1]:<30}{ratio}")
    py, cpp = (median_interval([r["p50_ms"] for r in got[rt]]) for rt in RUNTIMES)
    if py is not None and cpp is not None:
        out.append(f"steady p50: cpp is {verdict(cpp, py)} python's (goal: not higher)")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
