"""Where a slow iteration's time went, against a steady one: pure functions over breakdowns.

A breakdown is what the agent sends for a profiled iteration (see ``core/child/opprofile.py``):
``wall_ms``, ``ops_ms``, ``unaccounted_ms`` and ``ops`` (name, self_ms, total_ms, calls, shapes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from warmscope.core.base import units

UNACCOUNTED = "(not in any operator)"
PROFILER_OWN = ("Activity Buffer Request",)
"""Rows the profiler adds for its own work (CUPTI's buffers): not the model's cost."""
MUCH_SLOWER = 2.0


@dataclass(frozen=True)
class OpDelta:
    """One operator's cost in the slow iteration against the steady one."""

    name: str
    slow_ms: float
    steady_ms: float
    calls_slow: int
    calls_steady: int
    kind: str  # "only here" | "slower" | "unaccounted"

    @property
    def added_ms(self) -> float:
        return self.slow_ms - self.steady_ms

    @property
    def ratio(self) -> float | None:
        return self.slow_ms / self.steady_ms if self.steady_ms > 0 else None


def diff(
    slow: dict[str, Any], steady: dict[str, Any], *, min_ms: float | None = None
) -> list[OpDelta]:
    """Operators only in ``slow``, operators much slower there, and the unaccounted time,
    sorted by what they add. Small differences (below ``min_ms``, by default 1% of the slow
    iteration's wall time and at least 10 µs) are left out.
    """
    threshold = min_ms if min_ms is not None else max(0.01, 0.01 * float(slow.get("wall_ms", 0.0)))
    steady_ops = {op["name"]: op for op in steady.get("ops", [])}
    rows: list[OpDelta] = []
    for op in slow.get("ops", []):
        if op["name"] in PROFILER_OWN:
            continue
        base = steady_ops.get(op["name"])
        steady_ms = float(base["self_ms"]) if base else 0.0
        delta = OpDelta(
            op["name"],
            float(op["self_ms"]),
            steady_ms,
            int(op.get("calls", 0)),
            int(base.get("calls", 0)) if base else 0,
            "slower" if base else "only here",
        )
        much = delta.ratio is None or delta.ratio >= MUCH_SLOWER
        if delta.added_ms >= threshold and much:
            rows.append(delta)
    unaccounted = OpDelta(
        UNACCOUNTED,
        float(slow.get("unaccounted_ms", 0.0)),
        float(steady.get("unaccounted_ms", 0.0)),
        0,
        0,
        "unaccounted",
    )
    if unaccounted.added_ms >= threshold:
        rows.append(unaccounted)
    return sorted(rows, key=lambda r: -r.added_ms)


def steady_reference(profiles: dict[int, dict[str, Any]], steady_from: int | None) -> int | None:
    """The profiled iteration to compare against: the last one at or after ``steady_from``."""
    if steady_from is None:
        return None
    candidates = [i for i in profiles if i >= steady_from and "ops" in profiles[i]]
    return max(candidates) if candidates else None


UNACCOUNTED_CAUSE = "outside any operator (lazy initialisation, dispatch, Python)"

NAMED_CAUSES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("(dynamo_timed)", "TORCHDYNAMO"), "compiling (Dynamo's and Inductor's own phases)"),
    (("TorchDynamo Cache Lookup",), "guard evaluation (Dynamo's cache lookup)"),
    (
        (
            "Torch-Compiled Region",
            "Pregraph bytecode",
            "CompiledFunction",
            "inductor_wrapper_call",
            "CompiledFxGraph",
        ),
        "the compiled graph's first run",
    ),
    (
        ("prepack", "_weight_pack", "mkldnn_reorder", "to_mkldnn", "_pack_"),
        "weight packing",
    ),
    (
        ("aten::empty", "aten::resize_", "aten::zeros", "cudaMalloc", "[memory]"),
        "allocation",
    ),
    (
        (
            "::mm",
            "addmm",
            "bmm",
            "::mv",
            "addmv",
            "matmul",
            "::linear",
            "conv",
            "attention",
            "gemm",
        ),
        "kernel selection (its first call at this shape)",
    ),
)
"""What an operator's (or profiler range's) name says its first-call cost is, first match
winning: the profile's own names, not a guess from how the cost differs."""
BY_KIND = {
    "slower": "lazy initialisation",
    "only here": "work only the first call does",
    "unaccounted": UNACCOUNTED_CAUSE,
}
"""Where no name says more: what the way it differs from steady state says."""


def cause_of(row: OpDelta) -> str:
    """The likely cause of one row of a first call's cost, from the name it carries."""
    if row.kind == "unaccounted":
        return UNACCOUNTED_CAUSE
    name = row.name
    for needles, cause in NAMED_CAUSES:
        if any(needle in name for needle in needles):
            return cause
    return BY_KIND[row.kind]


def leading(slow: dict[str, Any], steady: dict[str, Any], n: int = 3) -> list[OpDelta]:
    """The operators whose first call costs most against steady state, and the time no
    operator accounts for when it is among them: ``diff``'s first ``n``."""
    return diff(slow, steady)[:n]


def delta_text(row: OpDelta, call: str = "the first call") -> str:
    """``aten::mm 14× steady``, ``aten::empty only in the first call``, ``1.20 ms in no
    operator``: one row of a first (or ``call``'s) cost, as a label writes it."""
    if row.kind == "unaccounted":
        return f"{units.ms(row.added_ms)} in no operator"
    if row.kind == "only here" or row.ratio is None:
        return f"{row.name} only in {call}"
    return f"{row.name} {row.ratio:.0f}× steady"


def first_call_label(
    slow: dict[str, Any], steady: dict[str, Any], what: str = "first call"
) -> str | None:
    """``first call: aten::mm 14× steady — kernel selection (…)``: the first call's
    (or a later ``what``'s: ``slow call: …``) leading cost against steady state and its likely
    cause; ``None`` where no operator and no unaccounted time stands out."""
    rows = leading(slow, steady, 1)
    if not rows:
        return None
    call = "the first call" if what == "first call" else f"this {what}"
    return f"{what}: {delta_text(rows[0], call)} — {cause_of(rows[0])}"
