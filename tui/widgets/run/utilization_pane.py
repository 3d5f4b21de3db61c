"""``UtilizationPane``: the run's GPU as nvitop shows a device, the child's CPU and memory, and
system CPU.

One widget drawing one line per reading, so the pane costs one refresh, not twenty widgets.
On a run with GPU samples the device comes first (``gpu_readout``): a header naming it and the
child's CUDA facts, then each reading against its ceiling, with a bar where it has one and a
sparkline of the newest samples where its history tells something (utilisation, memory,
power); the CPU rows follow. The lines fit the pane's height: a line per reading where there is
room (120x40), temperature with PCIe and the child's two shares on one line each (100x30), and
the CPU rows in one line too (80x24).

A sparkline fills from the left and, once full, jumps half its width (``stable_window``):
between jumps only its newest cells change, and only those are sent to the terminal. Column
widths follow the device's ceilings, not the current values, so a reading that changes
repaints its own cells only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text

from warmscope.core.data import env_keys
from warmscope.core.output import gpu_readout
from warmscope.core.output.gpu_readout import Reading
from warmscope.tui.drawing.chart import hbar, sparkline, stable_window
from warmscope.tui.fmt import cut_whole
from warmscope.tui.glyphs import current
from warmscope.tui.run_view import RunView
from warmscope.tui.widgets.text_lines import TextLines

# (sample key, name, unit, full scale: a fixed ceiling, or None to scale to the samples).
CPU_METRICS: tuple[tuple[str, str, str, float | None], ...] = (
    ("cpu", "child CPU", "%", 100.0),
    ("rss_mb", "child RSS", " MB", None),
    ("threads", "threads", "", None),
    ("sys_cpu", "system CPU", "%", 100.0),
)
NAME_W, VALUE_W = 11, 10
PCT_W = 5
"""A reading's share of its ceiling, `` 100%``, between its text and its bar."""
BAR_MIN, SPARK_MIN = 3, 10
"""The narrowest bar and sparkline worth drawing: narrower, a GPU row draws its bar alone,
then its figures alone."""


def value_text(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}{unit}" if value >= 100 else f"{value:.1f}{unit}"
    return f"{value}{unit}"


def gpu_note(samples: list[dict[str, Any]], env: dict[str, Any], device: str) -> str:
    """Why there are no GPU rows, in a line; with GPU rows, the readings the device does not
    report (empty when it reports all)."""
    if samples and gpu_readout.has_gpu(samples[-1]):
        return gpu_readout.not_reported(env)
    nvml = str(env.get("nvml") or "")
    if nvml and nvml != "ok":
        return nvml
    if not device.startswith("cuda"):
        gpus = ", ".join(str(g.get("name", "?")) for g in env.get("gpus", []))
        return f"GPU not sampled: the run uses {device}" + (f" ({gpus} present)" if gpus else "")
    return "no GPU samples yet"


@dataclass(frozen=True)
class Layout:
    """How the GPU readings and the CPU rows share the pane's lines."""

    roomy: bool
    """A line a reading, the CPU rows apart, and the note on what the device does not report
    (else ``gpu_readout``'s compact readings)."""
    cpu_rows: bool
    """The CPU rows a line each (else all in one line)."""


ROOMY_GPU = 1 + len(gpu_readout.readings({}, {}))
COMPACT_GPU = 1 + len(gpu_readout.readings({}, {}, compact=True))
"""The lines of the GPU block, its header included: a reading a line, or compact."""


def fit(height: int, note: bool) -> Layout:
    """The layout for a pane ``height`` lines high: every reading on its own line where all
    of it fits; else the compact readings; and at the least the CPU rows in one line too."""
    cpu = len(CPU_METRICS)
    if height >= ROOMY_GPU + 1 + cpu + (2 if note else 0):
        return Layout(roomy=True, cpu_rows=True)
    return Layout(roomy=False, cpu_rows=height >= COMPACT_GPU + cpu)


