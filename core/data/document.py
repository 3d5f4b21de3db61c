"""The ``--json`` document of a run: written from ``RunData``, read back through the same fold.

``to_document`` writes it; ``read_document`` reads one back by turning it into the record lines
it stands for (``document_lines``), each checked and folded by ``schema`` as a record's lines
are: the document has no decoder of its own, so it cannot drift from the record.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from warmscope.core.child import outcome
from warmscope.core.data import contention, trace_evidence
from warmscope.core.data.causes import run_causes
from warmscope.core.data.run import NS_PER_MS, RunData
from warmscope.core.data.run_summary import run_summary
from warmscope.core.data.schema import (
    FOLD_ERRORS,
    RecordError,
    apply_line,
    check_line,
    check_version,
    describe,
    fields,
    is_dict,
    is_int,
    is_num,
    kind_of,
    need,
    spec,
)

FORMAT = "warmscope-run"
VERSION = 1

DOCUMENT_FIELDS = spec(
    "env:dict status:str status_detail:str error:dict? exit_code:int? graphs:dict "
    "phases:list iterations:list events:list samples:list profiles:list"
)
_RUN_KEYS = ("settings", "target", "mode", "started", "command", "stderr_file", "run_id")
_MEMORY_KEYS = ("peak_rss_mb", "cuda_max_allocated_mb")


def iteration_rows(run: RunData) -> Iterator[dict[str, Any]]:
    """The document's iterations, one row at a time (a long run has millions)."""
    labels = run.labelled()
    profiles = set(run.profiled_here())
    keys = run.shape_keys
    shape_of = run.shape_of
    for i, (ms, st) in enumerate(zip(run.ms, run.start_ms, strict=True)):
        row: dict[str, Any] = {"i": i, "ms": round(ms, 6), "start_ms": round(st, 6)}
        if keys and i < len(shape_of) and 0 <= shape_of[i] < len(keys):
            row["shape"] = keys[shape_of[i]]
        if i in labels:
            row["label"] = labels[i]
        if i in profiles:
            row["profiled"] = True
        device, launch = run.device_ms(i), run.launch_ms(i)
        if device is not None:
            row["device_ms"] = round(device, 6)
        if launch is not None:
            row["launch_ms"] = round(launch, 6)
        if i < len(run.call_threads):
            row["thread"] = run.call_threads[i]
        yield row


def phase_reads(run: RunData, name: str) -> dict[str, int]:
    """What phase ``name`` read from disk, as its fields: none where it read nothing."""
    if name not in run.phase_reads:
        return {}
    read, faults = run.phase_reads[name]
    return {"read_bytes": read, "majflt": faults}


def to_document(run: RunData, *, iterations: bool = True) -> dict[str, Any]:
    """The ``--json`` document; without ``iterations`` for a writer that streams them."""
    warns = run.warnings()
    return {
        "format": FORMAT,
        "version": VERSION,
        "run_id": run.run_id,
        "started": run.started,
        "command": run.command,
        "settings": run.settings.to_json(),
        "target": run.target,
        "mode": run.mode,
        "env": run.env,
        "status": run.status,
        "status_detail": run.status_detail,
        "exit_code": run.exit_code,
        "error": run.error,
        "phases": [{"name": k, "ms": v, **phase_reads(run, k)} for k, v in run.phases.items()],
        "iterations": list(iteration_rows(run)) if iterations else [],
        "events": [e.to_json() for e in run.events],
        "samples": run.samples,
        "profiles": [run.profiles[i] for i in sorted(run.profiles)],
        "disk_reads": [
            {"i0": r.first, "n": r.calls, "bytes": r.read_bytes, "majflt": r.major_faults}
            for r in run.disk_reads
        ],
        "cpu_waits": [
            {
                "since": w.since,
                "iteration": w.iteration,
                "wait_ns": w.wait_ns,
                "threads_wait_ns": w.threads_ns,
                "switches": w.switches,
            }
            for w in run.cpu_waits
        ],
        "graphs": run.graphs,
        "exec": run.exec,
        "opening": run.opening,
        "inputs": run.inputs,
        "inputs_source": run.inputs_source,
        "summary": {**run_summary(run), "noisy": any(w.noisy for w in warns)},
        "causes": [c.to_json() for c in run_causes(run, trace_evidence.for_run(run))],
        "warnings": [w.text for w in warns] + contention.warnings(run),
        "record": run.record_path,
        "stderr_file": run.stderr_path,
    }


