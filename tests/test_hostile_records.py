"""Records made to hurt a reader: ``warmscope report`` stops on each with one line naming the
file and its line, exit 2, fast, within a memory cap a regression would run into.

Real files written here (sparse ones by ``os.truncate``), the real CLI in a child process whose
address space is capped, so a reader that believes what a file declares fails instead of
eating the machine; latencies no clock gives (values, not sizes) through ``main()`` in-process.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import main_here
from tests.conftest import Result, warmscope
from warmscope.core.data import packing
from warmscope.core.data.fold import iterations_line
from warmscope.core.data.schema import FORMAT, VERSION

MEMORY_CAP = 1 << 30
FAST_S = 5.0  # well under a second when alone; the margin is for a loaded machine
HEADER = {"type": "header", "format": FORMAT, "version": VERSION, "settings": {}}
END = {"type": "end", "status": "ok"}


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def report(path: Path) -> tuple[Result, float]:
    start = time.monotonic()
    result = warmscope("report", str(path), preexec_fn=_capped, timeout=60)
    return result, time.monotonic() - start


def write(path: Path, *lines: dict[str, Any] | str) -> Path:
    with path.open("w") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return path


ZEROS = bytes(1 << 20)


def _full_flushed(data: bytes) -> bytes:
    """``data`` deflated (level 9, raw) up to a full flush: it ends on a byte and carries
    nothing over, so copies of it follow each other in one stream."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    return deflate.compress(data) + deflate.flush(zlib.Z_FULL_FLUSH)


