"""Short, fixed-width renderings of latencies, durations and settings for narrow panes."""

from __future__ import annotations

from typing import Any

from warmscope.core.knobs import changed

# One latency formatter for the CLI and the TUI lives in core; re-exported for the widgets.
from warmscope.core.units import ms as ms
from warmscope.core.units import num3 as num3
from warmscope.core.units import rate as rate


def seconds(value: float) -> str:
    """Elapsed time: 4.2 s, 1:05, 1:02:03."""
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(int(value), 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def count(n: int) -> str:
    return f"{n:,}"


def show(value: Any) -> str:
    """A knob value as a person would type it."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return "default" if value is None else str(value)


def settings_line(settings: dict[str, Any]) -> str:
    """``preset no-profiling · profiling_executor=off``, or ``defaults``."""
    parts = []
    if settings.get("preset"):
        parts.append(f"preset {settings['preset']}")
    knobs = changed(settings.get("knobs", {}), skip=("mode",))  # mode is shown on its own
    parts += [f"{k}={show(v)}" for k, v in knobs.items()]
    return " · ".join(parts) if parts else "defaults"


METRIC_NAMES = {
    "first_ms": "first iteration",
    "steady_from": "steady from",
    "warmup_excess_ms": "warm-up excess",
    "p50_ms": "p50",
    "p90_ms": "p90",
    "p99_ms": "p99",
    "mean_ms": "mean",
    "cv": "CV",
    "throughput_per_s": "throughput",
}