def read_document(doc: Any, path: Path) -> RunData:
    """A document as ``RunData``; ``RecordError``, one line naming ``path``, for one of the
    wrong shape."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RecordError(f"{path} is not a warmscope --json document")
    data = RunData(record_path=str(path))
    try:
        check_version(doc, path)
        for line in document_lines(doc):
            check_line(line)
            apply_line(data, line)
    except RecordError:
        raise
    except FOLD_ERRORS as exc:
        raise RecordError(
            f"{path}: not a valid warmscope --json document ({describe(exc)})"
        ) from None
    return data


def _objects(doc: dict[str, Any], key: str, what: str) -> Iterator[dict[str, Any]]:
    for item in doc.get(key, []):
        need(isinstance(item, dict), f"{what} is {kind_of(item)}, expected an object")
        yield item


def document_lines(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The record lines a document stands for, in a record's order."""
    fields(doc, DOCUMENT_FIELDS)
    summary: dict[str, Any] = doc["summary"] if is_dict(doc.get("summary")) else {}
    yield {"type": "header", **{k: doc[k] for k in _RUN_KEYS if k in doc}}
    yield {"type": "env", "env": doc.get("env", {})}
    for phase in _objects(doc, "phases", "a phase"):
        yield {**phase, "type": "phase"}
    if "inputs" in doc or "inputs_source" in doc:
        yield {"type": "inputs", "inputs": doc.get("inputs", []), **_source(doc)}
    shape_rows = [r for r in summary.get("shapes") or [] if isinstance(r, dict)]
    keys = [str(r.get("key", "")) for r in shape_rows]
    if shape_rows:
        dims: list[Any] = [r.get("dims") if is_dict(r.get("dims")) else {} for r in shape_rows]
        yield {"type": "shapes", "keys": keys, "dims": dims}
    rows = list(_objects(doc, "iterations", "an iteration"))
    if rows:
        yield _iterations(rows, keys)
        device = _device(rows)
        if device is not None:
            yield device
        if any("thread" in r for r in rows):
            threads = [r.get("thread") for r in rows]
            yield {"type": "callers", "i0": 0, "th": [t if is_int(t) else 0 for t in threads]}
    probes = [p for p in summary.get("idle_probe") or [] if is_dict(p) and is_num(p.get("idle_s"))]
    if probes:
        probe: dict[str, Any] = {"type": "idle_probe"}
        probe["results"] = [{"idle_s": p["idle_s"], "ms": p.get("ms", [])} for p in probes]
        shapes = [p["shape"] for p in probes if isinstance(p.get("shape"), str)]
        if shapes:
            probe["shape"] = shapes[-1]
        yield probe
    if is_dict(doc.get("opening")) and doc["opening"]:
        yield {**doc["opening"], "type": "opening"}
    memory = {k: summary[k] for k in _MEMORY_KEYS if is_num(summary.get(k))}
    if memory:
        yield {"type": "memory", **memory}
    for event in _objects(doc, "events", "an event"):
        yield {**event, "type": "event"}
    for sample in _objects(doc, "samples", "a sample"):
        yield {**sample, "type": "sample"}
    for profile in _objects(doc, "profiles", "a profile"):
        yield {**profile, "type": "profile"}
    for reads in _objects(doc, "disk_reads", "a disk read"):
        yield {**reads, "type": "reads"}
    readings = list(_objects(doc, "cpu_waits", "a wait for a core"))
    if readings:
        yield {
            "type": "waits",
            **{
                key: [w.get(name) for w in readings]
                for key, name in (
                    ("since", "since"),
                    ("it", "iteration"),
                    ("ns", "wait_ns"),
                    ("all", "threads_wait_ns"),
                    ("cs", "switches"),
                )
            },
        }
    if doc.get("graphs"):
        yield {**doc["graphs"], "type": "graphs"}
    if is_dict(doc.get("exec")) and doc["exec"]:
        yield {**doc["exec"], "type": "exec"}
    if doc.get("error"):
        yield {**doc["error"], "type": "error"}
    end = {"status": doc.get("status", outcome.CRASHED), "detail": doc.get("status_detail", "")}
    yield {"type": "end", **end, "exit_code": doc.get("exit_code")}


def _source(doc: dict[str, Any]) -> dict[str, Any]:
    return {"source": doc["inputs_source"]} if "inputs_source" in doc else {}


def _iterations(rows: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    """The rows as one batch: in integer nanoseconds where every value is a whole number of
    them (a run recorded in nanoseconds, rounded to 6 decimals of a millisecond, reads back
    exactly), else in milliseconds."""
    ms = [r["ms"] for r in rows]
    start_ms = [r.get("start_ms", 0.0) for r in rows]
    ns, st = _whole_ns(ms), _whole_ns(start_ms)
    line: dict[str, Any] = {"type": "iters", "i0": 0}
    if ns is not None and st is not None:
        line.update(ns=ns, st=st)
    else:
        line.update(ms=ms, start_ms=start_ms)
    if keys:
        index = {k: n for n, k in enumerate(keys)}
        line["sh"] = [index.get(r.get("shape"), -1) for r in rows]  # type: ignore[arg-type]
    return line


def _device(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The rows' device side (``device_ms``, ``launch_ms``) as a ``device`` line; ``None`` for
    a run that timed none. A row without them, or with a value that is no whole number of ns,
    reads as not timed."""
    if not any("device_ms" in r for r in rows):
        return None

    def ns(value: Any) -> int:
        whole = _whole_ns([value]) if is_num(value) and value >= 0 else None
        return whole[0] if whole else -1

    dv = [ns(r.get("device_ms")) for r in rows]
    ln = [ns(r.get("launch_ms")) for r in rows]
    return {"type": "device", "i0": 0, "dv": dv, "ln": ln}


def _whole_ns(values: list[Any]) -> list[int] | None:
    try:
        ns = [round(v * NS_PER_MS) for v in values if is_num(v) and math.isfinite(v)]
    except (TypeError, OverflowError, ValueError):
        return None
    if len(ns) != len(values) or any(n / NS_PER_MS != v for n, v in zip(ns, values, strict=True)):
        return None
    return ns