class UtilizationPane(TextLines):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "utilization--header",
        "utilization--name",
        "utilization--spark",
        "utilization--bar",
        "utilization--track",
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

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"utilization--{name}", partial=True)

    def _shown(self, width: int) -> list[dict[str, Any]]:
        """The samples a sparkline ``width`` cells wide draws (``stable_window``)."""
        dropped = self._total - len(self.samples)
        return self.samples[max(0, stable_window(self._total, width) - dropped) :]

    def _header(self, width: int) -> Text:
        text = cut_whole(gpu_readout.device_line(self.env, self.device), width, current().ellipsis)
        return Text(text, style=self._style("header"))

    def build_lines(self, width: int, height: int) -> list[Text]:
        latest = self.samples[-1] if self.samples else {}
        note = gpu_note(self.samples, self.env, self.device)
        lines: list[Text] = []
        if gpu_readout.has_gpu(latest):
            layout = fit(height, bool(note))
            readings = gpu_readout.readings(latest, self.env, compact=not layout.roomy)
            lines.append(self._header(width))
            lines += self._gpu_rows(readings, width)
            if layout.roomy:
                lines.append(Text(""))
            if layout.cpu_rows:
                lines += self._cpu_rows(latest, width)
            else:
                lines.append(self._cpu_line(latest, width))
            if not layout.roomy:
                return lines  # what the note names reads N/A in its row already
        else:
            if env_keys.cuda_device(self.env):  # a CUDA run NVML did not sample
                lines.append(self._header(width))
            lines += self._cpu_rows(latest, width)
        if note:
            lines += [Text(""), Text(note, style=self._style("note"))]
        return lines

    def _gpu_rows(self, readings: list[Reading], width: int) -> list[Text]:
        """One line a reading: its name, its text right-aligned in a column as wide as its
        ceilings make it, its share of the ceiling, a bar, a sparkline."""
        charted = [r for r in readings if r.fraction is not None or r.key]
        value_w = max([r.room for r in charted] + [len(r.text) for r in charted] + [4])
        rest = width - NAME_W - value_w - PCT_W - 1
        bar_w = spark_w = 0
        if rest >= BAR_MIN + 1 + SPARK_MIN:
            bar_w = max(BAR_MIN, rest // 3)
            spark_w = rest - bar_w - 1
        elif rest >= BAR_MIN:
            bar_w = rest
        shown = self._shown(spark_w)
        name, bar_style, track, spark = (self._style(s) for s in ("name", "bar", "track", "spark"))
        lines = []
        for r in readings:
            line = Text(f"{r.label:<{NAME_W}}", style=name)
            if r.fraction is None and not r.key:  # a figure alone, or several in a line
                text = r.text.rjust(value_w)
                line.append(cut_whole(text, width - NAME_W, current().ellipsis))
                lines.append(line)
                continue
            line.append(r.text.rjust(value_w))
            if r.fraction is not None and not r.text.endswith("%"):
                line.append(f"{r.fraction * 100:.0f}%".rjust(PCT_W))
            else:
                line.append(" " * PCT_W)
            line.append(" ")
            filled, empty = hbar(r.fraction or 0.0, bar_w)
            line.append(filled, style=bar_style)
            line.append(empty, style=track)
            if spark_w and r.key:
                values = [float(s[r.key]) for s in shown if r.key in s]
                line.append(" ")
                line.append(sparkline(values, spark_w, top=r.top), style=spark)
            lines.append(line)
        return lines

    def _cpu_rows(self, latest: dict[str, Any], width: int) -> list[Text]:
        spark_w = max(0, width - NAME_W - VALUE_W - 1)
        shown = self._shown(spark_w)
        name, spark = self._style("name"), self._style("spark")
        lines = []
        for key, label, unit, scale in CPU_METRICS:
            values = [float(s[key]) for s in shown if key in s]
            line = Text(f"{label:<{NAME_W}}", style=name)
            line.append(f"{value_text(latest.get(key), unit):>{VALUE_W - 1}} ")
            line.append(sparkline(values, spark_w, top=scale), style=spark)
            lines.append(line)
        return lines

    def _cpu_line(self, latest: dict[str, Any], width: int) -> Text:
        """The CPU rows in one line, where the pane has no room for theirs: the child's CPU,
        the system's, the child's memory and threads, as many as fit whole."""
        threads = latest.get("threads")
        parts = (
            value_text(latest.get("cpu"), "%"),
            f"system {value_text(latest.get('sys_cpu'), '%')}",
            f"RSS {value_text(latest.get('rss_mb'), ' MB')}",
            f"{value_text(threads, '')} thread{'' if threads == 1 else 's'}",
        )
        line = Text(f"{'child CPU':<{NAME_W}}", style=self._style("name"))
        line.append(cut_whole(" · ".join(parts), width - NAME_W, current().ellipsis))
        return line
