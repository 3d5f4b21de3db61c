"""Latencies as people read them: three significant digits in the unit that fits.

One place picks the unit (``select_unit``) and one writes the digits (``num3``): a single value
takes its own unit (``ms``); a column or an interval takes one unit for all its values
(``column_unit``, ``in_unit``), so they read against each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

UNITS = ((1000.0, "s"), (1.0, "ms"), (0.001, "µs"))
"""Each unit in milliseconds, largest first."""


def num3(value: float) -> str:
    """Three significant digits without an exponent: 1.23, 12.3, 123, 1234."""
    if value >= 99.95:
        return f"{value:.0f}"
    if value >= 9.995:
        return f"{value:.1f}"
    return f"{value:.2f}"


def select_unit(value: float) -> tuple[float, str]:
    """The unit (its size in ms, its name) that shows ``value`` ms with three significant
    digits: 1.34 s, 18.7 ms, 25.1 µs. Zero reads in ms."""
    size = abs(value)
    if size >= 999.5:
        return UNITS[0]
    if size >= 0.9995 or size == 0:
        return UNITS[1]
    return UNITS[2]


def column_unit(values: Iterable[float | None]) -> tuple[float, str]:
    """One unit for a column of latencies: the one its smallest value needs, so that no value
    of the column loses its digits."""
    present = [abs(v) for v in values if v is not None]
    return select_unit(min(present)) if present else UNITS[1]


def in_unit(value: float | None, unit: tuple[float, str], *, suffix: bool = True) -> str:
    """``value`` ms in ``unit``: ``18.7 ms`` (or ``18.7`` without its suffix); ``-`` if none."""
    if value is None:
        return "-"
    scale, name = unit
    digits = num3(value / scale) if value >= 0 else "-" + num3(-value / scale)
    return f"{digits} {name}" if suffix else digits


def ms(value: float | None) -> str:
    """A latency in the unit that keeps three significant digits: 1.34 s, 18.7 ms, 25.1 µs."""
    if value is None:
        return "-"
    return in_unit(value, select_unit(value))


def metric(name: str, value: float | None) -> str:
    """One value of a ``verdicts.compare`` row, as the CLI and the TUI show it."""
    if value is None:
        return "-"
    if name.endswith("_ms"):
        return ms(value)
    if name == "cv":
        return f"{value * 100:.1f}%"
    if name == "steady_from":
        return f"#{int(value)}"
    if name == "throughput_per_s":
        return rate(value)
    return f"{value:,.3g}"


def rate(per_s: float | None) -> str:
    """Iterations a second: 2,334 it/s, 12.5 it/s."""
    if not per_s:
        return "-"
    if per_s >= 100:
        return f"{per_s:,.0f} it/s"
    return f"{per_s:.1f} it/s"


def ratio_interval(stat: dict[str, Any]) -> str:
    """A ratio's median with its interval across processes: ``1.32× (0.57–1.79)``."""
    if stat.get("median") is None:
        return "-"
    return f"{num3(stat['median'])}× ({num3(stat['lo'])}–{num3(stat['hi'])})"


DURATION_UNITS = {"s": 1000.0, "ms": 1.0, "us": 0.001, "µs": 0.001}


def parse_duration_ms(text: str) -> float:
    """``200us``, ``1.5ms``, ``2s`` -> milliseconds; ``ValueError`` naming the forms taken."""
    raw = text.strip()
    for unit in sorted(DURATION_UNITS, key=len, reverse=True):
        if raw.endswith(unit):
            number = raw[: -len(unit)].strip()
            try:
                value = float(number)
            except ValueError:
                break
            if value >= 0 and value != float("inf"):
                return value * DURATION_UNITS[unit]
            break
    raise ValueError(f"expected a duration such as 200us, 1.5ms or 2s, got {text!r}")
