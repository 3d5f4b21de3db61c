"""How the TUI costs: time to its first frame, and its CPU while it watches a flood of iterations.

Run: ``.venv/bin/python benchmarks/tui_startup.py`` (about two minutes).

1. Time to first frame. Each app is started in a real pseudo-terminal (100x30), the way a user
   starts it, and timed from the spawn until (a) its first frame reaches the terminal (a text
   of its own screen appears in the output: the minimal app's static text, warmscope's chart
   title) and (b) its footer is drawn ("Quit" appears; Textual composes the footer's keys a
   frame or more later); then it is sent ``q``. The same method times warmscope and a minimal
   Textual app (Header, Static, Footer) with the same interpreter. Medians of several
   alternating repetitions.
2. Watching ``sample:trivial`` at full speed for ``--duration`` seconds: the UI process's CPU
   over the measured loop (from its record's first iteration batch to its end), and the child's
   iteration rate, against a headless ``warmscope run`` of the same settings (whose own CPU,
   the session's reader and sampler, is printed too).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import psutil

from warmscope.core.data.record import read_run

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WARMSCOPE = str(BIN / "warmscope")
PACKAGES = ("core", "cli", "tui", "sample_models")
COLS, ROWS = 100, 30
FOOTER = b"Quit"

MINIMAL_APP = """
from textual.app import App
from textual.widgets import Footer, Header, Static

class Minimal(App):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self):
        yield Header()
        yield Static("a minimal Textual app")
        yield Footer()

Minimal().run()
"""


class Terminal:
    """A process on a pseudo-terminal of COLSxROWS whose output is drained and searched."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        first: bytes = FOOTER,
        size: tuple[int, int] = (COLS, ROWS),
    ) -> None:
        self.markers = {first: 0.0, FOOTER: 0.0}
        master, slave = os.openpty()
        cols, rows = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

        def controlling_tty() -> None:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            preexec_fn=controlling_tty,
            close_fds=True,
        )
        os.close(slave)
        self.master = master
        self.output = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if not ready:
                if self.proc.poll() is not None:
                    return
                continue
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            now = time.perf_counter()
            with self._lock:
                self.output += chunk
                for marker, seen in self.markers.items():
                    if not seen and marker in self.output:
                        self.markers[marker] = now

    def wait_for_markers(self, timeout: float = 30.0) -> tuple[float, float]:
        """Seconds from the spawn to the first frame and to the footer."""
        deadline = time.perf_counter() + timeout
        while not all(self.markers.values()):
            if time.perf_counter() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"no first frame from {self.proc.args}")
            time.sleep(0.002)
        first, footer = self.markers.values()
        return first - self.t0, footer - self.t0

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self, timeout: float = 15.0) -> None:
        try:
            self.send(b"q")
            self.proc.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self._reader.join(2)
        os.close(self.master)


def terminal_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
    env["WARMSCOPE_RECORD_DIR"] = str(tmp)
    env.pop("NO_COLOR", None)
    return env


# -- 1. first frame -----------------------------------------------------------------------


def first_frame(argv: list[str], first: bytes, env: dict[str, str]) -> tuple[float, float]:
    term = Terminal(argv, env, first)
    try:
        return term.wait_for_markers()
    finally:
        term.close()