def zeros_stream(compressed_bytes: int) -> bytes:
    """A zlib stream of zeros (after a column type code) about ``compressed_bytes`` long: it
    inflates about a thousand times. One MiB of zeros is deflated once and its bytes repeated
    (a few hundred MiB are never deflated here); the stream has zlib's header and checksum."""
    first, mib = _full_flushed(b"q" + ZEROS), _full_flushed(ZEROS)
    copies = max(0, -(-(compressed_bytes - len(first)) // len(mib)))
    check = zlib.adler32(b"q" + ZEROS)
    for _ in range(copies):
        check = zlib.adler32(ZEROS, check)
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty last block
    z = b"\x78\xda" + first + mib * copies + end + check.to_bytes(4, "big")
    inflate = zlib.decompressobj()
    assert inflate.decompress(z, 3 << 20) == b"q" + bytes((3 << 20) - 1), "a real zlib stream"
    return z


def packed_line(n: int, z: bytes) -> dict[str, Any]:
    return {"type": "iters", "i0": 0, "n": n, "s0": 0, "z": base64.b64encode(z).decode()}


def assert_refused(path: Path, line: int, why: str) -> None:
    result, took = report(path)
    assert_one_line(result, path, line, why, took)


def assert_one_line(result: Result, path: Path, line: int, why: str, took: float) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.code == 2, result.stderr[-2000:]
    assert len(lines) == 1, result.stderr[-2000:]
    assert f"{path}:{line}:" in lines[0] and why in lines[0]
    assert took < FAST_S, f"{took:.1f} s"


def test_a_good_record_reads_under_the_same_cap(tmp_path: Path) -> None:
    """The cap itself leaves room for a real report: the refusals below are the reader's."""
    ns = [1_000_000 + (k * 7919) % 20_000 for k in range(20_000)]
    path = write(
        tmp_path / "good.jsonl",
        HEADER,
        iterations_line(0, ns, [k * 1_100_000 for k in range(len(ns))]),
        END,
    )
    result, _ = report(path)
    assert result.code == 0, result.stderr[-2000:]
    assert "20,000" in result.stdout or "20000" in result.stdout


def test_a_batch_declaring_more_than_a_batch_holds(tmp_path: Path) -> None:
    """0.6 MB declaring 2.5e8 iterations that zlib would inflate to 24 bytes each."""
    z = zeros_stream(450_000)
    path = write(tmp_path / "bomb.jsonl", HEADER, packed_line(250_000_000, z), END)
    assert 0.5e6 < path.stat().st_size < 0.8e6
    assert_refused(path, 2, "beyond the")


def test_a_batch_declaring_more_than_its_bytes_can_hold(tmp_path: Path) -> None:
    z = zlib.compress(b"q" + bytes(200_000), 9)  # a couple of hundred bytes
    n = packing.MAX_BATCH
    assert n > packing.MAX_PER_BYTE * len(z)
    path = write(tmp_path / "dense.jsonl", HEADER, packed_line(n, z), END)
    assert_refused(path, 2, "more than timings can pack into")


def test_a_batch_that_inflates_past_its_count_stops_there(tmp_path: Path) -> None:
    """A count its bytes could hold, with a stream that inflates far beyond it."""
    z = zeros_stream(200_000)  # about 200 MB of zeros
    n = packing.MAX_BATCH
    path = write(tmp_path / "long.jsonl", HEADER, packed_line(n, z), END)
    assert_refused(path, 2, "longer than its count")


def test_a_flood_of_nuls_after_the_header(tmp_path: Path) -> None:
    """A real header, then 10 GB of NULs (sparse: a few KB on disk)."""
    path = write(tmp_path / "nuls.jsonl", HEADER)
    os.truncate(path, path.stat().st_size + (10 << 30))
    assert_refused(path, 2, "a line longer than")


def test_a_huge_document_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "nuls.json"
    path.write_text('{"format": "warmscope-run", ')
    os.truncate(path, 10 << 30)
    result, took = report(path)
    assert result.code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert str(path) in result.stderr and "read its record instead" in result.stderr
    assert took < FAST_S


@pytest.mark.parametrize(
    ("case", "line", "why"),
    [
        ("overflowing", '{"type":"iters","i0":0,"ms":[1.0,1.3e154],"start_ms":[0,2]}', "beyond"),
        ("negative", '{"type":"iters","i0":0,"ms":[1.0,-0.5],"start_ms":[0,2]}', "negative"),
        ("nan", '{"type":"iters","i0":0,"ms":[1.0,NaN],"start_ms":[0,2]}', "not a finite"),
        ("infinite", '{"type":"iters","i0":0,"ms":[Infinity],"start_ms":[0]}', "not a finite"),
        ("absurd", '{"type":"iters","i0":0,"ms":[1e13],"start_ms":[0]}', "beyond"),
        ("negative ns", '{"type":"iters","i0":0,"ns":[5,-5],"st":[0,9]}', "negative"),
        ("absurd ns", '{"type":"iters","i0":0,"ns":[2000000000000000000],"st":[0]}', "beyond"),
        ("negative packed", json.dumps(iterations_line(0, [5, -5], [0, 9])), "negative"),
        ("absurd packed", json.dumps(iterations_line(0, [2 * 10**18], [0])), "beyond"),
    ],
)
def test_latencies_no_clock_gives_are_refused(
    case: str, line: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Values, not sizes: nothing here could eat memory, so report's main() runs in-process.
    path = write(tmp_path / "r.jsonl", HEADER, line, END)
    start = time.monotonic()
    result = main_here(capsys, "report", str(path))
    assert_one_line(result, path, 2, why, time.monotonic() - start)


def test_a_sparse_sweep_document_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A 4 GB sweep.json (sparse: a few bytes on disk) that claims to be a sweep document."""
    path = tmp_path / "sweep.json"
    path.write_text('{"format": "warmscope-sweep", "version": 1, "cells": [')
    os.truncate(path, 4 << 30)
    for command in ("compare", "report"):
        start = time.monotonic()
        result = warmscope(command, str(path), preexec_fn=_capped, timeout=60)
        lines = result.stderr.strip().splitlines()
        assert result.code == 2 and len(lines) == 1, result.stderr[-2000:]
        assert "more than a sweep document's" in lines[0]
        assert time.monotonic() - start < FAST_S
