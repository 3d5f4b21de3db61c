"""The record's line kinds, each declared once: what a line must hold and how it folds.

A record is JSONL; each line has a ``type``. ``KINDS`` maps each type to its ``LineKind``: its
``check`` (what ``fold`` and every reader after it rely on; fields it does not know are left
alone, a newer writer may add them), its ``fold`` into ``RunData``, and whether an agent message
of the same name is recorded as it comes. ``check_line`` and ``apply_line`` are one dispatch over
that table, for a live run, a replayed record and a ``--json`` document alike: a new kind of
line is one entry here.

The kinds: ``header`` (settings, target, mode, command, run id), ``spawned`` (the agent's pid),
``env``, ``phase``, ``inputs`` (what the model is given), ``shapes`` (the table of shape keys
when ``--dim`` varies them), ``device`` (a batch's device side on CUDA: each call's device
time and how long forward took to return, packed like ``iters``), ``reads`` (what a batch
read from storage: ``i0``, ``n``, ``bytes``, ``majflt``; only where it read any), ``waits``
(the child's waits for a core: ``since``, ``it``, ``ns``, ``all``, ``cs`` per reading), ``iters`` (a batch of iterations, packed by ``packing``; records
before version 2 hold plain lists in integer nanoseconds: ``ns`` durations, ``st`` starts from
the loop's start, ``sh`` each iteration's index into the shapes table; the earliest, float
milliseconds ``ms`` and ``start_ms``), ``event``, ``sample``, ``profile``, ``graphs``,
``idle_probe``, ``opening`` (the run's first calls replayed warm, ``--replay-opening``),
``memory``, ``error``, ``end``; a process ``warmscope exec`` watched has ``exec`` (the process,
and the tables its calls refer to: modules, threads, the program's other streams) and
``callers`` (each call's thread, beside ``iters``).

Every string that comes from the child, the model or a file is made safe for a terminal in the
fold, once (``safe_text``): no view downstream sees an escape sequence.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warmscope.core.base.safe_text import clean, clean_json, clean_line
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data import env_keys, packing
from warmscope.core.data.run import NS_PER_MS, Event, RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.waits import CpuWait

FORMAT = "warmscope-record"
VERSION = 2
"""2: iterations packed (``packing``); 1: iterations as plain lists. Both are read."""

MAX_LATENCY_MS = packing.MAX_LATENCY_NS / NS_PER_MS
"""No clock gives a latency beyond this (about 32 years): a record that says so is not one."""


class RecordError(UsageError):
    """A record that cannot be read or written; the message, one line, names the file."""

    def __init__(self, message: str) -> None:
        super().__init__(clean_line(message))


class Shape(ValueError):
    """A record line or document of the wrong shape; the message says what is wrong."""


FOLD_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError)
"""What a check or a fold raises for a line of the wrong shape."""


def describe(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):  # json's own words name Python's stack, not the file
        return "nested too deeply: arrays or objects inside each other past what is read"
    if isinstance(exc, KeyError):
        text = f"missing {exc}"
    elif type(exc) in (Shape, ValueError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 160 else text[:157] + "..."


def kind_of(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


# -- the vocabulary of checks -------------------------------------------------------------------


def is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_str(v: Any) -> bool:
    return isinstance(v, str)


def is_opt_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


def is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def is_opt_int(v: Any) -> bool:
    return v is None or is_int(v)


def is_opt_num(v: Any) -> bool:
    return v is None or is_num(v)


def is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def need(ok: bool, what: str) -> None:
    if not ok:
        raise Shape(what)


def field(
    d: dict[str, Any],
    key: str,
    check: Callable[[Any], bool],
    expected: str,
    *,
    optional: bool = True,
) -> None:
    if key not in d:
        need(optional, f"no {key!r}")
        return
    value = d[key]
    need(check(value), f"{key!r} is {kind_of(value)}, expected {expected}")


Fields = tuple[tuple[str, Callable[[Any], bool], str], ...]
"""``(key, check, what it must be)`` for each field a line may have."""

_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "str": (is_str, "a string"),
    "str?": (is_opt_str, "a string"),
    "int?": (is_opt_int, "an integer"),
    "num": (is_num, "a number"),
    "num?": (is_opt_num, "a number"),
    "dict": (is_dict, "an object"),
    "dict?": (lambda v: v is None or isinstance(v, dict), "an object"),
    "strs": (is_str_list, "a list of strings"),
    "list": (lambda v: isinstance(v, list), "a list"),
}


def spec(text: str) -> Fields:
    """``"kind:str iteration:int?"``: each field and the type its value must have (``?``: or
    null)."""
    return tuple((key, *_TYPES[kind]) for key, kind in (f.split(":") for f in text.split()))


def fields(d: dict[str, Any], checked: Fields) -> None:
    for key, check, expected in checked:
        field(d, key, check, expected)


RUN_FIELDS = spec(
    "settings:dict target:dict mode:str? started:str command:strs stderr_file:str? run_id:str?"
)
EVENT_FIELDS = spec(
    "kind:str title:str text:str iteration:int? phase:str? ms:num? t:num data:dict?"
)
SAMPLE_FIELDS = (
    "cpu",
    "rss_mb",
    "threads",
    "procs",
    "sys_cpu",
    "runnable",
    "cpu_pressure",
    "t",
    "iteration",
)


def check_version(d: dict[str, Any], path: Path) -> None:
    version = d.get("version", 1)
    need(is_int(version), f"'version' is {kind_of(version)}, expected an integer")
    if version > VERSION:
        raise RecordError(
            f"{path} is a warmscope record of version {version}; "
            f"this warmscope reads version {VERSION} (upgrade warmscope)"
        )


def check_run_fields(d: dict[str, Any]) -> None:
    """The fields a header (or a ``--json`` document) gives the whole run."""
    fields(d, RUN_FIELDS)
    settings = d.get("settings", {})
    field(settings, "knobs", is_dict, "an object in settings")
    field(settings, "inputs", lambda v: v is None or isinstance(v, list), "a list in settings")
    target = d.get("target", {})
    field(target, "default_inputs", lambda v: v is None or isinstance(v, list), "a list")


def check_event(d: Any) -> None:
    need(isinstance(d, dict), f"an event is {kind_of(d)}, expected an object")
    fields(d, EVENT_FIELDS)


def check_sample(d: Any) -> None:
    need(isinstance(d, dict), f"a sample is {kind_of(d)}, expected an object")
    for key in d:
        if key in SAMPLE_FIELDS or key.startswith("gpu_"):
            field(d, key, is_opt_num, "a number")


def check_profile(d: Any) -> None:
    need(isinstance(d, dict), f"a profile is {kind_of(d)}, expected an object")
    field(d, "iteration", is_int, "an integer", optional=False)
    for key in ("wall_ms", "ops_ms", "unaccounted_ms"):
        field(d, key, is_num, "a number")
    field(d, "trace", is_opt_str, "a string")
    field(d, "cuda", is_dict, "an object")
    field(d, "ops", lambda v: isinstance(v, list), "a list")
    for op in d.get("ops", []):
        need(isinstance(op, dict), f"an operator is {kind_of(op)}, expected an object")
        field(op, "name", is_str, "a string", optional=False)
        field(op, "self_ms", is_num, "a number", optional=False)
        field(op, "calls", is_int, "an integer")


def check_error(d: dict[str, Any]) -> None:
    for key in ("message", "traceback", "exception", "where"):
        field(d, key, is_opt_str, "a string")
    field(d, "iteration", is_opt_int, "an integer")


def check_latencies(ms: Any, start_ms: Any, names: tuple[str, str], scale: float = 1.0) -> None:
    """Two columns of equal length: finite starts, and latencies a clock could give (finite,
    not negative, below ``MAX_LATENCY_MS``). ``scale``: the latencies' units per millisecond."""
    for value, name in zip((ms, start_ms), names, strict=True):
        need(isinstance(value, list), f"{name!r} is {kind_of(value)}, expected a list of numbers")
    need(len(ms) == len(start_ms), f"{names[0]!r} and {names[1]!r} differ in length")
    try:
        total = math.fsum(ms) + math.fsum(start_ms)
    except TypeError:
        raise Shape("a latency that is not a number") from None
    except (OverflowError, ValueError):  # huge values, or inf and -inf
        total = math.inf
    need(math.isfinite(total), "a latency that is not a finite number")
    if ms:
        check_latency_range(min(ms), max(ms), scale)


