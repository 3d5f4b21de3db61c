"""What the live view costs, each figure against the goal of the issue "Light on the wire":

1. bytes a second the TUI writes to its terminal, and its CPU, while a model runs (120x40 and
   80x24, in a real pseudo-terminal; the first seconds, start and the model's setup, not counted);
2. the child's steady p50, p99, CV and iteration rate under the TUI against headless
   ``warmscope run`` of the same settings, interleaved (a headless run after each TUI run);
3. time to the first frame against a minimal Textual app (Header, Static, Footer);
4. the UI's CPU while a tiny model runs at full speed (tens of thousands of iterations a second).
5. with ``--host``: the bytes a second of the TUI watching a run over ``--host`` (to an SSH
   server on the loopback: ``tests/ssh_server.py``) against the same run here, interleaved.

    python benchmarks/tui_wire.py [--seconds 10] [--target sample:speech] [--rounds 2] [--host]

Figures 3 and 4 are measured as ``benchmarks/tui_startup.py`` measures them (its functions).
About four minutes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from tui_startup import PACKAGES, ROOT, Terminal, bench_first_frame, bench_watch, loop_rate

from warmscope.core.data.record import read_run
from warmscope.core.data.stats import summarize

GOALS = {(120, 40): 10.0, (80, 24): 5.0}  # KiB/s
UI_CPU_GOAL = 5.0  # % of a core at ~300 it/s
FAST_UI_CPU_GOAL = 10.0  # % of a core at ~60k it/s
CHILD_RATIO_GOAL = 1.2  # p99 and CV under the TUI, against headless
RATE_GOAL = 0.05  # the child's rate under the TUI within 5% of headless
FIRST_FRAME_GOAL = 1.2  # against a minimal Textual app
SETTLE_S = 8.0


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def spread(values: list[float], form: str = ".1f") -> str:
    """Median (min-max) of ``values``."""
    med = statistics.median(values)
    return f"{med:{form}} ({min(values):{form}}-{max(values):{form}})"


def measure(
    target: str,
    size: tuple[int, int],
    seconds: float,
    record: Path,
    host: tuple[str, dict[str, str]] | None = None,
) -> tuple[float, float]:
    """(KiB/s written, UI CPU % of a core) over ``seconds`` once the run is going; ``host``:
    the destination and the environment (ssh options) of a run over ``--host``."""
    cols, rows = size
    # The remote interpreter: this one, which has torch (the loopback is this machine).
    over = ["--host", host[0], "--python", sys.executable] if host else []
    term = Terminal(
        [
            *(sys.executable, "-m", "warmscope.cli", target, *over),
            *("--duration", str(SETTLE_S + seconds + 30), "--record", str(record)),
        ],
        dict(
            os.environ,
            TERM="xterm-256color",
            COLUMNS=str(cols),
            LINES=str(rows),
            **(host[1] if host else {}),
        ),
        size=size,
    )
    ui = psutil.Process(term.proc.pid)
    try:
        time.sleep(SETTLE_S)  # start, first frame, the model's setup: not counted
        t = ui.cpu_times()
        t0, cpu0, bytes0 = time.monotonic(), t.user + t.system, len(term.output)
        time.sleep(seconds)
        t = ui.cpu_times()
        counted = len(term.output) - bytes0
        cpu = 100 * (t.user + t.system - cpu0) / (time.monotonic() - t0)
    finally:
        term.proc.kill()  # the child ends with its parent; its record holds what was flushed
        term.proc.wait()
        term.close(timeout=1)
    return counted / 1024 / seconds, cpu


def headless(target: str, seconds: float, record: Path) -> None:
    subprocess.run(
        [
            *(sys.executable, "-m", "warmscope.cli", "run", target, "--quiet"),
            *("--duration", str(seconds), "--record", str(record)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


def child_figures(record: Path) -> dict[str, float]:
    """The child's steady p50, p99 (ms), CV and its rate over the loop, from a record."""
    data = read_run(record)
    s = summarize(data.ms)
    return {
        "p50": s.p50_ms or 0.0,
        "p99": s.p99_ms or 0.0,
        "cv": s.cv or 0.0,
        "rate": loop_rate(record)[1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--target", default="sample:speech")
    parser.add_argument("--rounds", type=int, default=2, help="TUI runs per size")
    parser.add_argument("--frames", type=int, default=5, help="first-frame repetitions")
    parser.add_argument("--fast-seconds", type=float, default=10.0, help="the tiny model's run")
    parser.add_argument(
        "--host", action="store_true", help="only 5: the TUI over --host against here"
    )
    args = parser.parse_args()
    subprocess.run(  # as pip would have: no module compiled on a timed start
        [sys.executable, "-m", "compileall", "-q", *(str(ROOT / d) for d in PACKAGES)],
        check=True,
    )
    print(f"cpu: {os.cpu_count()} logical cores, load {os.getloadavg()[0]:.2f}; {args.target}")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        if args.host:
            over_host(args, folder)
            return
        pairs: list[tuple[dict[str, float], dict[str, float]]] = []
        print("\n1. the live view over the wire (median (min-max) of the rounds)")
        for size, goal in GOALS.items():
            kib, cpu, rate = [], [], []
            for n in range(args.rounds):
                tui_record = folder / f"tui-{size[0]}-{n}.jsonl"
                k, c = measure(args.target, size, args.seconds, tui_record)
                headless_record = folder / f"headless-{size[0]}-{n}.jsonl"
                # its loop starts sooner: no terminal to draw first
                headless(args.target, args.seconds + SETTLE_S / 2, headless_record)
                pairs.append((child_figures(tui_record), child_figures(headless_record)))
                kib.append(k)
                cpu.append(c)
                rate.append(pairs[-1][0]["rate"])
            print(
                f"  {size[0]}x{size[1]}: {spread(kib)} KiB/s, goal <= {goal:g}: "
                f"{verdict(statistics.median(kib) <= goal)}; UI CPU {spread(cpu)}% of a core "
                f"at {spread(rate, ',.0f')} it/s, goal <= {UI_CPU_GOAL:g} at ~300 it/s: "
                f"{verdict(statistics.median(cpu) <= UI_CPU_GOAL)}"
            )

        print(f"\n2. the child under the TUI vs headless, {len(pairs)} interleaved pairs")
        for key, label, form in (
            ("p50", "steady p50 ms", ".2f"),
            ("p99", "steady p99 ms", ".2f"),
            ("cv", "steady CV", ".3f"),
            ("rate", "it/s", ",.0f"),
        ):
            tui = [t[key] for t, _ in pairs]
            base = [h[key] for _, h in pairs]
            ratio = statistics.median(tui) / statistics.median(base) if any(base) else 0.0
            if key in ("p99", "cv"):
                goal = f"goal <= {CHILD_RATIO_GOAL:g}x: {verdict(ratio <= CHILD_RATIO_GOAL)}"
            elif key == "rate":
                goal = f"goal within {RATE_GOAL:.0%}: {verdict(abs(ratio - 1) <= RATE_GOAL)}"
            else:
                goal = ""
            print(
                f"  {label:<14} TUI {spread(tui, form):>24}  headless {spread(base, form):>24}"
                f"  {ratio:.2f}x  {goal}"
            )

        print(f"\n3. first frame in a 100x30 pty, median of {args.frames} (min-max)")
        times = bench_first_frame(args.frames, folder)
        base_frame = statistics.median(first for first, _ in times["minimal Textual app"])
        for case, pairs_ in times.items():
            firsts = [first for first, _ in pairs_]
            ratio = statistics.median(firsts) / base_frame
            goal = (
                ""
                if case.startswith("minimal")
                else (f"goal <= {FIRST_FRAME_GOAL:g}x: {verdict(ratio <= FIRST_FRAME_GOAL)}")
            )
            print(f"  {case:<26} {spread(firsts, '.3f')} s  {ratio:.2f}x  {goal}")

        print(f"\n4. sample:trivial at full speed for {args.fast_seconds:g} s")
        r = bench_watch(args.fast_seconds, folder, 0)
        print(
            f"  UI CPU {r['ui_cpu']:.1f}% of a core at {r['ui_rate']:,.0f} it/s "
            f"(headless {r['headless_rate']:,.0f} it/s), goal <= {FAST_UI_CPU_GOAL:g}: "
            f"{verdict(r['ui_cpu'] <= FAST_UI_CPU_GOAL)}"
        )
        # The session's reader (the pipe, the fold, the record) runs in the UI process too:
        # a headless run of the same settings costs that much without drawing anything.
        print(
            f"  headless `warmscope run` alone (the same reader, no screen): "
            f"{r['headless_cpu']:.1f}% at {r['headless_rate']:,.0f} it/s; "
            f"the difference, what drawing costs: {r['ui_cpu'] - r['headless_cpu']:.1f}%"
        )


def over_host(args: argparse.Namespace, folder: Path) -> None:
    """5. The live view of a run over ``--host`` against the same run here: what the TUI writes
    should not depend on where the child runs (its lines arrive over ssh, in batches)."""
    sys.path.insert(0, str(ROOT))  # the loopback SSH server is the tests' own
    from tests.ssh_server import ssh_server

    print("\n5. the live view of a run over --host 127.0.0.1 (an SSH server on the loopback)")
    with ssh_server(folder / "ssh") as server:
        for size, goal in GOALS.items():
            here, there, rates = [], [], []
            for n in range(args.rounds):
                here_record = folder / f"here-{size[0]}-{n}.jsonl"
                k, _ = measure(args.target, size, args.seconds, here_record)
                here.append(k)
                remote = folder / f"there-{size[0]}-{n}.jsonl"
                k, _ = measure(args.target, size, args.seconds, remote, ("127.0.0.1", server.env()))
                there.append(k)
                rates.append(loop_rate(remote)[1])
            print(
                f"  {size[0]}x{size[1]}: over --host {spread(there)} KiB/s at "
                f"{spread(rates, ',.0f')} it/s, here {spread(here)} KiB/s; goal <= {goal:g}: "
                f"{verdict(statistics.median(there) <= goal)}"
            )


if __name__ == "__main__":
    main()
