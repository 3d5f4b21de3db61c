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
import operator
import sys
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, chain, islice
from operator import add, sub
from typing import Any, NamedTuple, overload

_TYPES = tuple(t for t in "bhiq")  # signed, 1, 2, 4 and 8 bytes
_WIDTH = {t: array(t).itemsize for t in _TYPES}
_NO_SHAPES = b"-"
_LEVEL = 4  # level 6 (zlib's default) saves about 1% here and costs twice the time
_BIG_ENDIAN = sys.byteorder == "big"

MAX_BATCH = 1 << 21
"""The most iterations a packed batch may declare. The agent sends a batch every 50 ms and the
ring holds 65,536: two million is 24 ns an iteration. It bounds what one line inflates to."""

MAX_PER_BYTE = 1024
"""The most iterations a packed batch may declare per byte of its compressed columns. Deflate
compresses at most about 1032 to 1, and an iteration packs into at least a byte before that, so
no batch the agent wrote declares more; real timings cost about a byte an iteration compressed
(0.27 for a loop that varies by 3 ns; equal values, as a coarse clock gives, far less)."""

MAX_LATENCY_NS = 10**18
"""No clock gives a latency beyond this (about 32 years)."""


def _planes(values: array[int]) -> bytes:
    """A column of 64-bit integers (``array('q')``) as its narrowest typecode, then its bytes
    plane by plane (little-endian). A value fits a type ``w`` bytes wide when every byte above
    the ``w`` low ones extends the sign of the last of them: the planes tell, compared whole,
    with no Python number per value; and the low planes are then that type's bytes."""
    if _BIG_ENDIAN:
        values = array("q", values)
        values.byteswap()
    raw = values.tobytes()
    planes = [raw[k::8] for k in range(8)]
    for code in _TYPES:
        width = _WIDTH[code]
        sign = planes[width - 1].translate(_SIGN)
        if all(plane == sign for plane in planes[width:]):
            break
    return code.encode() + b"".join(planes[:width])


class Packed(NamedTuple):
    """A batch as ``pack_batch`` made it: its record line, and the columns that line decodes
    to. The process that packed it folds these (``unpack(line, packed)``) instead of decoding
    the line it has just encoded."""

    line: dict[str, Any]
    batch: Batch
    columns: tuple[array[int], array[int], array[int] | None]


def _int64(values: Sequence[int]) -> array[int]:
    return values if isinstance(values, array) and values.typecode == "q" else array("q", values)


_LANE_BIAS = bytes(7) + b"\x80"  # 2**63, one little-endian 64-bit lane
_TOP_BIT = bytes(b ^ 0x80 for b in range(256))
_BELOW_2_62 = bytes(range(0x40))  # top bytes of values in [0, 2**62)


def _gaps(starts: array[int], durations: array[int]) -> array[int]:
    """Each iteration's gap (its start less the previous one's end; 0 for the first).

    Where every start and duration lies in [0, 2**62) (what a clock gives), all the gaps are
    taken at once: each column read as one large integer of 64-bit lanes, ``starts[1:] +
    2**63 - (starts[:-1] + durations[:-1])`` leaves every lane in (0, 2**64), so no lane
    borrows from the next, and flipping each lane's top bit takes the bias off. Three
    additions of big integers in C, where one subtraction a value costs a Python number each.
    Anything else is subtracted value by value (and may overflow: ``OverflowError``)."""
    n = len(starts)
    raw_s, raw_d = starts.tobytes(), durations.tobytes()
    in_range = not (
        raw_s[7::8].translate(None, _BELOW_2_62) or raw_d[7::8].translate(None, _BELOW_2_62)
    )
    if n < 2 or _BIG_ENDIAN or not in_range:
        each_end = map(add, starts[: n - 1], durations[: n - 1])
        return array("q", chain([0], map(sub, islice(starts, 1, None), each_end)))
    size = 8 * (n - 1)
    ends = int.from_bytes(raw_s[:size], "little") + int.from_bytes(raw_d[:size], "little")
    later = int.from_bytes(raw_s[8:], "little") + int.from_bytes(_LANE_BIAS * (n - 1), "little")
    lanes = bytearray((later - ends).to_bytes(size, "little"))
    lanes[7::8] = lanes[7::8].translate(_TOP_BIT)
    gaps = array("q", [0])
    gaps.frombytes(lanes)
    return gaps


