"""The facts every view of a run shows, computed once; the views only lay them out.

The headless summary (``cli``), the exports, ``report`` and the TUI's panes all read a run
through this module: its status line, the warm-up rows with their labels, causes and event
titles, its inputs, memory and device, the facts of its TorchScript graphs. Statistics come
from ``RunData.summary()``: one rule set everywhere. Its settings as written:
``settings_diff``; runs compared: ``comparison``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from warmscope.core.base.safe_text import clean_name
from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.data import causes as causes_mod
from warmscope.core.data import contention, first_call, stats, trace_evidence
from warmscope.core.data.cause_kinds import Cause
from warmscope.core.data.run import RunData
from warmscope.core.data.summary_rows import device_summary, idle_probe_rows, shape_rows
from warmscope.core.output.settings_diff import changed_settings, settings_line

WARMUP_ROWS = 15
"""At most this many warm-up rows: a run that never settles would list every iteration."""
QUIET_KINDS = ("stderr", "info", first_call.EXPLAINED)
"""Events a warm-up row does not title: raw output and warmscope's own notes (a first call's
explanation has its own lines)."""

GRAPH_NODE_KINDS = (
    ("prim::CallMethod", "submodule calls"),
    ("prim::If", "branches"),
    ("prim::profile", "profile nodes"),
    ("prim::TypeCheck", "type guards"),
    ("prim::RequiresGradCheck", "requires-grad guards"),
    ("prim::BailOut", "bailouts"),
    ("prim::TensorExprGroup", "TensorExpr fusion groups"),
    ("prim::FusionGroup", "fusion groups"),
    ("prim::DifferentiableGraph", "differentiable graphs"),
)
"""Node kinds the profiling executor adds (profile nodes, guards) or makes (fusion groups)."""
OPERATOR_NAMESPACES = ("aten", "quantized", "prepacked", "mkldnn")


@dataclass(frozen=True)
class WarmupRow:
    """One iteration before steady state, or a later one whose events show warm-up work."""

    iteration: int
    ms: float
    label: str
    """``profiling run``, ``optimization``, ``compile``, ``recompile``; empty if none applies."""
    profiled: bool
    titles: tuple[str, ...]
    """Its events' titles, repeats counted (``NoOpt Graph ×6``): what caused it first,
    warnings after (a warning never titles a call that compiled)."""
    causes: str = ""
    """Its causes, the costliest first (``causes.label``): ``the compile 3.32 s · CUDA graph
    warm-up 163 ms``; empty where no evidence names one."""

    @property
    def label_text(self) -> str:
        return ((self.causes or self.label) + (" (profiled)" if self.profiled else "")).strip()

    def titles_text(self, limit: int = 150) -> str:
        text = "; ".join(self.titles)
        return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class GraphFacts:
    """What a TorchScript graph holds, in counts."""

    lines: int
    operators: int
    nodes: tuple[tuple[str, int], ...]
    """``(kind, count)`` for each node kind of ``GRAPH_NODE_KINDS`` present."""

    def text(self, sep: str = ", ") -> str:
        if not self.lines:
            return "not captured"
        parts = [f"{self.lines} lines", f"{self.operators} operator nodes"]
        parts += [f"{n} {name}" for name, n in self.nodes]
        return sep.join(parts)


def graph_facts(graph: str) -> GraphFacts:
    lines = [ln for ln in graph.splitlines() if ln.strip()]
    operators = sum(graph.count(f" = {ns}::") for ns in OPERATOR_NAMESPACES)
    nodes = tuple(
        (name, graph.count(needle)) for needle, name in GRAPH_NODE_KINDS if needle in graph
    )
    return GraphFacts(len(lines), operators, nodes)


@dataclass
class RunDigest:
    """One run, as every view shows it."""

    target: str
    mode: str
    status: str
    status_detail: str
    summary: stats.Summary
    count: int
    preset: str | None
    changed: dict[str, str]
    """Knobs that differ from their defaults (``mode`` aside: it is named on its own)."""
    phases: dict[str, float]
    warmup: list[WarmupRow]
    inputs: list[str]
    notes: list[str] = field(default_factory=list)
    """What the child said about the knobs: one torch lacks, a value it refused."""
    record_path: str | None = None
    warnings: list[str] = field(default_factory=list)
    """Why the figures may mislead: a noisy steady state, a warm-up hidden in the noise."""
    noisy: bool = False
    shapes: list[dict[str, Any]] = field(default_factory=list)
    """Per-shape rows when ``--dim`` varies the inputs (``RunData.shape_rows``)."""
    idle_probe: list[dict[str, Any]] = field(default_factory=list)
    """``--idle-probe`` rows, each against the steady p50 (``RunData.idle_probe_rows``)."""
    memory: dict[str, float] = field(default_factory=dict)
    """The child's peak memory: ``peak_rss_mb``, ``cuda_max_allocated_mb``."""
    inputs_given: str = ""
    """Where the inputs came from, in words: ``--input``, ``--inputs FILE``, the target."""
    first_calls: list[dict[str, Any]] = field(default_factory=list)
    """Slow first calls explained by their profiles against steady state
    (``first_call.notes``)."""
    device: dict[str, Any] | None = None
    """On CUDA, how busy the device was in a steady call (``RunData.device_summary``)."""
    causes: list[Cause] = field(default_factory=list)
    """Every cause the run's evidence names (``causes.run_causes``): setup phases', then each
    slow call's."""

    @property
    def status_text(self) -> str:
        """``ok (200 iterations)``, ``failed (iteration 3: RuntimeError: …)``."""
        return self.status + (f" ({self.status_detail})" if self.status_detail else "")

    settings_text: str = "defaults"
    """``preset no-profiling · profiling_executor=off``, or ``defaults``."""


