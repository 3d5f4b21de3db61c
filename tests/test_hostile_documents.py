"""Sweep documents handed over by someone else: one schema, one line and exit 2 for a field of
the wrong type, whichever command reads it; NaN and infinities; escape sequences in every
export; a document recorded under a relative folder; a document far larger than a sweep makes.

The documents are real files: a checked-in sweep of real runs (an H100's, with its records),
mutated field by field. What each command says of a bad document is checked through ``main()``
in-process (``cli_in_process``), and on real processes for one case; a sweep recorded under a
relative folder is test_sweep's (its real sweep records so).
"""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import json
import math
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot

from tests.cli_in_process import main_here
from tests.conftest import Result, warmscope
from tests.tui_support import in_terminal, run, screen_text, wait_for
from warmscope.cli.compare import side_paths
from warmscope.core.data.record import RecordError
from warmscope.core.data.sweep_document import read_sweep, sweep_runs
from warmscope.core.output.export import sweep_csv_rows, sweep_csv_writer
from warmscope.core.output.report import sweep_report
from warmscope.core.output.text_views import render_sweep
from warmscope.tui.app import build_app
from warmscope.tui.drawing.sweep_strips import draw, strips
from warmscope.tui.screens.sweep_screen import SweepScreen, head_text, sweep_table

SWEEP = Path(__file__).parent / "data/gpu_h100/runs/warmup-cnn-script-cudnn-3shapes/verify"
ESC = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x9b31m"
"""An OSC 52 clipboard write, a screen clear and a C1 CSI: what a terminal must never get."""


@pytest.fixture
def document(tmp_path: Path) -> Path:
    """The checked-in sweep with its records, in a folder of the test's own."""
    folder = tmp_path / "sweep"
    shutil.copytree(SWEEP, folder)
    return folder / "sweep.json"


def every_reader(doc: dict[str, Any], path: Path) -> None:
    """What each command and the TUI make of a document, all of it evaluated."""
    render_sweep(doc)
    sweep_report(doc)
    sweep_csv_rows(sweep_csv_writer(io.StringIO()), doc, str(path))
    for width in (40, 100):
        draw(strips(doc, [(0, 1.0)]), width)
    console = Console(file=io.StringIO(), width=100)
    console.print(sweep_table(doc))
    head_text(doc)
    sweep_runs(doc, path)
    if len(doc["cells"]) == 1:
        side_paths(path)


BAD = ("x", -1, 2.5, True, None, [], {}, [[1, 2, 3]])
ALIKE = ("settings",)
"""Where every key is of one kind, which no reader interprets: its place is mutated, not each
key in it."""