def pack_batch(
    first: int, ns: Sequence[int], st: Sequence[int], sh: Sequence[int] | None = None
) -> Packed | None:
    """One batch packed: its ``iters`` line and its columns, or ``None`` when it cannot be
    packed (a value that is not an integer, or out of 64-bit range): that batch is written
    as plain lists."""
    n = len(ns)
    if not n or len(st) != n or (sh is not None and len(sh) != n):
        return None
    try:
        durations = _int64(ns)
        starts = _int64(st)
        gaps = _gaps(starts, durations)
        shapes = _int64(sh) if sh is not None else None
    except (TypeError, OverflowError):
        return None
    body = _planes(durations) + _planes(gaps) + (_planes(shapes) if shapes else _NO_SHAPES)
    packed = zlib.compress(body, _LEVEL)
    line = {"type": "iters", "i0": first, "n": n, "s0": starts[0]}
    line["z"] = base64.b64encode(packed).decode("ascii")
    batch = Batch(n, starts[0], packed)
    return Packed(line, batch, batch.parse(body))


def pack(
    first: int, ns: Sequence[int], st: Sequence[int], sh: Sequence[int] | None = None
) -> dict[str, Any] | None:
    """The packed ``iters`` line of one batch (see ``pack_batch``), or ``None``."""
    packed = pack_batch(first, ns, st, sh)
    return packed.line if packed is not None else None


def pack_columns(columns: Sequence[Sequence[int]]) -> str | None:
    """Integer columns of one length packed as a batch's are (planes, zlib, base64); ``None``
    where a value is not an integer or beyond 64 bits."""
    try:
        body = b"".join(_planes(_int64(col)) for col in columns)
    except (TypeError, OverflowError):
        return None
    return base64.b64encode(zlib.compress(body, _LEVEL)).decode("ascii")