def digest(data: RunData, max_warmup: int = WARMUP_ROWS) -> RunDigest:
    summary = data.summary()
    warns = data.warnings() if data.count else []
    found = causes_mod.run_causes(data, trace_evidence.for_run(data))
    return RunDigest(
        target=clean_name(data.settings.target or "?"),
        mode=data.mode,
        status=data.status,
        status_detail=data.status_detail,
        summary=summary,
        count=data.count,
        preset=data.settings.preset,
        changed=changed_settings(data.settings),
        phases=dict(data.phases),
        warmup=warmup_rows(data, summary, max_warmup, found),
        inputs=run_inputs(data),
        notes=[e.title for e in data.events if e.kind == "knob"],
        record_path=data.record_path,
        settings_text=settings_line(data.settings),
        warnings=[w.text for w in warns] + contention.warnings(data),
        noisy=any(w.noisy for w in warns),
        shapes=shape_rows(data),
        idle_probe=idle_probe_rows(data),
        memory=dict(data.memory),
        inputs_given=inputs_source(data),
        first_calls=first_call.notes(data),
        device=device_summary(data),
        causes=found,
    )


BOUND_WHY = {
    "launch-bound": "the GPU waits on the host's launches (CUDA graphs, torch.compile's "
    "reduce-overhead, or fewer and larger kernels help)",
    "device-bound": "the host waits on the GPU (faster kernels help; fewer launches do not)",
    "mixed": "the GPU and the host each wait on the other part of the time",
}


def device_text(device: dict[str, Any], why: bool = False) -> str:
    """``p50 324 µs on the device, 91% of the host's 355 µs · forward returns after 96%:
    launch-bound``: how busy the device was in a steady call."""
    share = device.get("device_share")
    text = f"p50 {fmt_ms(device['p50_ms'])} on the device"
    if isinstance(share, (int, float)):
        text += f", {share * 100:.0f}% of the host's {fmt_ms(device['host_p50_ms'])}"
    text += (
        f" · forward returns after {device['launch_share'] * 100:.0f}% of the call: "
        f"{device['bound']}"
    )
    if why and device["bound"] in BOUND_WHY:
        text += f" ({BOUND_WHY[device['bound']]})"
    return text


def run_inputs(data: RunData) -> list[str]:
    """What the model was given: the ``--input`` specs as typed (symbolic dimensions and value
    generators included), else what the child built or loaded (the factory's own inputs too)."""
    specs = list(data.settings.inputs)
    if specs:
        return specs
    if data.inputs:
        return list(data.inputs)
    return list(data.target.get("default_inputs") or [])


