"""The sweep document's schema, declared once: every field a reader of a ``warmscope-sweep``
document relies on, with the type it must have.

A sweep document is handed over like a record, so it is data: ``check_sweep`` walks it once as
it is read, and a field of the wrong type is one line naming it (``cells[2].first_ms.median is
a string, expected a number``), never a traceback in whichever view happens to use it. Fields
it does not know are left alone (a newer writer may add them); fields it knows may be missing
(an older writer left them out), but not of another type. Numbers are finite (the reader
refuses ``NaN`` and ``Infinity`` as it parses), and the sizes a document states are those a
sweep can have: at most ``MAX_CELLS`` cells.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from warmscope.core.data.schema import Shape, is_int, is_num, kind_of

MAX_CELLS = 64
"""The most cells a sweep runs (``sweep.grid``): a document with more is not a sweep's."""
MAX_COUNT = 1 << 20
"""The largest process count a comparison may state (its tests' cost grows with it)."""

Check = Callable[[Any, str], None]
"""Raises ``Shape`` naming ``where`` when the value is not of its kind."""


def _kind(what: str, ok: Callable[[Any], bool]) -> Check:
    def check(value: Any, where: str) -> None:
        if not ok(value):
            raise Shape(f"{where} is {kind_of(value)}, expected {what}")

    return check


NUM = _kind("a number", is_num)
INT = _kind("an integer", is_int)
STR = _kind("a string", lambda v: isinstance(v, str))
BOOL = _kind("true or false", lambda v: isinstance(v, bool))
ANY: Check = lambda value, where: None  # noqa: E731 - a field whose value no reader interprets


def opt(check: Check) -> Check:
    """``check``, or null."""

    def either(value: Any, where: str) -> None:
        if value is not None:
            check(value, where)

    return either


def list_of(item: Check, *, most: int | None = None, what: str = "items") -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise Shape(f"{where} is {kind_of(value)}, expected a list")
        if most is not None and len(value) > most:
            raise Shape(f"it has {len(value)} {what}: a sweep has at most {most}")
        for n, x in enumerate(value):
            item(x, f"{where}[{n}]")

    return check


def map_of(item: Check) -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise Shape(f"{where} is {kind_of(value)}, expected an object")
        for key, x in value.items():
            item(x, f"{where}.{key}")

    return check


def obj(
    fields: dict[str, Check], rule: Callable[[dict[str, Any], str], None] | None = None
) -> Check:
    """An object whose known ``fields`` (each optional) have their kinds; ``rule``: what
    must hold between them."""

    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise Shape(f"{where} is {kind_of(value)}, expected an object")
        for key, field in fields.items():
            if key in value:
                field(value[key], f"{where}.{key}" if where else key)
        if rule is not None:
            rule(value, where)

    return check


def _interval_rule(value: dict[str, Any], where: str) -> None:
    # A median is drawn with its interval: one without the other cannot be shown.
    if value.get("median") is not None:
        for key in ("lo", "hi"):
            NUM(value.get(key), f"{where}.{key}")


def _pair(value: Any, where: str) -> None:
    list_of(INT)(value, where)
    if len(value) != 2 or not all(0 <= n <= MAX_COUNT for n in value):
        raise Shape(f"{where} is not two counts of processes")


STAT = obj(
    {
        "median": opt(NUM),
        "lo": opt(NUM),
        "hi": opt(NUM),
        "values": list_of(opt(NUM)),
        "coverage": opt(NUM),
        "n": opt(INT),
    },
    _interval_rule,
)
"""A statistic across processes: its median and interval, every value, the coverage."""

COMPARISON = obj(
    {
        "estimate": opt(NUM),
        "lo": opt(NUM),
        "hi": opt(NUM),
        "coverage": opt(NUM),
        "level": opt(NUM),
        "ratio": opt(BOOL),
        "n": _pair,
    },
    lambda value, where: _interval_rule({**value, "median": value.get("estimate")}, where),
)

