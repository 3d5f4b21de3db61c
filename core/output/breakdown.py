"""Where a slow iteration's time went, against a steady one: pure functions over breakdowns.

A breakdown is what the agent sends for a profiled iteration (see ``core/child/opprofile.py``):
``wall_ms``, ``ops_ms``, ``unaccounted_ms`` and ``ops`` (name, self_ms, total_ms, calls, shapes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

UNACCOUNTED = "(not in any operator)"
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