def check_latency_range(low: float, high: float, scale: float = 1.0) -> None:
    """The smallest and largest latency of a batch (in ms times ``scale``) as a clock gives."""
    need(not math.isnan(low) and not math.isnan(high), "a latency that is not a number")
    need(low >= 0, "a negative latency")
    need(high <= MAX_LATENCY_MS * scale, "a latency beyond what any clock gives")


# -- the kinds ----------------------------------------------------------------------------------


def mode_from_settings(settings: dict[str, Any], target: dict[str, Any]) -> str:
    """The mode a run used: its ``mode`` knob, else its target's own. (Records written before
    the header named the mode, and ``--json`` documents without it.)"""
    return str(settings.get("knobs", {}).get("mode") or target.get("default_mode") or "eager")


Body = dict[str, Any]


def _fold_header(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.settings = RunSettings.from_json(body.get("settings", {}))
    data.target = body.get("target", {})
    data.mode = body.get("mode") or mode_from_settings(body.get("settings", {}), data.target)
    data.started = body.get("started", "")
    data.command = body.get("command", [])
    data.stderr_path = body.get("stderr_file")
    data.run_id = body.get("run_id")
    data.status = outcome.STARTING


def _check_spawned(entry: Body) -> None:
    field(entry, "pid", is_int, "an integer", optional=False)


def _fold_spawned(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.env["agent_pid"] = body["pid"]
    data.status = outcome.RUNNING


def _check_env(entry: Body) -> None:
    field(entry, "env", is_dict, "an object")


def _fold_env(data: RunData, body: Body, _: packing.Packed | None) -> None:
    env_keys.fold(data.env, body.get("env", {}))


def _check_phase(entry: Body) -> None:
    field(entry, "name", is_str, "a string", optional=False)
    field(entry, "ms", is_num, "a number", optional=False)
    for key in ("read_bytes", "majflt"):  # what it read from disk, where it read any
        field(entry, key, lambda v: is_int(v) and v >= 0, "a count")


def _fold_phase(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.phases[body["name"]] = body["ms"]
    if "read_bytes" in body:
        data.phase_reads[body["name"]] = (body["read_bytes"], body.get("majflt") or 0)


def _check_iters(entry: Body) -> None:
    field(entry, "i0", lambda v: is_int(v) and v >= 0, "an iteration number", optional=False)
    if "z" in entry:  # packed: ``packing.unpack`` checks its count, the fold its latencies
        field(entry, "z", is_str, "a string")
        field(entry, "n", lambda v: is_int(v) and v > 0, "a count", optional=False)
        field(entry, "s0", is_int, "an integer", optional=False)
    elif "ns" in entry:
        check_latencies(entry["ns"], entry.get("st"), ("ns", "st"), NS_PER_MS)
    else:
        check_latencies(entry.get("ms"), entry.get("start_ms"), ("ms", "start_ms"))
    if "sh" in entry:
        sh = entry["sh"]
        need(
            isinstance(sh, list) and all(is_int(v) and -1 <= v < 2**15 for v in sh),
            "'sh' is not a list of shape indices",
        )
        need(len(sh) == len(entry.get("ns") or entry.get("ms") or []), "'sh' differs in length")


def _fold_iters(data: RunData, body: Body, packed: packing.Packed | None) -> None:
    if "z" in body:
        batch, ns, sh = packing.unpack(body, packed)
        need(not packing.has_negative(ns), "a negative latency")
        need(
            not packing.has_beyond(ns, packing.MAX_LATENCY_NS),
            "a latency beyond what any clock gives",
        )
        data.add_iterations_ns(body["i0"], ns, batch, sh)
    elif "ns" in body:
        starts = [v / 1e6 for v in body["st"]]
        exact = _integers(body["ns"])
        if exact is None:  # not integers: kept as milliseconds
            ms = [v / 1e6 for v in body["ns"]]
            data.add_iterations(body["i0"], ms, starts, body.get("sh"))
        else:
            data.add_iterations_ns(body["i0"], exact, starts, body.get("sh"))
    else:  # an early record form (and a --json document), in float milliseconds
        data.add_iterations(body["i0"], body["ms"], body["start_ms"], body.get("sh"))


def _check_device(entry: Body) -> None:
    field(entry, "i0", lambda v: is_int(v) and v >= 0, "an iteration number", optional=False)
    if "z" in entry:
        field(entry, "z", is_str, "a string")
        field(entry, "n", lambda v: is_int(v) and v > 0, "a count", optional=False)
    else:
        for key in ("dv", "ln"):
            value = entry.get(key)
            need(
                isinstance(value, list) and all(is_int(v) for v in value),
                f"{key!r} is not a list of integers",
            )
        need(len(entry["dv"]) == len(entry["ln"]), "'dv' and 'ln' differ in length")


def _fold_device(data: RunData, body: Body, _: packing.Packed | None) -> None:
    if "z" in body:
        dv, ln = packing.unpack_columns(body["z"], body["n"], 2)
    else:
        dv, ln = array("q", body["dv"]), array("q", body["ln"])
    data.add_device(body["i0"], dv, ln)


def _check_reads(entry: Body) -> None:
    field(entry, "i0", lambda v: is_int(v) and v >= 0, "an iteration number", optional=False)
    field(entry, "n", lambda v: is_int(v) and v > 0, "a count", optional=False)
    for key in ("bytes", "majflt"):
        field(entry, key, lambda v: is_int(v) and v >= 0, "a count", optional=False)


def _fold_reads(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.add_disk_read(body["i0"], body["n"], body["bytes"], body["majflt"])


def _check_waits(entry: Body) -> None:
    lengths = set()
    for key in ("since", "it", "ns", "cs", "all"):
        if key == "all" and key not in entry:
            continue  # the other threads' delay: optional
        column = entry.get(key)
        need(
            isinstance(column, list) and all(is_int(v) and v >= 0 for v in column),
            f"'{key}' is not a list of counts",
        )
        lengths.add(len(column))  # type: ignore[arg-type]  # a list, checked above
    need(len(lengths) == 1, "'since', 'it', 'ns', 'all' and 'cs' differ in length")
    need(
        all(a <= b for a, b in zip(entry["since"], entry["it"], strict=True)),
        "a reading ends before it starts",
    )


def _fold_waits(data: RunData, body: Body, _: packing.Packed | None) -> None:
    others = body.get("all") or [0] * len(body["it"])
    columns = (body["since"], body["it"], body["ns"], body["cs"], others)
    data.add_cpu_waits([CpuWait(*row) for row in zip(*columns, strict=True)])


def _integers(values: list[Any]) -> array[int] | None:
    """``values`` as the narrowest of 32- and 64-bit integer arrays; ``None``: not integers
    that fit."""
    for code in "iq":
        try:
            return array(code, values)
        except (TypeError, OverflowError):
            continue
    return None


def _fold_event(data: RunData, body: Body, _: packing.Packed | None) -> None:
    event = Event.from_json(body)
    event.title, event.text = clean_line(event.title), clean(event.text)
    event.phase = clean_line(event.phase) if event.phase is not None else None
    event.data = clean_json(event.data)
    data.add_event(event)


def _fold_sample(data: RunData, body: Body, _: packing.Packed | None) -> None:
    if body.get("rss_mb") == 0:
        # The child read as it exited, its memory released (records made before the sampler
        # stopped there): its teardown, not the run; its last reading is the one before.
        return
    data.samples.append(clean_json(body))


def _fold_profile(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.profiles[body["iteration"]] = body


def _check_graphs(entry: Body) -> None:
    for key, value in entry.items():
        need(isinstance(value, str), f"graph {key!r} is {kind_of(value)}, expected a string")


def _fold_graphs(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.graphs.update(body)


def _check_inputs(entry: Body) -> None:
    need(is_str_list(entry.get("inputs", [])), "'inputs' is not a list of strings")


def _fold_inputs(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.inputs = [str(x) for x in body.get("inputs", [])]
    data.inputs_source = str(body.get("source", ""))


def _check_shapes(entry: Body) -> None:
    need(is_str_list(entry.get("keys")), "'keys' is not a list of strings")
    dims = entry.get("dims", [])
    need(isinstance(dims, list) and all(map(is_dict, dims)), "'dims' is not a list of objects")


def _fold_shapes(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.shape_keys = [str(k) for k in body.get("keys", [])]
    data.shape_dims = [d for d in body.get("dims", []) if isinstance(d, dict)]


def _check_idle_probe(entry: Body) -> None:
    results = entry.get("results", [])
    need(isinstance(results, list), "'results' is not a list")
    for r in results:
        need(isinstance(r, dict) and is_num(r.get("idle_s")), "an idle probe without idle_s")
        need(
            isinstance(r.get("ms"), list) and all(is_num(v) for v in r["ms"]),
            "an idle probe's 'ms' is not a list of numbers",
        )


def _fold_idle_probe(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.idle_probe = [r for r in body.get("results", []) if isinstance(r, dict)]
    data.idle_probe_shape = body.get("shape")


def _check_opening(entry: Body) -> None:
    field(entry, "pause_ms", lambda v: is_num(v) and v >= 0, "a duration", optional=False)
    shapes, replays = entry.get("shapes"), entry.get("ms")
    need(isinstance(shapes, list) and all(map(is_int, shapes)), "'shapes' is not a list of indices")
    assert isinstance(shapes, list)
    need(
        isinstance(replays, list)
        and all(
            isinstance(r, list) and len(r) == len(shapes) and all(is_num(v) and v >= 0 for v in r)
            for r in replays
        ),
        "'ms' is not a list of replays, each a latency per call",
    )


def _fold_opening(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.opening = {
        "pause_ms": float(body["pause_ms"]),
        "shapes": list(body["shapes"]),
        "ms": [list(map(float, r)) for r in body["ms"]],
    }


def _fold_memory(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.memory = {k: v for k, v in body.items() if isinstance(v, (int, float))}


def _fold_error(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.error = body


def _check_exec(entry: Body) -> None:
    for key in ("process", "modules", "threads"):
        field(entry, key, is_dict, "an object")
    field(entry, "streams", is_str_list, "a list of strings")


def _fold_exec(data: RunData, body: Body, _: packing.Packed | None) -> None:
    """Tables grow by the entries a line adds: a line names only what is new."""
    for key in ("process", "modules", "threads"):
        if key in body:
            data.exec.setdefault(key, {}).update(body[key])
    if "streams" in body:
        data.exec["streams"] = list(body["streams"])


def _check_callers(entry: Body) -> None:
    field(entry, "i0", lambda v: is_int(v) and v >= 0, "an iteration number", optional=False)
    th = entry.get("th")
    need(isinstance(th, list) and all(is_int(v) for v in th), "'th' is not a list of thread ids")


def _fold_callers(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.add_callers(body["i0"], body["th"])


def _check_end(entry: Body) -> None:
    field(entry, "status", is_str, "a string")
    field(entry, "detail", is_str, "a string")
    field(entry, "exit_code", is_opt_int, "an integer")


def _fold_end(data: RunData, body: Body, _: packing.Packed | None) -> None:
    data.status = body.get("status", outcome.CRASHED)
    data.status_detail = body.get("detail", "")
    data.exit_code = body.get("exit_code")


def _no_check(entry: Body) -> None:
    pass


@dataclass(frozen=True)
class LineKind:
    check: Callable[[Body], None]
    """Raises ``Shape`` (or a ``FOLD_ERRORS``) for a line ``fold`` cannot take."""
    fold: Callable[[RunData, Body, packing.Packed | None], None]
    """Folds the line's body (without ``type``) into the run."""
    holds: tuple[str, ...]
    """The ``RunData`` fields the fold writes, and only those (``tests/test_document_kinds``
    folds real records to hold it to that): what a reader of the kind reads, and what the
    record and the ``--json`` document must both give back."""
    document: tuple[str, ...]
    """The ``--json`` document's keys the kind is written under and read back from
    (``document.to_document`` / ``document_lines``)."""
    clean: bool = True
    """The body is made safe for a terminal (``clean_json``) before the fold; ``False`` for
    lines of numbers only, or cleaned field by field by their fold."""
    from_agent: bool = False
    """An agent message of this name is recorded as it comes (its ``t`` taken for ``type``);
    ``protocol.MESSAGES`` names every message an agent sends."""


def kind(
    check: Callable[[Body], None],
    fold: Callable[[RunData, Body, packing.Packed | None], None],
    holds: str,
    document: str,
    **how: bool,
) -> LineKind:
    """A ``LineKind``, its fields and document keys written as space-separated names."""
    return LineKind(check, fold, tuple(holds.split()), tuple(document.split()), **how)


KINDS: dict[str, LineKind] = {
    "header": kind(
        check_run_fields,
        _fold_header,
        "settings target mode started command stderr_path run_id status",
        "settings target mode started command stderr_file run_id",
    ),
    "spawned": kind(_check_spawned, _fold_spawned, "env status", "env"),
    "env": kind(_check_env, _fold_env, "env", "env"),
    "phase": kind(_check_phase, _fold_phase, "phases phase_reads", "phases", from_agent=True),
    "inputs": kind(
        _check_inputs,
        _fold_inputs,
        "inputs inputs_source",
        "inputs inputs_source",
        from_agent=True,
    ),
    "shapes": kind(
        _check_shapes, _fold_shapes, "shape_keys shape_dims", "summary", from_agent=True
    ),
    "iters": kind(
        _check_iters, _fold_iters, "_ns _ms start_ms shape_of", "iterations", clean=False
    ),
    "device": kind(_check_device, _fold_device, "device_ns launch_ns", "iterations", clean=False),
    "idle_probe": kind(
        _check_idle_probe,
        _fold_idle_probe,
        "idle_probe idle_probe_shape",
        "summary",
        from_agent=True,
    ),
    "opening": kind(
        _check_opening, _fold_opening, "opening", "opening", clean=False, from_agent=True
    ),
    "memory": kind(_no_check, _fold_memory, "memory", "summary", from_agent=True),
    "event": kind(check_event, _fold_event, "events _by_iteration", "events", clean=False),
    "sample": kind(check_sample, _fold_sample, "samples", "samples", clean=False),
    "profile": kind(check_profile, _fold_profile, "profiles", "profiles", from_agent=True),
    "reads": kind(
        _check_reads, _fold_reads, "disk_reads", "disk_reads", clean=False, from_agent=True
    ),
    "waits": kind(
        _check_waits, _fold_waits, "cpu_waits", "cpu_waits", clean=False, from_agent=True
    ),
    "graphs": kind(_check_graphs, _fold_graphs, "graphs", "graphs", from_agent=True),
    "error": kind(check_error, _fold_error, "error", "error", from_agent=True),
    "exec": kind(_check_exec, _fold_exec, "exec", "exec"),
    "callers": kind(_check_callers, _fold_callers, "call_threads", "iterations", clean=False),
    "end": kind(
        _check_end, _fold_end, "status status_detail exit_code", "status status_detail exit_code"
    ),
}
"""Every record line kind this version knows, in the order a ``--json`` document's lines are
read back. A line of another type is skipped: a newer writer may add kinds of facts without
breaking older readers."""


def check_line(entry: Body) -> None:
    """What ``apply_line`` and every reader after it rely on (``Shape`` when it is not)."""
    kind = KINDS.get(entry.get("type"))  # type: ignore[arg-type]
    if kind is not None:
        kind.check(entry)


def apply_line(data: RunData, line: Body, packed: packing.Packed | None = None) -> None:
    """Fold one record line into ``data``; a line of a type this version does not know is
    skipped.

    ``packed``: the batch ``line`` was packed from in this process (``fold.record_entry``): its
    columns are folded as the line would decode, without decoding it."""
    kind = KINDS.get(line.get("type"))  # type: ignore[arg-type]
    if kind is None:
        return
    body = {k: v for k, v in line.items() if k != "type"}
    kind.fold(data, clean_json(body) if kind.clean else body, packed)
