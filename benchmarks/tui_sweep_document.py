"""What the TUI holds opening a sweep document made to hurt it.

    python benchmarks/tui_sweep_document.py

Builds, beside a copy of the checked-in H100 sweep (its records included):

- documents of 16 MB and of about 64 MB (the most a sweep document may weigh): as many cells
  as a sweep may have (64), each with thousands of processes naming the sweep's records;
- a document of 100,000 cells of a process each, about 64 MB (more cells than any sweep has);

then opens each with ``warmscope open`` in a real pseudo-terminal (100x30), as a user would,
and prints the process's peak RSS (the kernel's VmHWM) until its sweep screen is drawn, or its
exit status and line where it refuses the document, against the goal of 1.5 GB.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_hostile_documents import (  # noqa: E402 - the repository's root first
    SWEEP,
    SWEEP_DRAWN,
    TUI_RSS_BOUND,
    big_document,
    tui_peak_rss,
)


def many_cells(folder: Path, count: int) -> Path:
    doc = json.loads((folder / "sweep.json").read_text())
    kept = ("label", "runs", "processes", "first_ms", "shapes")
    cell = {k: v for k, v in doc["cells"][0].items() if k in kept}
    cell["processes"] = []
    doc["cells"] = [{**copy.deepcopy(cell), "index": n} for n in range(count)]
    path = folder / f"cells-{count}.json"
    path.write_text(json.dumps(doc))
    return path


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sweep"
        shutil.copytree(SWEEP, folder)
        cases = [
            ("16 MB, 64 cells", big_document(folder, 16)),
            ("64 MB, 64 cells", big_document(folder, 63.5)),
            ("100,000 cells", many_cells(folder, 100_000)),
        ]
        for name, path in cases:
            t0 = time.monotonic()
            peak, seen, code = tui_peak_rss(path, 120)
            took = time.monotonic() - t0
            drawn = SWEEP_DRAWN in seen
            what = "drawn" if drawn else f"exit {code}: " + seen.decode(errors="replace").strip()
            ok = "ok" if peak < TUI_RSS_BOUND else "OVER"
            print(
                f"{name:18} {path.stat().st_size / 2**20:5.1f} MB  peak RSS {peak / 2**20:6.0f} MiB"
                f" ({ok}, goal {TUI_RSS_BOUND >> 20} MiB)  {took:5.1f} s  {what[:160]}"
            )


if __name__ == "__main__":
    main()
