"""``UtilizationPane``: the child's CPU and memory, system CPU, and the GPU when sampled.

One widget drawing one line per metric (name, current value, a sparkline of the newest
samples, one per column), so a pane of seven metrics costs one refresh, not twenty widgets.
A sparkline fills from the left and, once full, jumps half its width (``stable_window``):
between jumps only its newest cells change, and only those are sent to the terminal.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text

from warmscope.core.data import env_keys
from warmscope.tui.chart import sparkline, stable_window
from warmscope.tui.runs import RunView
from warmscope.tui.text_lines import TextLines

# (sample key, name, unit, full scale: a fixed ceiling, or None to scale to the samples).
METRICS: tuple[tuple[str, str, str, float | None], ...] = (
    ("cpu", "child CPU", "%", 100.0),
    ("rss_mb", "child RSS", " MB", None),
    ("threads", "threads", "", None),
    ("sys_cpu", "system CPU", "%", 100.0),
    ("gpu_util", "GPU util", "%", 100.0),
    ("gpu_proc_sm", "child SM", "%", 100.0),
    ("gpu_mem_mb", "GPU memory", " MB", None),
    ("gpu_proc_mem_mb", "child VRAM", " MB", None),
    ("gpu_sm_mhz", "SM clock", " MHz", None),
    ("gpu_power_w", "GPU power", " W", None),
    ("gpu_temp_c", "GPU temp", "°C", None),
    ("gpu_pcie_tx_mbs", "PCIe tx", " MB/s", None),
    ("gpu_pcie_rx_mbs", "PCIe rx", " MB/s", None),
)
LIMITS = {"gpu_sm_mhz": "sm_max_mhz", "gpu_power_w": "power_limit_w", "gpu_mem_mb": "memory_mb"}
"""Readings drawn against the device's own ceiling (from the record's ``env.gpu``), not the
largest value seen: a clock at 1,410 of 1,980 MHz reads as throttled, not as full."""
NAME_W, VALUE_W = 11, 10


def value_text(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}{unit}" if value >= 100 else f"{value:.1f}{unit}"
    return f"{value}{unit}"


def gpu_note(samples: list[dict[str, Any]], env: dict[str, Any], device: str) -> str:
    """Why there are no GPU rows, in a line (empty when there are)."""
    if samples and any(k.startswith("gpu_") for k in samples[-1]):
        gpu = env_keys.nvml_gpu(env)
        if not gpu:
            return ""
        text = env_keys.shown(env, "gpu")
        if gpu.get("unsupported"):
            text += " · not reported: " + ", ".join(map(str, gpu["unsupported"]))
        return text
    nvml = str(env.get("nvml") or "")
    if nvml and nvml != "ok":
        return nvml
    if not device.startswith("cuda"):
        gpus = ", ".join(str(g.get("name", "?")) for g in env.get("gpus", []))
        return f"GPU not sampled: the run uses {device}" + (f" ({gpus} present)" if gpus else "")
    return "no GPU samples yet"


class UtilizationPane(TextLines):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "utilization--name",
        "utilization--spark",
        "utilization--note",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.samples: list[dict[str, Any]] = []
        self.env: dict[str, Any] = {}
        self.device = "cpu"
        self._view: RunView | None = None
        self._total = 0
        """Samples of the view so far, those its bounded list has dropped included."""

    def show_view(self, view: RunView, env: dict[str, Any], device: str) -> None:
        samples = list(view.samples)
        added = len(samples)
        if view is self._view and self.samples:
            last = self.samples[-1]
            for k in range(len(samples) - 1, -1, -1):
                if samples[k] is last:
                    added = len(samples) - 1 - k
                    break
        else:
            self._total = 0
        self._view = view
        self._total += added
        self.samples = samples
        self.env = env
        self.device = device
        self.redraw()

    def build_lines(self, width: int, height: int) -> list[Text]:
        spark_w = max(0, width - NAME_W - VALUE_W - 1)
        latest = self.samples[-1] if self.samples else {}
        name_style = self.get_component_rich_style("utilization--name", partial=True)
        spark_style = self.get_component_rich_style("utilization--spark", partial=True)
        dropped = self._total - len(self.samples)
        shown = self.samples[max(0, stable_window(self._total, spark_w) - dropped) :]
        lines = []
        ceilings = env_keys.nvml_gpu(self.env)
        for key, name, unit, scale in METRICS:
            if key.startswith("gpu_") and key not in latest:
                continue
            ceiling = ceilings.get(LIMITS.get(key, ""))
            if isinstance(ceiling, (int, float)) and ceiling > 0:
                scale = float(ceiling)
            values = [float(s[key]) for s in shown if key in s]
            line = Text(f"{name:<{NAME_W}}", style=name_style)
            line.append(f"{value_text(latest.get(key), unit):>{VALUE_W - 1}} ")
            line.append(sparkline(values, spark_w, top=scale), style=spark_style)
            lines.append(line)
        note = gpu_note(self.samples, self.env, self.device)
        if note:
            style = self.get_component_rich_style("utilization--note", partial=True)
            lines += [Text(""), Text(note, style=style)]
        return lines