def unpack_columns(z: Any, n: int, k: int) -> list[array[int]]:
    """``k`` columns of ``n`` integers from ``pack_columns``'s text. ``ValueError`` for a text
    that does not decode to that, a count no batch holds, or one its bytes cannot hold."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError("packed columns need a count 'n'")
    _check_count(n, z)
    try:
        raw_z = base64.b64decode(z, validate=True)
        inflate = zlib.decompressobj()
        raw = inflate.decompress(raw_z, 8 * n * k + k)  # a bomb stops at what k columns hold
    except (binascii.Error, TypeError, zlib.error) as exc:
        raise ValueError(f"packed columns that do not decode ({exc})") from None
    if inflate.unconsumed_tail or not inflate.eof:
        raise ValueError("packed columns longer than their count, or cut short")
    out, pos = [], 0
    for _ in range(k):
        if pos >= len(raw):
            raise ValueError("packed columns shorter than their count")
        col, pos = _column(raw, pos, n)
        out.append(col)
    if pos != len(raw):
        raise ValueError("packed columns longer than their count")
    return out


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


_SIGN = bytes(0 if b < 0x80 else 0xFF for b in range(256))
"""A top byte to the byte that extends its sign (``bytes.translate``)."""

_NON_NEGATIVE_TOPS = bytes(range(0x80))


def has_negative(col: array[int]) -> bool:
    """Whether a column of signed integers holds a negative one: its top bytes, compared in C
    (``min`` makes a Python number of every value)."""
    width = col.itemsize
    tops = col.tobytes()[0 if _BIG_ENDIAN else width - 1 :: width]
    return bool(tops.translate(None, _NON_NEGATIVE_TOPS))


def has_beyond(col: array[int], limit: int) -> bool:
    """Whether a column holds a value above ``limit``; only a column wide enough is scanned."""
    return limit < (1 << (8 * col.itemsize - 1)) - 1 and max(col, default=0) > limit


def widen(col: array[int], code: str = "q") -> array[int]:
    """A column of signed integers as an array of typecode ``code`` (at least as wide),
    widened byte plane by byte plane in C: no Python object per value, as ``array(code, col)``
    would make."""
    width, wide = col.itemsize, array(code).itemsize
    if col.typecode == code:
        return col
    if wide < width:
        raise ValueError(f"cannot narrow {col.typecode!r} to {code!r}")
    if _BIG_ENDIAN:
        col = array(col.typecode, col)
        col.byteswap()
    raw = col.tobytes()
    sign = raw[width - 1 :: width].translate(_SIGN)
    buf = bytearray(len(col) * wide)
    for k in range(wide):
        buf[k::wide] = raw[k::width] if k < width else sign
    out = array(code)
    out.frombytes(buf)
    if _BIG_ENDIAN:
        out.byteswap()
    return out


class Batch:
    """One packed batch as read: its durations and shape indices at once, its starts on demand
    (a report never reads them; decoding them costs more than the rest of the batch)."""

    __slots__ = ("_packed", "n", "s0")

    def __init__(self, n: int, s0: int, packed: bytes) -> None:
        self.n, self.s0, self._packed = n, s0, packed

    def columns(self) -> tuple[array[int], array[int], array[int] | None]:
        """Durations, gaps and shape indices (``None``: not recorded)."""
        inflate = zlib.decompressobj()
        try:
            # 8 bytes a value, 3 columns and their type codes at most: a bomb stops there.
            raw = inflate.decompress(self._packed, 24 * self.n + 3)
        except zlib.error as exc:
            raise ValueError(f"a packed batch that does not decode ({exc})") from None
        if inflate.unconsumed_tail or not inflate.eof:
            raise ValueError("a packed batch longer than its count, or cut short")
        return self.parse(raw)

    def parse(self, raw: bytes) -> tuple[array[int], array[int], array[int] | None]:
        """The columns of the batch's inflated bytes."""
        durations, pos = _column(raw, 0, self.n)
        gaps, pos = _column(raw, pos, self.n)
        shapes: array[int] | None = None
        if raw[pos : pos + 1] == _NO_SHAPES:
            pos += 1
        else:
            shapes, pos = _column(raw, pos, self.n)
        if pos != len(raw):
            raise ValueError("a packed batch longer than its count")
        return durations, gaps, shapes

    def starts(self) -> array[int]:
        """Each iteration's start, in nanoseconds from the loop's start."""
        durations, gaps, _ = self.columns()
        # start[i] = start[i-1] + duration[i-1] + gap[i]; start[0] = s0 + gap[0]
        n = self.n
        steps = chain(
            [self.s0 + gaps[0]], map(add, islice(durations, n - 1), islice(gaps, 1, None))
        )
        try:
            return array("q", accumulate(steps))
        except OverflowError:
            raise ValueError("a packed batch whose starts overflow") from None

    def _starts_fit(self, durations: array[int], gaps: array[int]) -> bool:
        """Whether every start surely fits in 64 bits, from the columns' widths alone."""
        reach = self.n * ((1 << (8 * durations.itemsize - 1)) + (1 << (8 * gaps.itemsize - 1)))
        return self.s0 - reach >= -(1 << 63) and self.s0 + reach < 1 << 63


def unpack(
    line: dict[str, Any], packed: Packed | None = None
) -> tuple[Batch, array[int], array[int] | None]:
    """A packed line as its ``Batch``, its durations in integer nanoseconds (in their stored
    width: ``widen`` them) and its shape indices (``None``: not recorded). Raises
    ``ValueError`` for a line that does not decode to its count, whose shape indices are out
    of range, or whose starts overflow. ``packed``: what ``pack_batch`` made this line from,
    in this process: its columns are taken as the line would decode (and checked alike)."""
    n, s0 = line["n"], line["s0"]
    if not isinstance(n, int) or n < 1 or not isinstance(s0, int) or isinstance(s0, bool):
        raise ValueError("a packed batch needs a count 'n' and a start 's0'")
    if packed is not None:
        batch = packed.batch
        durations, gaps, shapes = packed.columns
    else:
        _check_count(n, line["z"])
        try:
            batch = Batch(n, s0, base64.b64decode(line["z"], validate=True))
        except (binascii.Error, TypeError) as exc:
            raise ValueError(f"a packed batch that does not decode ({exc})") from None
        durations, gaps, shapes = batch.columns()
    if shapes is not None and (min(shapes) < -1 or max(shapes) >= 1 << 15):
        raise ValueError("a packed batch with a shape index out of range")
    if not batch._starts_fit(durations, gaps):
        batch.starts()  # only wide columns can overflow: those are checked now, not when read
    return batch, durations, None if shapes is None else array("h", shapes)


