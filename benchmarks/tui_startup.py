"""How the TUI costs: time to its first frame, and its CPU while it watches a flood of iterations.

Run: ``.venv/bin/python benchmarks/tui_startup.py`` (about two minutes).

1. Time to first frame, as a user sees it. Each app is started in a real pseudo-terminal
   (100x30), the way a user starts it, and what it writes is decoded as a terminal would
   (``Screen``: cursor moves, erases, colours dropped), so the times are those of text a person
   can read, not of the first bytes written. Timed from the spawn until (a) three rows of the
   screen hold words (the minimal app: its title, its text and its footer; warmscope: the run
   header and the chart's title) and (b) the footer's "Quit" is on the bottom row (Textual
   composes the footer's keys a frame or more later); then it is sent ``q``. The same method
   times warmscope as a user starts it (``warmscope``: the default sample model, the child
   started behind the first frame; ``warmscope open RECORD``) and a minimal Textual app
   (Header, Static, Footer) with the same interpreter. Medians of several alternating
   repetitions. Beside the times, the CPU seconds each program had used when its screen was
   readable: what it did to get there, which other load on the machine does not stretch (on a
   busy machine, the ratio to read).
2. Watching ``sample:trivial`` at full speed for ``--duration`` seconds: the UI process's CPU
   over the measured loop (from its record's first iteration batch to its end), and the child's
   iteration rate, against a headless ``warmscope run`` of the same settings (whose own CPU,
   the session's reader and sampler, is printed too).
"""

from __future__ import annotations

import argparse
import codecs
import fcntl
import os
import re
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
TEXT_ROWS = 3
"""Rows with a word on them: the screen is readable (a title, a text, the keys)."""
WORD = re.compile(r"[A-Za-z]{3,}")

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


# One escape sequence, control character or run of text at a time. CSI (cursor moves, erases,
# colours, modes), OSC and DCS/APC strings (titles, queries), two-byte escapes (save cursor…).
TOKEN = re.compile(
    r"\x1b\[(?P<params>[0-?]*)[ -/]*(?P<final>[@-~])"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[P^_X][^\x1b]*\x1b\\"
    r"|\x1b[ -/]*[0-OQ-WYZ\\`-~]"  # not the openers of the strings above
    r"|(?P<control>[\x00-\x1a\x1c-\x1f\x7f])"
    r"|(?P<text>[^\x00-\x1f\x7f]+)"
)


class Screen:
    """Just enough of a terminal to read what an app drew: the text on each row.

    Textual draws with absolute cursor moves and colours; the colours are dropped, and every
    character is taken as one cell (the charts' blocks, braille and box lines are). A sequence
    cut between two reads waits for the rest."""

    def __init__(self, cols: int = COLS, rows: int = ROWS) -> None:
        self.cols, self.rows = cols, rows
        self.cells = [[" "] * cols for _ in range(rows)]
        self.x = self.y = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""

    def feed(self, data: bytes) -> None:
        text = self._pending + self._decoder.decode(data)
        pos = 0
        while pos < len(text):
            m = TOKEN.match(text, pos)
            if m is None:  # an escape sequence not complete yet
                break
            pos = m.end()
            if m["text"] is not None:
                self._write(m["text"])
            elif m["control"] is not None:
                self._control(m["control"])
            elif m["final"] is not None:
                self._csi(m["params"], m["final"])
        self._pending = text[pos:]

    def _write(self, text: str) -> None:
        for ch in text:
            if self.x >= self.cols:
                self.x, self.y = 0, min(self.y + 1, self.rows - 1)
            self.cells[self.y][self.x] = ch
            self.x += 1

    def _control(self, ch: str) -> None:
        if ch == "\r":
            self.x = 0
        elif ch == "\n":
            self.y = min(self.y + 1, self.rows - 1)
        elif ch == "\b":
            self.x = max(self.x - 1, 0)

    def _csi(self, params: str, final: str) -> None:
        if params.startswith(("?", ">", "<", "=")):
            return  # modes and queries: nothing drawn
        args = [int(p) if p.isdigit() else 0 for p in params.split(";")]
        n = max(args[0], 1)
        if final in "Hf":
            row = args[0] if args[0] else 1
            col = args[1] if len(args) > 1 and args[1] else 1
            self.y, self.x = min(row, self.rows) - 1, min(col, self.cols) - 1
        elif final == "A":
            self.y = max(self.y - n, 0)
        elif final == "B":
            self.y = min(self.y + n, self.rows - 1)
        elif final == "C":
            self.x = min(self.x + n, self.cols - 1)
        elif final == "D":
            self.x = max(self.x - n, 0)
        elif final == "G":
            self.x = min(n, self.cols) - 1
        elif final == "d":
            self.y = min(n, self.rows) - 1
        elif final == "K":
            row = self.cells[self.y]
            lo, hi = {0: (self.x, self.cols), 1: (0, self.x + 1), 2: (0, self.cols)}.get(
                args[0], (0, 0)
            )
            row[lo:hi] = [" "] * (hi - lo)
        elif final == "J" and args[0] in (2, 3):
            self.cells = [[" "] * self.cols for _ in range(self.rows)]

    def lines(self) -> list[str]:
        return ["".join(row) for row in self.cells]

    def text_rows(self) -> int:
        """Rows with a word on them (three letters or more)."""
        return sum(1 for line in self.lines() if WORD.search(line))

    def footer(self) -> bool:
        """The bottom row names the quit key."""
        return "Quit" in self.lines()[-1]