def bench_first_frame(reps: int, tmp: Path) -> dict[str, list[tuple[float, float]]]:
    env = terminal_env(tmp)
    record = ROOT / "tests" / "data" / "speech-script.jsonl"
    cases = {
        "minimal Textual app": ([sys.executable, "-c", MINIMAL_APP], b"a minimal Textual app"),
        "warmscope sample:trivial": ([WARMSCOPE, "sample:trivial", "--iters", "100"], b"latency"),
        "warmscope open RECORD": ([WARMSCOPE, "open", str(record)], b"latency"),
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for argv, first in cases.values():  # one untimed start each: warm the file cache
        first_frame(argv, first, env)
    for _ in range(reps):
        for name, (argv, first) in cases.items():
            times[name].append(first_frame(argv, first, env))
    return times


# -- 2. watching a flood ----------------------------------------------------------------


class RecordWatch:
    """Reads a growing record incrementally: when the loop starts, when the run ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.buffer = b""
        self.started = False
        self.ended = False

    def poll(self) -> None:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        self.offset += len(chunk)
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            if line.startswith(b'{"type":"iters"'):
                self.started = True
            elif line.startswith(b'{"type":"end"'):
                self.ended = True


def cpu_seconds(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def loop_rate(record: Path) -> tuple[int, float]:
    """(iterations, iterations per second over the loop) from a record."""
    data = read_run(record)
    if not data.count:
        return 0, 0.0
    seconds = (data.start_ms[-1] + data.ms[-1]) / 1000
    return data.count, data.count / seconds


def measure_loop(pid: int, watch: RecordWatch, timeout: float) -> float:
    """The process's CPU (% of one core) from the loop's first batch to the run's end."""
    deadline = time.monotonic() + timeout
    while not watch.started:
        watch.poll()
        if time.monotonic() > deadline:
            raise RuntimeError("the run did not start")
        time.sleep(0.02)
    c0, t0 = cpu_seconds(pid), time.monotonic()
    c1, t1 = c0, t0
    while not watch.ended:
        c1, t1 = cpu_seconds(pid), time.monotonic()  # the last reading before the end
        watch.poll()
        if time.monotonic() > deadline:
            raise RuntimeError("the run did not end")
        time.sleep(0.05)
    return 100.0 * (c1 - c0) / (t1 - t0)


def bench_watch(duration: float, tmp: Path, n: int) -> dict[str, float]:
    record = tmp / f"ui-{n}.jsonl"
    term = Terminal(
        [WARMSCOPE, "sample:trivial", "--duration", str(duration), "--record", str(record)],
        terminal_env(tmp),
        b"latency",
    )
    try:
        term.wait_for_markers()
        ui_cpu = measure_loop(term.proc.pid, RecordWatch(record), duration + 60)
    finally:
        term.close()
    ui_count, ui_rate = loop_rate(record)

    record = tmp / f"headless-{n}.jsonl"
    document = tmp / f"headless-{n}.json"
    headless = [WARMSCOPE, "run", "sample:trivial", "--duration", str(duration), "--quiet"]
    proc = subprocess.Popen(
        [*headless, "--record", str(record), "--json", str(document)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=terminal_env(tmp),
    )
    try:
        headless_cpu = measure_loop(proc.pid, RecordWatch(record), duration + 60)
    finally:
        proc.wait(60)
    headless_count, headless_rate = loop_rate(record)
    return {
        "ui_cpu": ui_cpu,
        "headless_cpu": headless_cpu,
        "ui_rate": ui_rate,
        "headless_rate": headless_rate,
        "ui_count": ui_count,
        "headless_count": headless_count,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7, help="first-frame repetitions per app")
    p.add_argument("--duration", type=float, default=10.0, help="seconds of sample:trivial")
    p.add_argument("--watch-reps", type=int, default=2, help="repetitions of the CPU test")
    p.add_argument("--skip-watch", action="store_true")
    args = p.parse_args()
    # pip byte-compiles a package when it installs it; an editable checkout run with
    # PYTHONDONTWRITEBYTECODE would instead compile every module on every start.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *(str(ROOT / d) for d in PACKAGES)],
        check=True,
    )
    print(f"machine: {psutil.cpu_count()} logical CPUs, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="warmscope-bench-") as name:
        tmp = Path(name)
        times = bench_first_frame(args.reps, tmp)
        base = [statistics.median(v) for v in zip(*times["minimal Textual app"], strict=True)]
        print(f"\nseconds from spawn in a {COLS}x{ROWS} pty, median of {args.reps} (min-max):")
        print(f"  {'':<26} {'first frame':>26}   {'footer drawn':>26}")
        for case, pairs in times.items():
            cells = []
            for k, values in enumerate(zip(*pairs, strict=True)):
                med = statistics.median(values)
                cells.append(
                    f"{med:6.3f} ({min(values):.2f}-{max(values):.2f}) {med / base[k]:4.2f}x"
                )
            print(f"  {case:<26} {cells[0]:>26}   {cells[1]:>26}")
        if args.skip_watch:
            return 0
        print(f"\nwatching sample:trivial for {args.duration:g} s (CPU over the measured loop):")
        for n in range(args.watch_reps):
            r = bench_watch(args.duration, tmp, n)
            ratio = r["ui_rate"] / r["headless_rate"] if r["headless_rate"] else 0.0
            print(
                f"  #{n + 1} UI process {r['ui_cpu']:5.1f}% of a core "
                f"(headless warmscope run: {r['headless_cpu']:5.1f}%); "
                f"child {r['ui_rate']:,.0f} it/s under the UI vs {r['headless_rate']:,.0f} it/s "
                f"headless ({ratio:.2f}x; {r['ui_count']:,} vs {r['headless_count']:,} iterations)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