def _check_count(n: int, z: Any) -> None:
    """Refuses, before inflating anything, a count no batch holds or its bytes cannot hold."""
    if n > MAX_BATCH:
        raise ValueError(f"a packed batch of {n} iterations, beyond the {MAX_BATCH} a batch holds")
    size = len(z) * 3 // 4 if isinstance(z, str) else 0  # base64: 3 bytes per 4 characters
    if n > MAX_PER_BYTE * size:
        raise ValueError(
            f"a packed batch that declares {n} iterations in {size} bytes: "
            "more than timings can pack into"
        )


_MS = (1e6).__rtruediv__
"""Integer nanoseconds to float milliseconds, as ``v / 1e6``, mapped in C."""


def to_ms(ns: Iterable[int]) -> array[float]:
    return array("d", map(_MS, ns))


class MsView(Sequence[float]):
    """Integer nanoseconds read as milliseconds, one at a time: a view that draws a long run's
    visible rows without converting ten million latencies first. ``ns`` is the run's own
    array (it only grows; the view reads its current length)."""

    def __init__(self, ns: array[int]) -> None:
        self.ns = ns

    def __len__(self) -> int:
        return len(self.ns)

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[float]: ...

    def __getitem__(self, index: int | slice) -> float | Sequence[float]:
        if isinstance(index, slice):
            return to_ms(self.ns[index])
        return self.ns[index] / 1e6


class Starts(Sequence[float]):
    """Each iteration's start (ms from the loop's start), as ``RunData.start_ms``: batches added
    packed stay packed until a start in them is read. Reading one start decodes its batch
    only; reading them all (an export) decodes batch by batch, keeping none."""

    def __init__(self, parts: Iterable[array[float] | Batch] = ()) -> None:
        self._parts: list[array[float] | Batch] = []
        self._ends: list[int] = []  # the count of starts up to the end of each part
        for part in parts:
            self._add(part)

    def _add(self, part: array[float] | Batch) -> None:
        n = part.n if isinstance(part, Batch) else len(part)
        if n:
            self._parts.append(part)
            self._ends.append(len(self) + n)

    def extend(self, values: Iterable[float] | Batch) -> None:
        self._add(values if isinstance(values, Batch) else array("d", values))

    def copy(self) -> Starts:
        """A copy that later batches do not change (its parts are never changed in place)."""
        return Starts(self._parts)

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def _part(self, k: int) -> array[float]:
        part = self._parts[k]
        if isinstance(part, Batch):
            part = self._parts[k] = to_ms(part.starts())  # read once: kept decoded
        return part

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> array[float]: ...

    def __getitem__(self, index: int | slice) -> float | array[float]:
        n = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if step != 1:
                return array("d", (self[i] for i in range(start, stop, step)))
            out = array("d")
            k = bisect_right(self._ends, start)
            while start < stop:
                begin, end = (self._ends[k - 1] if k else 0), self._ends[k]
                out.extend(self._decoded(k)[start - begin : min(stop, end) - begin])
                start, k = end, k + 1
            return out
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("start index out of range")
        k = bisect_right(self._ends, i)
        return self._part(k)[i - (self._ends[k - 1] if k else 0)]

    def _decoded(self, k: int) -> array[float]:
        part = self._parts[k]
        return to_ms(part.starts()) if isinstance(part, Batch) else part

    def __iter__(self) -> Iterator[float]:
        for k in range(len(self._parts)):
            yield from self._decoded(k)

    def tolist(self) -> list[float]:
        return list(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence | array):
            return NotImplemented
        return len(self) == len(other) and all(map(operator.eq, self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Starts({len(self)} starts in {len(self._parts)} batches)"
