"""Where a message becomes data: the one fold of record lines into ``RunData``.

A live run and a replayed record go through the same function. The session turns each
protocol message from the agent into the record line it writes (``record_line``) and applies
that very line here (``apply_line``); ``reading.read_run`` applies the lines it reads. So a
record read back holds the same ``RunData`` the session held when the run ended. (An ``iters``
line comes with the columns it was packed from, ``record_entry``: the session folds those, the
very values the line decodes to, rather than decoding what it has just encoded.)

The kinds of record line, each with its check and its fold, are declared once, in ``schema``
(``KINDS``); ``apply_line`` is the dispatch over them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from warmscope.core.child import protocol
from warmscope.core.data import packing, schema
from warmscope.core.data.run import Event
from warmscope.core.data.schema import KINDS, apply_line, check_line, mode_from_settings

__all__ = [
    "apply_line",
    "check_line",
    "device_line",
    "event_line",
    "iterations_entry",
    "iterations_line",
    "mode_from_settings",
    "record_entry",
    "record_line",
]

EVENT_FIELDS = tuple(key for key, *_ in schema.EVENT_FIELDS if key != "data")
"""Event fields by name; any other field of an event message travels in its ``data``."""


def record_entry(
    message: dict[str, Any], elapsed: float
) -> tuple[dict[str, Any] | None, packing.Packed | None]:
    """``record_line``, with the ``Packed`` batch an ``iters`` line was made from: the session
    hands it to ``apply_line`` with that line, which then folds its columns instead of decoding
    the line again."""
    if message["t"] == "iters":
        ns, st, sh = protocol.iteration_columns(message)
        return iterations_entry(message["i0"], ns, st, sh)
    if message["t"] == "device":
        dv, ln = protocol.device_columns(message)
        return device_line(message["i0"], dv, ln), None
    return record_line(message, elapsed), None


def record_line(message: dict[str, Any], elapsed: float) -> dict[str, Any] | None:
    """The record line for one protocol message (its ``t`` removed), or ``None`` for the
    messages that only describe the moment (``protocol.MOMENT_ONLY``).

    ``elapsed``: seconds since the run started, by the parent's clock, stamped on events.
    """
    kind = message["t"]
    if kind in ("iters", "device"):
        return record_entry(message, elapsed)[0]
    body = {k: v for k, v in message.items() if k != "t"}
    if kind == "event":
        extra = {k: v for k, v in body.items() if k not in EVENT_FIELDS}
        event = Event.from_json({**body, "data": extra})
        event.t = elapsed
        return event_line(event)
    if kind == "env":
        return {"type": "env", "env": body}
    line_kind = KINDS.get(kind)
    if line_kind is not None and line_kind.from_agent:
        return {"type": kind, **body}
    return None


def device_line(first: int, dv: Sequence[int], ln: Sequence[int]) -> dict[str, Any]:
    """The device side of a batch as its record line: packed like an ``iters`` line, or
    plain lists where a value does not pack (the reader then says what is wrong)."""
    if len(dv) == len(ln) and dv:
        z = packing.pack_columns([dv, ln])
        if z is not None:
            return {"type": "device", "i0": first, "n": len(dv), "z": z}
    return {"type": "device", "i0": first, "dv": list(dv), "ln": list(ln)}


def event_line(event: Event) -> dict[str, Any]:
    return {"type": "event", **event.to_json()}


def iterations_line(
    first: int, ns: Sequence[int], st: Sequence[int], sh: Sequence[int] | None = None
) -> dict[str, Any]:
    """A batch of iterations as its record line: packed, or as plain lists where a value does
    not fit the packing (not an integer, beyond 64 bits; the reader then says what is wrong)."""
    return iterations_entry(first, ns, st, sh)[0]


def iterations_entry(
    first: int, ns: Sequence[int], st: Sequence[int], sh: Sequence[int] | None = None
) -> tuple[dict[str, Any], packing.Packed | None]:
    """``iterations_line``, with its ``Packed`` batch where it packed."""
    packed = packing.pack_batch(first, ns, st, sh)
    if packed is not None:
        return packed.line, packed
    line = {"type": "iters", "i0": first, "ns": list(ns), "st": list(st)}
    if sh is not None:
        line["sh"] = list(sh)
    return line, None
