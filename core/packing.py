"""A batch of iterations packed into one short JSON field, exact to the nanosecond.

A long run records millions of iterations; written as JSON lists of integers they cost about
19 bytes each. Packed, a batch is one ``iters`` line ``{"i0", "n", "s0", "z"}``: ``z`` is
base64 of zlib of three columns, the durations, the gaps (how long after the previous
iteration's end, or after ``s0`` for the first, each one started) and the shape indices
(absent when the shapes do not vary). Gaps, not starts: a start grows for the whole run, a
gap is a few hundred nanoseconds. Each column is stored as the narrowest signed integer type
that holds it, its bytes split into planes (every low byte, then every next byte...): the
high bytes of similar numbers are alike, and zlib takes runs of alike bytes almost for free.
Each line stays self-contained, so a torn last line still loses only its own batch.

Packing and unpacking run in C (``array``, byte slicing, ``zlib``, ``itertools``): no Python
object per iteration is kept, which is what lets a reader take ten million of them in seconds.
"""

from __future__ import annotations

import base64
import binascii
import sys
import zlib
from array import array
from itertools import accumulate, chain, islice
from operator import add, sub
from typing import Any

_TYPES = tuple(t for t in "bhiq")  # signed, 1, 2, 4 and 8 bytes
_WIDTH = {t: array(t).itemsize for t in _TYPES}
_LIMITS = [(t, -(1 << (8 * _WIDTH[t] - 1)), (1 << (8 * _WIDTH[t] - 1)) - 1) for t in _TYPES]
_NO_SHAPES = b"-"
_LEVEL = 6  # zlib's default: level 9 saves under 1% here and costs twice the time
_BIG_ENDIAN = sys.byteorder == "big"


def _narrowest(values: array[int]) -> str:
    lo, hi = (min(values), max(values)) if values else (0, 0)
    return next(t for t, a, b in _LIMITS if a <= lo and hi <= b)


def _planes(values: array[int]) -> bytes:
    """The column's typecode, then its bytes plane by plane (little-endian)."""
    code = _narrowest(values)
    col = array(code, values)
    if _BIG_ENDIAN:
        col.byteswap()
    raw = col.tobytes()
    width = _WIDTH[code]
    return code.encode() + b"".join(raw[k::width] for k in range(width))


def pack(
    first: int, ns: list[int], st: list[int], sh: list[int] | None = None
) -> dict[str, Any] | None:
    """The packed ``iters`` line of one batch, or ``None`` when it cannot be packed (a value
    that is not an integer, or out of 64-bit range): that batch is written as plain lists."""
    n = len(ns)
    if not n or len(st) != n or (sh is not None and len(sh) != n):
        return None
    try:
        durations = array("q", ns)
        starts = array("q", st)
        ends = map(add, starts[: n - 1], durations[: n - 1])
        gaps = array("q", chain([0], map(sub, islice(starts, 1, None), ends)))
        shapes = array("q", sh) if sh is not None else None
    except (TypeError, OverflowError):
        return None
    body = _planes(durations) + _planes(gaps) + (_planes(shapes) if shapes else _NO_SHAPES)
    z = base64.b64encode(zlib.compress(body, _LEVEL)).decode("ascii")
    return {"type": "iters", "i0": first, "n": n, "s0": starts[0], "z": z}


def _column(raw: bytes, pos: int, n: int) -> tuple[array[int], int]:
    code = chr(raw[pos])
    if code not in _WIDTH:
        raise ValueError("a packed batch with a column of unknown type")
    width = _WIDTH[code]
    end = pos + 1 + n * width
    if end > len(raw):
        raise ValueError("a packed batch shorter than its count")
    buf = bytearray(n * width)
    for k in range(width):
        buf[k::width] = raw[pos + 1 + k * n : pos + 1 + (k + 1) * n]
    col = array(code)
    col.frombytes(buf)
    if _BIG_ENDIAN:
        col.byteswap()
    return col, end


def unpack(line: dict[str, Any]) -> tuple[array[int], array[int], array[int] | None]:
    """A packed line's durations and starts in integer nanoseconds, and its shape indices
    (``None``: not recorded). Raises ``ValueError`` for a line that does not decode to its
    count, or whose shape indices are out of range."""
    n, s0 = line["n"], line["s0"]
    if not isinstance(n, int) or n < 1 or not isinstance(s0, int) or isinstance(s0, bool):
        raise ValueError("a packed batch needs a count 'n' and a start 's0'")
    try:
        packed = base64.b64decode(line["z"], validate=True)
        inflate = zlib.decompressobj()
        # 8 bytes a value, 3 columns and their type codes at most: a bomb stops there.
        raw = inflate.decompress(packed, 24 * n + 3)
    except (binascii.Error, zlib.error, TypeError) as exc:
        raise ValueError(f"a packed batch that does not decode ({exc})") from None
    if inflate.unconsumed_tail or not inflate.eof:
        raise ValueError("a packed batch longer than its count, or cut short")
    durations, pos = _column(raw, 0, n)
    gaps, pos = _column(raw, pos, n)
    shapes: array[int] | None = None
    if raw[pos : pos + 1] == _NO_SHAPES:
        pos += 1
    else:
        shapes, pos = _column(raw, pos, n)
    if pos != len(raw):
        raise ValueError("a packed batch longer than its count")
    if shapes is not None and (min(shapes) < -1 or max(shapes) >= 1 << 15):
        raise ValueError("a packed batch with a shape index out of range")
    # start[i] = start[i-1] + duration[i-1] + gap[i]; start[0] = s0 + gap[0]
    steps = chain([s0 + gaps[0]], map(add, islice(durations, n - 1), islice(gaps, 1, None)))
    try:
        starts = array("q", accumulate(steps))
    except OverflowError:
        raise ValueError("a packed batch whose starts overflow") from None
    return durations, starts, None if shapes is None else array("h", shapes)
