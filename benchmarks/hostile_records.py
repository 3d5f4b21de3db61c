"""What ``warmscope report`` costs on records made to hurt a reader.

    python benchmarks/hostile_records.py

Builds in a temporary folder:

- a 0.6 MB record whose packed batch declares 250 million iterations, its zlib stream
  inflating to about a thousand times its size (24 bytes an iteration, if believed);
- a record of a real header followed by 10 GB of NULs (a sparse file: a few KB on disk);

then runs ``warmscope report`` on each and prints its wall time, its peak RSS (the child's
``ru_maxrss``, from ``os.wait4``: each run's own) and the line it printed, against the goals.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from warmscope.core.data.schema import FORMAT, VERSION

WARMSCOPE = [sys.executable, "-m", "warmscope.cli"]
RSS_GOAL_MB = 500.0
TIME_GOAL_S = 10.0
HEADER = {"type": "header", "format": FORMAT, "version": VERSION, "settings": {}}


def declared_bomb(path: Path) -> Path:
    deflate = zlib.compressobj(9)
    parts = [deflate.compress(b"q")]
    size, chunk = 0, bytes(1 << 20)
    while size < 450_000:
        part = deflate.compress(chunk)
        parts.append(part)
        size += len(part)
    parts.append(deflate.flush())
    z = base64.b64encode(b"".join(parts)).decode()
    batch = {"type": "iters", "i0": 0, "n": 250_000_000, "s0": 0, "z": z}
    lines = [HEADER, batch, {"type": "end", "status": "ok"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def nul_flood(path: Path) -> Path:
    path.write_text(json.dumps(HEADER) + "\n")
    os.truncate(path, path.stat().st_size + (10 << 30))
    return path


def measure(path: Path) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS in MB, exit code and the last line on stderr."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [*WARMSCOPE, "report", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    lines = err.strip().splitlines()
    return wall, usage.ru_maxrss / 1024, proc.returncode, lines[-1] if lines else ""


def main() -> int:
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        cases = {
            "declared 2.5e8 iterations": declared_bomb(Path(tmp) / "bomb.jsonl"),
            "header + 10 GB of NULs": nul_flood(Path(tmp) / "nuls.jsonl"),
        }
        for name, path in cases.items():
            wall, rss, code, line = measure(path)
            size = path.stat().st_size / 1e6
            good = wall <= TIME_GOAL_S and rss <= RSS_GOAL_MB
            ok = ok and good
            print(f"{name} ({size:,.1f} MB declared on disk)")
            print(f"  wall {wall:.2f} s (goal <= {TIME_GOAL_S:.0f} s)")
            print(f"  peak RSS {rss:.0f} MB (goal <= {RSS_GOAL_MB:.0f} MB)")
            print(f"  exit {code}: {line}")
            print(f"  {'meets' if good else 'MISSES'} the goals")
    all_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"largest peak RSS of any child: {all_children:.0f} MB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