class Terminal:
    """A process on a pseudo-terminal of COLSxROWS whose output is drained, searched, and
    decoded as a terminal shows it (``screen``)."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        first: bytes = FOOTER,
        size: tuple[int, int] = (COLS, ROWS),
    ) -> None:
        self.markers = {first: 0.0, FOOTER: 0.0}
        """Bytes searched for in the raw output: when each first appeared."""
        self.seen = {"text": 0.0, "footer": 0.0}
        """When the decoded screen first had ``TEXT_ROWS`` rows of words, and its footer."""
        self.cpu_at_text = 0.0
        """The program's CPU seconds (user and system) when its screen became readable: what
        it did to get there, which other load on the machine does not stretch."""
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
        self.screen = Screen(*size)
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
                self.screen.feed(chunk)
                if not self.seen["text"] and self.screen.text_rows() >= TEXT_ROWS:
                    self.seen["text"] = now
                    self.cpu_at_text = cpu_seconds(self.proc.pid)
                if not self.seen["footer"] and self.screen.footer():
                    self.seen["footer"] = now

    def wait_for_markers(self, timeout: float = 30.0) -> tuple[float, float, float]:
        """Seconds from the spawn until the screen is readable (``TEXT_ROWS`` rows of words)
        and until its footer is drawn, as a terminal shows them (the raw ``markers`` too); and
        the CPU seconds the program had used when it was readable."""
        deadline = time.perf_counter() + timeout
        while not all(self.markers.values()) or not all(self.seen.values()):
            if time.perf_counter() > deadline or self.proc.poll() is not None:
                shown = "\n".join(self.screen.lines())
                raise RuntimeError(f"no first frame from {self.proc.args}:\n{shown}")
            time.sleep(0.002)
        return self.seen["text"] - self.t0, self.seen["footer"] - self.t0, self.cpu_at_text

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


def first_frame(argv: list[str], first: bytes, env: dict[str, str]) -> tuple[float, float, float]:
    term = Terminal(argv, env, first)
    try:
        return term.wait_for_markers()
    finally:
        term.close()


def bench_first_frame(
    reps: int, tmp: Path, also: dict[str, str] | None = None
) -> dict[str, list[tuple[float, float, float]]]:
    """``also``: other warmscope programs (another checkout's, by name) timed alongside."""
    env = terminal_env(tmp)
    record = ROOT / "tests" / "data" / "speech-script.jsonl"
    cases = {
        "minimal Textual app": ([sys.executable, "-c", MINIMAL_APP], b"a minimal Textual app"),
        # As a user starts it: the default sample model, its child started after the frame.
        "warmscope": ([WARMSCOPE], b"latency"),
        "warmscope open RECORD": ([WARMSCOPE, "open", str(record)], b"latency"),
    }
    for name, program in (also or {}).items():
        cases[f"{name}: warmscope"] = ([program], b"latency")
        cases[f"{name}: open RECORD"] = ([program, "open", str(record)], b"latency")
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
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
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=PROGRAM",
        help="another warmscope (an older checkout's) whose first frame is timed alongside",
    )
    args = p.parse_args()
    also = dict(item.split("=", 1) for item in args.also)
    # pip byte-compiles a package when it installs it; an editable checkout run with
    # PYTHONDONTWRITEBYTECODE would instead compile every module on every start.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *(str(ROOT / d) for d in PACKAGES)],
        check=True,
    )
    print(f"machine: {psutil.cpu_count()} logical CPUs, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="warmscope-bench-") as name:
        tmp = Path(name)
        times = bench_first_frame(args.reps, tmp, also)
        base = [statistics.median(v) for v in zip(*times["minimal Textual app"], strict=True)]
        print(f"\nseconds from spawn in a {COLS}x{ROWS} pty, median of {args.reps} (min-max):")
        width = max(26, *(len(case) for case in times))
        print(
            f"  {'':<{width}} {'readable (3 rows of text)':>26}   {'footer drawn':>26}   "
            f"{'CPU until readable':>26}"
        )
        for case, pairs in times.items():
            cells = []
            for k, values in enumerate(zip(*pairs, strict=True)):
                med = statistics.median(values)
                cells.append(
                    f"{med:6.3f} ({min(values):.2f}-{max(values):.2f}) {med / base[k]:4.2f}x"
                )
            print(f"  {case:<{width}} {cells[0]:>26}   {cells[1]:>26}   {cells[2]:>26}")
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