PROCESS = obj(
    {
        "record": opt(STR),
        "status": STR,
        "detail": STR,
        "iterations": INT,
        **{
            key: opt(NUM)
            for key in (
                "first_ms",
                "warmup_excess_ms",
                "steady_from",
                "steady_p50_ms",
                "setup_ms",
                "start_ms",
                "total_ms",
            )
        },
        "shape": STR,
        "warnings": list_of(STR),
        "repeat": INT,
        "node": opt(obj({"hostname": opt(STR)})),
    }
)

CELL = obj(
    {
        "index": INT,
        "label": STR,
        "settings": map_of(ANY),
        "runs": list_of(opt(STR)),
        "processes": list_of(PROCESS),
        **{
            key: opt(STAT)
            for key in (
                "first_ms",
                "warmup_excess_ms",
                "steady_from",
                "steady_p50_ms",
                "setup_ms",
                "start_ms",
                "total_ms",
            )
        },
        "total_calls": opt(INT),
        "shapes": STR,
        "phases": map_of(STAT),
        "by_iteration": list_of(obj({"median": NUM, "lo": NUM, "hi": NUM, "n": INT})),
    }
)

RANK = obj(
    {
        "rank": INT,
        "cell": INT,
        "label": STR,
        "median": opt(NUM),
        "lo": opt(NUM),
        "hi": opt(NUM),
        "vs_best": STR,
        "comparison": opt(COMPARISON),
        "delta": opt(NUM),
        "dropped_round": opt(INT),
        "against": opt(INT),
    },
    lambda value, where: STR(value.get("vs_best"), f"{where}.vs_best"),
)

SWEEP = obj(
    {
        "version": INT,
        "target": STR,
        "command": list_of(STR),
        "started": STR,
        "ran_in": opt(STR),
        "repeat": INT,
        "iters": opt(INT),
        "rank_by": STR,
        "interval": STR,
        "method": STR,
        "confidence": opt(NUM),
        "adaptive": BOOL,
        "cap": INT,
        "rounds": INT,
        "looks": list_of(ANY),
        "first_look": opt(INT),
        "stopped": BOOL,
        "planned": INT,
        "finished": INT,
        "processes_fixed": INT,
        "processes_saved": INT,
        "wall_s": opt(NUM),
        "warming_s": opt(NUM),
        "per_process_s": opt(NUM),
        "schedule": list_of(list_of(INT)),
        "folder": opt(STR),
        "executor": STR,
        "ranking": list_of(RANK),
        "decided": BOOL,
        "decided_round": opt(INT),
        "dropped": list_of(
            obj({"label": opt(STR), "round": opt(INT), "why": opt(STR), "cell": opt(INT)})
        ),
        "given_up": list_of(obj({"label": opt(STR), "why": opt(STR), "cell": opt(INT)})),
        "answer": STR,
        "warnings": list_of(STR),
        "hosts": opt(
            obj(
                {
                    "hosts": list_of(
                        obj({"label": opt(STR), "relative": opt(STAT), "processes": opt(INT)})
                    ),
                    "answer": opt(STR),
                }
            )
        ),
        "cells": list_of(CELL, most=MAX_CELLS, what="cells"),
    },
    lambda value, where: _schedule_rule(value),
)
"""The whole document (``sweep_digest.sweep_document`` writes it)."""


def _schedule_rule(doc: dict[str, Any]) -> None:
    for n, pair in enumerate(doc.get("schedule") or []):
        if len(pair) != 2:
            raise Shape(f"schedule[{n}] is not a cell and a repeat")
    if not isinstance(doc.get("cells"), list):
        raise Shape("'cells' is missing: a sweep document lists its cells")


def check_sweep(doc: dict[str, Any]) -> None:
    """``Shape`` (its message names the field) for a document a reader could not lay out."""
    SWEEP(doc, "")


def not_finite(text: str) -> float:
    """``json.loads``' ``parse_constant``: a document holds finite numbers only."""
    raise ValueError(f"{text} is not a finite number")


def finite_float(text: str) -> float:
    """``json.loads``' ``parse_float``: ``1e999`` reads as infinity, which no figure is."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} is not a finite number")
    return value