def spots(value: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a document worth a mutation: each key, and in a list its first item (the
    rest are of the same kind); of a map of like items (``phases``), its first."""
    if isinstance(value, dict):
        items = list(value.items())
        if where and where[-1] == "phases":
            items = items[:1]
        for key, item in items:
            yield (*where, key)
            if key not in ALIKE:
                yield from spots(item, (*where, key))
    elif isinstance(value, list) and value:
        yield (*where, 0)
        yield from spots(value[0], (*where, 0))


def mutated(doc: dict[str, Any], where: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """``doc`` with ``value`` at ``where`` (``KeyError``: the key gone). Only the maps and
    lists on the way are copied: the rest is shared with ``doc``, which stays as it was (the
    copy is only written out)."""
    out = copy.copy(doc)
    node = out
    for key in where[:-1]:
        node[key] = copy.copy(node[key])
        node = node[key]
    if value is KeyError:
        if isinstance(node, dict):
            del node[where[-1]]
    else:
        node[where[-1]] = value
    return out


def test_every_field_of_the_wrong_type_is_one_line_or_read_by_every_reader(
    document: Path,
) -> None:
    doc = json.loads(document.read_text())
    # Each cell's curve cut to its first iterations (200 there, alike; only the first is
    # mutated, and no reader here draws the curve): a third of the text to write, read and
    # check for each of the thousand mutations.
    for cell in doc["cells"]:
        del cell["by_iteration"][5:]
    places = list(spots(doc))
    assert len(places) > 100
    refused = read = 0
    for where in places:
        for value in (*BAD, KeyError):
            document.write_text(json.dumps(mutated(doc, where, value)))
            try:
                got = read_sweep(document)
            except RecordError as exc:
                assert "\n" not in str(exc) and len(str(exc)) < 400, str(exc)
                refused += 1
                continue
            try:
                every_reader(got, document)
            except Exception as exc:  # the schema let through what a reader cannot take
                raise AssertionError(f"{where} = {value!r}: {exc!r}") from exc
            read += 1
    assert refused > 100 and read > 50


CASES: dict[str, Callable[[dict[str, Any]], None]] = {
    "a median that is a string": lambda d: d["cells"][0]["first_ms"].update(median="fast"),
    "a coverage that is a string": lambda d: d["cells"][0]["first_ms"].update(coverage="95%"),
    "processes that are a string": lambda d: d["cells"][0].update(processes="many"),
    "a ranking that is a string": lambda d: d.update(ranking="first"),
    "a schedule of one number": lambda d: d.update(schedule=[[0]]),
    "a schedule that is a string": lambda d: d.update(schedule="interleaved"),
    "warnings that are a number": lambda d: d.update(warnings=7),
    "a command that is a number": lambda d: d.update(command=7),
    "a NaN median": lambda d: d["cells"][0]["first_ms"].update(median=math.nan),
    "an infinite value": lambda d: d["cells"][0]["first_ms"]["values"].__setitem__(0, math.inf),
    "65 cells": lambda d: d.update(cells=d["cells"] * 33),
}


READERS = (["report"], ["compare"], ["export", "--format", "csv"], ["open"])


def said_in_one_line(r: Result, command: list[str], document: Path) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.code == 2, (command, r.stderr)
    assert len(lines) == 1 and "Traceback" not in r.stderr, (command, r.stderr)
    assert str(document) in lines[0]


@pytest.mark.parametrize("case", list(CASES))
def test_report_compare_export_and_open_say_what_is_wrong_in_one_line(
    case: str, document: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each command's main() here: a TUI or a child started fails the call.
    doc = json.loads(document.read_text())
    CASES[case](doc)
    document.write_text(json.dumps(doc))  # NaN and Infinity as Python's json writes them
    for command in READERS:
        said_in_one_line(main_here(capsys, *command, str(document)), command, document)


@pytest.mark.parametrize("command", READERS, ids=[c[0] for c in READERS])
def test_each_command_says_what_is_wrong_in_one_line_from_a_real_process(
    command: list[str], document: Path
) -> None:
    doc = json.loads(document.read_text())
    CASES["a median that is a string"](doc)
    document.write_text(json.dumps(doc))
    r = warmscope(*command, str(document), env={"TERM": "xterm-256color"}, timeout=60)
    said_in_one_line(r, command, document)


def test_nan_and_infinity_in_a_live_sweep_are_drawn_not_raised() -> None:
    """A document the TUI did not read from a file (a sweep it runs) can hold what no file
    may: the chart and the table draw around it."""
    doc = json.loads((SWEEP / "sweep.json").read_text())
    cell = doc["cells"][0]
    cell["first_ms"].update(median=math.nan, lo=-math.inf, hi=math.inf)
    cell["first_ms"]["values"] = [math.nan, math.inf, -math.inf, 1.0]
    cell["by_iteration"][0]["median"] = math.nan
    doc["ranking"][0]["median"] = math.inf
    every_reader(doc, SWEEP / "sweep.json")
    app = build_app(sweeps=[doc])

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, SweepScreen), timeout=20)
        await wait_for(pilot, lambda: doc["cells"][1]["label"] in screen_text(app), timeout=20)

    run(app, scenario, settled=False)


def test_no_escape_byte_in_any_export_of_a_sweep(
    document: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(document.read_text())
    doc["target"] = f"sample:{ESC}"
    doc["answer"] = ESC
    doc["warnings"] = [ESC]
    cell = doc["cells"][0]
    cell["label"] = f"eager{ESC}"
    cell["processes"][0].update(status=f"ok{ESC}", detail=ESC, warnings=[ESC])
    cell["processes"][0]["record"] = f"{cell['processes'][0]['record']}{ESC}"
    cell["processes"][0]["node"] = {"hostname": f"box{ESC}"}
    document.write_text(json.dumps(doc))
    outputs = []
    for fmt in ("csv", "json", "md"):
        out = tmp_path / f"export.{fmt}"
        r = main_here(capsys, "export", str(document), "--format", fmt, "-o", str(out))
        assert r.code == 0, r.stderr
        outputs.append(out.read_bytes())
        shown = main_here(capsys, "export", str(document), "--format", fmt)
        assert shown.code == 0, shown.stderr
        outputs.append(shown.stdout.encode())
    # And what a real process writes on its stdout, byte for byte.
    real = warmscope("export", str(document), "--format", "md")
    assert real.code == 0 and real.stdout.encode() == outputs[-1], real.stderr
    outputs.append(real.stdout.encode())
    report = tmp_path / "report.md"
    assert main_here(capsys, "report", str(document), "-o", str(report)).code == 0
    outputs.append(report.read_bytes())
    for data in outputs:
        text = data.decode()
        assert not any(ch in text for ch in ("\x1b", "\x07", "\x9b")), text[:300]
    rows = list(csv.reader(io.StringIO(outputs[0].decode())))
    assert rows[1][1].startswith("eager")


TUI_RSS_BOUND = 1536 << 20


def big_document(folder: Path, megabytes: float) -> Path:
    """The checked-in sweep grown to about ``megabytes``: as many cells as a sweep may have
    (64), each with thousands of processes naming the records there. The text is written
    once, by ``json.dumps``: how many processes fit is counted before (a process's text is
    its first three's, told apart by the digits of ``repeat``)."""
    doc = json.loads((folder / "sweep.json").read_text())
    cells = []
    for index in range(64):
        cell = copy.deepcopy(doc["cells"][index % 2])
        cell.update(index=index, label=f"cell {index}")
        cells.append(cell)
    doc["cells"] = cells
    doc["ranking"] = []
    firsts = [cell["processes"][:3] for cell in cells]
    for cell in cells:
        cell["processes"] = []
    limit = int(megabytes * 2**20)
    size = len(json.dumps(doc))
    # Process n of every cell: the text of its first n % 3 with "repeat": 0, one byte for the
    # 0 swapped for str(n)'s, and ", " before it but the first.
    widths = [sum(len(json.dumps({**first[k], "repeat": 0})) for first in firsts) for k in range(3)]
    repeat = 0
    while True:
        grown = widths[repeat % 3] + len(cells) * (len(str(repeat)) - 1 + (2 if repeat else 0))
        if size + grown > limit:
            break
        size += grown
        repeat += 1
    for cell, first in zip(cells, firsts, strict=True):
        cell["processes"] = [{**first[n % 3], "repeat": n} for n in range(max(1, repeat))]
    text = json.dumps(doc)
    assert len(text) == size <= limit
    path = folder / f"big-{megabytes:g}.json"
    path.write_text(text)
    return path


def high_water(proc: Any) -> int:
    """The most memory ``proc`` has held (the kernel's VmHWM), else what it holds now."""
    try:
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) << 10
    except OSError:
        pass
    return int(proc.memory_info().rss)


SWEEP_DRAWN = b"cell(s) \xc3\x97"
"""The sweep screen's head line (``sweep  TARGET · 64 cell(s) × 3 processes``)."""


def tui_peak_rss(document: Path, seconds: float = 60.0) -> tuple[int, bytes, int | None]:
    """``warmscope open DOCUMENT`` in a real pseudo-terminal: its peak RSS until its sweep
    screen is drawn (or it exits), the screen's bytes, and its exit status where it exited."""
    import time

    import psutil

    seen, peak = b"", 0
    with in_terminal("open", str(document)) as terminal:
        proc, master = terminal.proc, terminal.master
        os.set_blocking(master, False)
        watched = psutil.Process(proc.pid)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(BlockingIOError, OSError):
                seen += os.read(master, 1 << 16)
            try:
                peak = max(peak, high_water(watched))
            except psutil.Error:
                break
            if SWEEP_DRAWN in seen:
                time.sleep(1.0)  # what it holds once drawn
                peak = max(peak, high_water(watched))
                break
            time.sleep(0.05)
        for _ in range(40):  # q closes the sweep's screen, then quits
            if proc.poll() is not None:
                break
            with contextlib.suppress(OSError):
                os.write(master, b"q")
                os.read(master, 1 << 16)
            time.sleep(0.5)
        proc.wait(timeout=5)
        # What it wrote between the last read and its exit (a refusal is one line and an exit,
        # sooner than a poll): the terminal holds it until read, then says EIO.
        while True:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # BlockingIOError too: nothing more
                break
            if not chunk:
                break
            seen += chunk
    return peak, seen, proc.returncode


def test_a_large_sweep_document_opens_in_the_tui_within_its_memory_bound(
    tmp_path: Path,
) -> None:
    """16 MB here (``benchmarks/tui_sweep_document.py`` measures 64 MB)."""
    folder = tmp_path / "sweep"
    shutil.copytree(SWEEP, folder)
    document = big_document(folder, 16)
    peak, seen, code = tui_peak_rss(document)
    assert SWEEP_DRAWN in seen, seen[-2000:]
    assert code == 0
    assert peak < TUI_RSS_BOUND // 2, f"{peak >> 20} MiB"


def test_a_document_with_a_hundred_thousand_cells_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    doc = json.loads((SWEEP / "sweep.json").read_text())
    kept = ("label", "runs", "processes", "first_ms", "shapes")
    cell = {k: v for k, v in doc["cells"][0].items() if k in kept}
    cell["processes"] = []
    # The text json.dumps makes of 100,000 such cells, index last, put together from one.
    opening = json.dumps({**cell, "index": 0}).removesuffix("0}")
    cells = "[" + ", ".join(f"{opening}{n}}}" for n in range(100_000)) + "]"
    doc["cells"] = "\x00cells"
    text = json.dumps(doc).replace('"\\u0000cells"', cells)
    document = tmp_path / "huge.json"
    document.write_text(text)
    assert 16 << 20 < document.stat().st_size < 64 << 20
    peak, seen, code = tui_peak_rss(document)
    assert code == 2
    assert b"100000 cells" in seen and b"at most 64" in seen
    assert peak < TUI_RSS_BOUND
