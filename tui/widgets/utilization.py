"""``UtilizationPane``: the child's CPU and memory, system CPU, and the GPU when sampled."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Sparkline, Static

from warmscope.tui.runs import RunView

# (sample key, name, unit); GPU rows appear only when samples carry them.
METRICS: tuple[tuple[str, str, str], ...] = (
    ("cpu", "child CPU", "%"),
    ("rss_mb", "child RSS", " MB"),
    ("threads", "threads", ""),
    ("sys_cpu", "system CPU", "%"),
    ("gpu_util", "GPU util", "%"),
    ("gpu_mem_mb", "GPU memory", " MB"),
    ("gpu_power_w", "GPU power", " W"),
)


def value_text(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value >= 100:
        return f"{value:,.0f}{unit}"
    return f"{value:g}{unit}" if isinstance(value, float) else f"{value}{unit}"


def gpu_note(view: RunView, env: dict[str, Any], device: str) -> str:
    """Why there are no GPU rows, in a line."""
    if any(k.startswith("gpu_") for s in list(view.samples)[-1:] for k in s):
        return ""
    nvml = str(env.get("nvml") or "")
    if nvml and nvml != "ok":
        return nvml
    if not device.startswith("cuda"):
        gpus = ", ".join(g.get("name", "?") for g in env.get("gpus", []))
        return f"GPU not sampled: the run uses {device}" + (f" ({gpus} present)" if gpus else "")
    return "no GPU samples yet"


class UtilizationPane(Vertical):
    """One row per metric: name, current value, sparkline of the recent samples."""

    def compose(self) -> ComposeResult:
        for key, name, _ in METRICS:
            with Horizontal(id=f"util-{key}", classes="util-row"):
                yield Label(name, classes="util-name")
                yield Label("-", id=f"util-{key}-value", classes="util-value")
                yield Sparkline([], id=f"util-{key}-spark", classes="util-spark")
        yield Static("", id="util-note")

    def show_view(self, view: RunView, env: dict[str, Any], device: str) -> None:
        samples = list(view.samples)
        latest = samples[-1] if samples else {}
        for key, _, unit in METRICS:
            row = self.query_one(f"#util-{key}")
            present = key in latest
            row.display = present or not key.startswith("gpu_")
            if not row.display:
                continue
            self.query_one(f"#util-{key}-value", Label).update(value_text(latest.get(key), unit))
            self.query_one(f"#util-{key}-spark", Sparkline).data = [
                float(s[key]) for s in samples if key in s
            ]
        note = gpu_note(view, env, device)
        self.query_one("#util-note", Static).update(note)
