"""The agent-to-parent protocol: one JSON object per line, on a private descriptor.

Standard library only: the agent loads this file by path under any interpreter.

Messages (key ``t``). The session turns each into a record line (``fold.record_line``); those
lines, each kind with its check and its fold, are declared once in ``schema.KINDS``, where
``from_agent`` marks the messages recorded as they come.

- ``hello``: ``v`` (protocol version), ``pid``.
- ``env``: versions and hardware as the child sees them.
- ``phase_start`` / ``phase``: a setup phase began / ended (``name``, ``ms``).
- ``iters``: a batch of iterations: ``i0`` (index of the first), ``ns`` (durations),
  ``st`` (start offsets from the loop's start), all integer nanoseconds; ``sh`` (each
  iteration's index into the ``shapes`` table) when the shapes vary. Each column is a string:
  base64 of little-endian 64-bit integers (``encode_iters``), which both sides convert whole
  in C, where a JSON list costs a Python number per iteration on each side. (A plain JSON list
  of integers, protocol 1's form, is still read.)
- ``device``: the device side of a batch, on CUDA (sent after its ``iters``): ``i0``, ``dv``
  (each call's device time: CUDA events recorded around it on the current stream, ns; -1
  where none was taken, as for a profiled call) and ``ln`` (how long forward took to return,
  the host having launched its work, ns), columns as in ``iters``.
- ``reads``: what a batch read from storage, sent after its ``iters`` where it read any:
  ``i0`` and ``n`` (the batch), ``bytes`` (read from disk: page-cache misses, a file or a
  library read as it is first used) and ``majflt`` (major page faults), the process's own
  counters from the end of the batch before to the end of this one.
- ``waits``: how long the child's threads waited for a core (run-queue delay;
  ``core/child/cpu_waits.py``), sent with a batch where it took readings: per reading, ``it``
  (the call it ended after), ``since`` (the first call it covers), ``ns`` (the delay of the
  thread that calls the model), ``all`` (the other threads' delay, summed) and ``cs`` (the
  process's involuntary context switches), as lists of integers.
- ``inputs``: what the model is given (``source``: ``spec``, ``file`` or ``target``;
  ``inputs``: ``float32[1,300,40]``, ``attention_mask=int64[1,128]``).
- ``shapes``: the table of shapes of a run whose ``--dim`` varies: ``keys`` (``T=300``) and
  ``dims`` (``{"T": 300}``), indexed by ``sh``.
- ``opening``: the run's first calls replayed warm (``--replay-opening``): ``pause_ms`` (the
  pause before the run's first call, slept before each replay), ``shapes`` (each call's shape
  index, as served), ``ms`` (a list of the replayed calls' latencies per replay).
- ``idle_probe``: ``results`` (``[{"idle_s", "ms": [...]}]``), ``shape`` (the key it used).
- ``memory``: the child's peak ``peak_rss_mb`` and, on CUDA, ``cuda_max_allocated_mb``.
- ``event``: ``iteration`` or ``phase``, ``kind``, ``title``, ``text``, optional ``ms``.
- ``busy``: the current iteration has been running for ``ms`` (sent only while it is long),
  with ``activity`` (e.g. the compile in progress).
- ``profile``: a profiled iteration's operator table and trace path (``iteration``, …).
- ``graphs``: a TorchScript module's graphs as loaded and as run warm, by name.
- ``error``: ``where``, ``iteration``, ``usage`` (a bad target or input rather than a failing
  model), ``exception`` (its class name), ``message``, ``traceback``.
- ``done``: ``status`` (``ok`` | ``stopped`` | ``failed``), ``iterations``.

On fd 2 (the child's stderr) the agent writes marker lines among what the model prints:
``phase NAME`` and ``loop start`` (the lines after it were printed in that phase, or in the
loop), ``it N`` before the first Python-level write of iteration N (the lines after it were
printed in N), and, while some log capture is on, ``done N`` after an iteration N that wrote to
fd 2 (the lines since the last marker were printed in N). Lines of the loop still without a
marker belong to the iteration the shared counter (core/child/ring.py) names once it is proven.
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
from array import array
from collections.abc import Sequence
from typing import Any

VERSION = 2

MESSAGES = (
    "hello",
    "env",
    "phase_start",
    "phase",
    "inputs",
    "shapes",
    "iters",
    "device",
    "reads",
    "waits",
    "opening",
    "idle_probe",
    "memory",
    "event",
    "busy",
    "profile",
    "graphs",
    "error",
    "done",
)
"""Every message an agent sends (``t``), the Python agent's and the C++ agent's alike
(``tests/test_message_names.py`` reads both for the names they write)."""
MOMENT_ONLY = ("hello", "phase_start", "busy", "done")
"""The messages that describe the moment and are not recorded; each of the others is the
record line kind of its name (``schema.KINDS``)."""

MARKER = b"\x1e@ws "
"""Marker lines on stderr start ``MARKER + SECRET + b" "``: ``… b"done 12\\n"``, ``… b"phase load\\n"``.
The secret is the run's own (``marker_prefix``), handed to the agent in its config on stdin,
not in its environment: a line the model writes cannot pass for a marker."""


def marker_prefix(secret: str) -> bytes:
    """What starts every marker line of the run whose secret is ``secret``."""
    return MARKER + secret.encode("ascii") + b" "


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), default=str).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    message = json.loads(line)
    if not isinstance(message, dict) or "t" not in message:
        raise ValueError(f"not a protocol message: {line[:80]!r}")
    return message


def _column(values: list[int]) -> bytes:
    col = array("q", values)
    if sys.byteorder == "big":
        col.byteswap()
    return binascii.b2a_base64(col, newline=False)


def encode_iters(first: int, ns: list[int], st: list[int], sh: list[int] | None) -> bytes:
    """The ``iters`` line of a batch, written directly: base64 needs no JSON escaping."""
    shapes = b',"sh":"%s"' % _column(sh) if sh is not None else b""
    return b'{"t":"iters","i0":%d,"ns":"%s","st":"%s"%s}\n' % (
        first,
        _column(ns),
        _column(st),
        shapes,
    )


def encode_device(first: int, dv: list[int], ln: list[int]) -> bytes:
    """The ``device`` line of a batch, written directly like ``encode_iters``."""
    return b'{"t":"device","i0":%d,"dv":"%s","ln":"%s"}\n' % (first, _column(dv), _column(ln))


def encode_reads(first: int, count: int, read_bytes: int, major_faults: int) -> bytes:
    """The ``reads`` line of a batch of ``count`` iterations from ``first``."""
    return b'{"t":"reads","i0":%d,"n":%d,"bytes":%d,"majflt":%d}\n' % (
        first,
        count,
        read_bytes,
        major_faults,
    )


def encode_waits(
    since: list[int], it: list[int], ns: list[int], others: list[int], cs: list[int]
) -> bytes:
    """The ``waits`` line of a batch: a few readings (at most one a millisecond)."""
    return encode({"t": "waits", "since": since, "it": it, "ns": ns, "all": others, "cs": cs})


def device_columns(message: dict[str, Any]) -> tuple[Sequence[int], Sequence[int]]:
    """Device times and launch times of a ``device`` message."""
    return _ints(message["dv"]), _ints(message["ln"])


def _from_base64(text: str) -> bytes:
    """Strict base64: anything else is refused, not skipped (``validate`` checks by regular
    expression, several times slower than the decoding itself)."""
    if sys.version_info >= (3, 11):
        return binascii.a2b_base64(text, strict_mode=True)
    return base64.b64decode(text, validate=True)


def _ints(value: Any) -> Sequence[int]:
    """A column of an ``iters`` message: a 64-bit ``array`` from its base64 form; a plain
    list (protocol 1) as it is."""
    if not isinstance(value, str):
        return value
    return int_column(value)


def int_column(text: str) -> array[int]:
    """A column of 64-bit integers from its base64 form (little-endian, strict): an agent's
    ``iters`` and ``device`` columns, a watched program's ``calls``."""
    raw = _from_base64(text)
    if len(raw) % 8:
        raise ValueError("an iteration column with a torn 64-bit value")
    col = array("q")
    col.frombytes(raw)
    if sys.byteorder == "big":
        col.byteswap()
    return col


def iteration_columns(
    message: dict[str, Any],
) -> tuple[Sequence[int], Sequence[int], Sequence[int] | None]:
    """Durations, starts and shape indices (``None``: not sent) of an ``iters`` message."""
    sh = message.get("sh")
    return _ints(message["ns"]), _ints(message["st"]), None if sh is None else _ints(sh)


def parse_marker(line: bytes, prefix: bytes = MARKER) -> tuple[str, str] | None:
    """``(kind, value)`` for a marker line (``("it", "12")``), ``None`` for any other line.
    ``prefix``: what starts a marker line."""
    if not line.startswith(prefix):
        return None
    kind, _, value = line[len(prefix) :].strip().decode(errors="replace").partition(" ")
    return kind, value