def inputs_source(data: RunData) -> str:
    settings = data.settings
    if settings.inputs_file:
        return f"--inputs {settings.inputs_file}"
    if settings.inputs:
        return "--input"
    if data.inputs_source == "target" or data.inputs:
        return "the target's own example inputs"
    return ""


def memory_text(memory: dict[str, float]) -> str:
    """``peak RSS 412 MB · CUDA max allocated 1,024 MB``, or empty."""
    parts = []
    if "peak_rss_mb" in memory:
        parts.append(f"peak RSS {memory['peak_rss_mb']:,.0f} MB")
    if "cuda_max_allocated_mb" in memory:
        parts.append(f"CUDA max allocated {memory['cuda_max_allocated_mb']:,.0f} MB")
    return " · ".join(parts)


@dataclass(frozen=True)
class ShapeCells:
    """A per-shape row (``RunData.shape_rows``) as every view writes it."""

    first: str
    """``#12``: the iteration of its first call."""
    ratio: str
    """``2.90×``: its first call against its own steady p50."""
    steady_from: str


def shape_cells(row: dict[str, Any]) -> ShapeCells:
    def at(key: str) -> str:
        return "-" if row.get(key) is None else f"#{row[key]}"

    ratio = "-" if row.get("first_vs_p50") is None else f"{row['first_vs_p50']:.2f}×"
    return ShapeCells(at("first_iteration"), ratio, at("steady_from"))


def event_list_text(events: list[dict[str, Any]], limit: int = 100) -> str:
    """A shape row's first-call events: ``recompile: …; Profiled Graph ×2``."""
    text = "; ".join(
        e["title"] + (f" ×{e['count']}" if e.get("count", 1) > 1 else "") for e in events
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"


def warmup_rows(
    data: RunData,
    summary: stats.Summary,
    limit: int = WARMUP_ROWS,
    found: list[Cause] | None = None,
) -> list[WarmupRow]:
    """The iterations before ``steady_from`` that are slower than the steady p50, and any
    that are labelled (a profiling run, a recompile) or profiled in the run itself. A fast
    iteration inside the warm-up (noise) is not called slow. When the shapes vary, each shape's own: its
    iterations before that shape is steady, against that shape's p50."""
    if data.shape_keys:
        chosen = {
            i
            for idx, s in data.shape_summaries()
            for i in idx
            if (s.steady_from is None or i < s.steady_from)
            and (s.p50_ms is None or data.latency(i) > s.p50_ms)
        }
    else:
        p50 = summary.p50_ms
        chosen = {
            i
            for i in range(min(summary.steady_from or 0, data.count))
            if p50 is None or data.latency(i) > p50
        }
    chosen.update(data.labelled())
    here = set(data.profiled_here())
    chosen.update(here)
    by_iteration: dict[int, list[Cause]] = {}
    for c in found if found is not None else causes_mod.run_causes(data):
        if c.iteration is not None:
            by_iteration.setdefault(c.iteration, []).append(c)
    chosen.update(i for i in by_iteration if i in data.slow_first_calls())
    return [
        WarmupRow(
            iteration=i,
            ms=data.latency(i),
            label=data.label(i) or "",
            profiled=i in here,
            titles=event_titles(data, i),
            causes=causes_mod.label(by_iteration.get(i, [])),
        )
        for i in sorted(i for i in chosen if i < data.count)[:limit]
    ]


def event_titles(data: RunData, iteration: int) -> tuple[str, ...]:
    """The titles of an iteration's events, repeats counted; warnings after the events that
    say what the call did (a compile's warning never titles the compile)."""
    counts: dict[str, int] = {}
    events = data.events_at(iteration)
    for e in sorted(events, key=lambda e: e.kind == "warning"):
        if e.kind not in QUIET_KINDS:
            counts[e.title] = counts.get(e.title, 0) + 1
    return tuple(t if n == 1 else f"{t} ×{n}" for t, n in counts.items())
