"""Where a message becomes data: the one fold of record lines into ``RunData``.

A live run and a replayed record go through the same function. The session turns each
protocol message from the agent into the record line it writes (``record_line``) and applies
that very line here (``apply_line``); ``record.read_run`` applies the lines it reads. So a
record read back holds the same ``RunData`` the session held when the run ended. (An ``iters``
line comes with the columns it was packed from, ``record_entry``: the session folds those, the
very values the line decodes to, rather than decoding what it has just encoded.)

Every string that comes from the child, the model or a file is made safe for a terminal here,
once (``safe_text``): no view downstream sees an escape sequence. The record keeps the raw text
(JSON escapes control characters), and the side file every raw byte.

Record lines (``type``): ``header`` (settings, target, mode, command, run id), ``spawned`` (the
agent's pid), ``env``, ``phase``, ``inputs`` (what the model is given), ``shapes`` (the table of
shape keys when ``--dim`` varies them), ``iters`` (a batch of iterations, packed by
``packing``; records before version 2 hold plain lists in integer nanoseconds: ``ns``
durations, ``st`` starts from the loop's start, ``sh`` each iteration's index into the shapes
table), ``event``,
``sample``, ``profile``, ``graphs``, ``idle_probe``, ``memory``, ``error``, ``end``.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from warmscope.core import outcome, packing, protocol
from warmscope.core.run import Event, RunData
from warmscope.core.safe_text import clean, clean_json, clean_line
from warmscope.core.settings import RunSettings

EVENT_FIELDS = ("kind", "title", "text", "iteration", "phase", "ms", "t")
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
    return record_line(message, elapsed), None


def record_line(message: dict[str, Any], elapsed: float) -> dict[str, Any] | None:
    """The record line for one protocol message (its ``t`` removed), or ``None`` for the
    messages that only describe the moment (``hello``, ``phase_start``, ``busy``, ``done``).

    ``elapsed``: seconds since the run started, by the parent's clock, stamped on events.
    """
    kind = message["t"]
    if kind == "iters":
        return record_entry(message, elapsed)[0]
    body = {k: v for k, v in message.items() if k != "t"}
    if kind == "event":
        extra = {k: v for k, v in body.items() if k not in EVENT_FIELDS}
        event = Event.from_json({**body, "data": extra})
        event.t = elapsed
        return event_line(event)
    if kind == "env":
        return {"type": "env", "env": body}
    if kind in ("phase", "error", "profile", "graphs", "inputs", "shapes", "idle_probe", "memory"):
        return {"type": kind, **body}
    return None


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


def apply_line(data: RunData, line: dict[str, Any], packed: packing.Packed | None = None) -> None:
    """Fold one record line into ``data``. A line of a type this version does not know is
    skipped: a newer writer may add kinds of facts without breaking older readers.

    ``packed``: the batch ``line`` was packed from in this process (``record_entry``): its
    columns are folded as the line would decode, without decoding it."""
    kind = line.get("type")
    body = {k: v for k, v in line.items() if k != "type"}
    if kind not in ("iters", "event", "sample"):  # numbers only, or cleaned field by field
        body = clean_json(body)
    if kind == "header":
        data.settings = RunSettings.from_json(body.get("settings", {}))
        data.target = body.get("target", {})
        data.mode = body.get("mode") or mode_from_settings(body.get("settings", {}), data.target)
        data.started = body.get("started", "")
        data.command = body.get("command", [])
        data.stderr_path = body.get("stderr_file")
        data.run_id = body.get("run_id")
        data.status = outcome.STARTING
    elif kind == "spawned":
        data.env["agent_pid"] = body["pid"]
        data.status = outcome.RUNNING
    elif kind == "env":
        data.env.update(body.get("env", {}))
    elif kind == "phase":
        data.phases[body["name"]] = body["ms"]
    elif kind == "iters":
        if "z" in body:
            batch, ns, sh = packing.unpack(body, packed)
            data.add_iterations_ns(body["i0"], ns, batch, sh)
        elif "ns" in body:
            starts = [v / 1e6 for v in body["st"]]
            exact = _integers(body["ns"])
            if exact is None:  # not integers: kept as milliseconds
                ms = [v / 1e6 for v in body["ns"]]
                data.add_iterations(body["i0"], ms, starts, body.get("sh"))
            else:
                data.add_iterations_ns(body["i0"], exact, starts, body.get("sh"))
        else:  # an early record form, in float milliseconds
            data.add_iterations(body["i0"], body["ms"], body["start_ms"])
    elif kind == "event":
        event = Event.from_json(body)
        event.title, event.text = clean_line(event.title), clean(event.text)
        event.phase = clean_line(event.phase) if event.phase is not None else None
        event.data = clean_json(event.data)
        data.add_event(event)
    elif kind == "sample":
        data.samples.append(clean_json(body))
    elif kind == "profile":
        data.profiles[body["iteration"]] = body
    elif kind == "graphs":
        data.graphs.update(body)
    elif kind == "inputs":
        data.inputs = [str(x) for x in body.get("inputs", [])]
        data.inputs_source = str(body.get("source", ""))
    elif kind == "shapes":
        data.shape_keys = [str(k) for k in body.get("keys", [])]
        data.shape_dims = [d for d in body.get("dims", []) if isinstance(d, dict)]
    elif kind == "idle_probe":
        data.idle_probe = [r for r in body.get("results", []) if isinstance(r, dict)]
        data.idle_probe_shape = body.get("shape")
    elif kind == "memory":
        data.memory = {k: v for k, v in body.items() if isinstance(v, (int, float))}
    elif kind == "error":
        data.error = body
    elif kind == "end":
        data.status = body.get("status", outcome.CRASHED)
        data.status_detail = body.get("detail", "")
        data.exit_code = body.get("exit_code")


def _integers(values: list[Any]) -> array[int] | None:
    """``values`` as the narrowest of 32- and 64-bit integer arrays; ``None``: not integers
    that fit."""
    for code in "iq":
        try:
            return array(code, values)
        except (TypeError, OverflowError):
            continue
    return None


def mode_from_settings(settings: dict[str, Any], target: dict[str, Any]) -> str:
    """The mode a run used: its ``mode`` knob, else its target's own. (Records written before
    the header named the mode, and ``--json`` documents without it.)"""
    return str(settings.get("knobs", {}).get("mode") or target.get("default_mode") or "eager")
