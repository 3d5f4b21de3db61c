"""Latencies as people read them: three significant digits in the unit that fits."""

from __future__ import annotations


def num3(value: float) -> str:
    """Three significant digits without an exponent: 1.23, 12.3, 123, 1234."""
    if value >= 99.95:
        return f"{value:.0f}"
    if value >= 9.995:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ms(value: float | None) -> str:
    """A latency in the unit that keeps three significant digits: 1.34 s, 18.7 ms, 25.1 µs."""
    if value is None:
        return "-"
    if value >= 999.5:
        return f"{num3(value / 1000)} s"
    if value >= 0.9995:
        return f"{num3(value)} ms"
    return f"{num3(value * 1000)} µs"


def metric(name: str, value: float | None) -> str:
    """One value of a ``stats.compare`` row, as the CLI and the TUI show it."""
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
