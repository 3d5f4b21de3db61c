"""The facts every view of a run shows, computed once; the views only lay them out.

The headless summary and ``compare`` (``cli``), the exports, ``report`` and the TUI's panes all
read a run through this module: its status line, the warm-up rows with their labels and event
titles, the settings that differ (from the defaults, or between two runs), the facts of its
TorchScript graphs, its hints, the compared metrics and how a value is written. Statistics come
from ``RunData.summary()``: one rule set everywhere.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from warmscope.core.base.safe_text import clean_name
from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.child.knobs import changed, knob, show_value
from warmscope.core.data import causes as causes_mod
from warmscope.core.data import contention, first_call, stats, trace_evidence
from warmscope.core.data.intervals import WITHIN_NOISE, Interval, median_interval, upper_median
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.fields import BY_NAME, FIELDS
from warmscope.core.data.settings.setting import shown, shown_value
from warmscope.core.output import verdicts

WARMUP_ROWS = 15
"""At most this many warm-up rows: a run that never settles would list every iteration."""
QUIET_KINDS = ("stderr", "info", first_call.EXPLAINED)
"""Events a warm-up row does not title: raw output and warmscope's own notes (a first call's
explanation has its own lines)."""
METRIC_NAMES = {
    "first_ms": "first iteration",
    "steady_from": "steady from",
    "warmup_excess_ms": "warm-up excess",
    "setup_ms": "set-up",
    "p50_ms": "p50",
    "p90_ms": "p90",
    "p99_ms": "p99",
    "mean_ms": "mean",
    "cv": "CV",
    "throughput_per_s": "throughput",
}

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


@dataclass(frozen=True)
class SettingChange:
    """One setting that differs between two runs, each value as a person would type it."""

    name: str
    a: str
    b: str


def ratio_text(ratio: float | None, verdict: str) -> str:
    """A ratio and its verdict: ``0.26× better``, ``1.00×``; empty where there is no ratio."""
    if ratio is None:
        return ""
    return f"{ratio:.2f}×" + (f" {verdict}" if verdict else "")


@dataclass(frozen=True)
class MetricRow:
    """One compared statistic: ``metric`` is its key (``p50_ms``), ``name`` how it reads."""

    metric: str
    a: float | None
    b: float | None
    ratio: float | None
    within_noise: bool = False
    """The difference is smaller than the runs' own spread: not a difference to call."""
    untold: str = ""
    """Why no verdict can be given (``verdicts.UNTOLD``: one process each, too few
    iterations or processes); empty where the data carry one."""
    a_iv: Interval | None = None
    b_iv: Interval | None = None
    """Each side's median and interval across its processes, where it has several."""

    @property
    def name(self) -> str:
        return METRIC_NAMES.get(self.metric, self.metric)

    @property
    def ratio_text(self) -> str:
        """B against A, in words that read without colour: ``0.26× better``, ``1.80× worse``,
        ``1.01× within noise``, ``4.67× 1 process each``, ``1.00×``; empty where there is
        no ratio."""
        return ratio_text(self.ratio, self.verdict)

    @property
    def better(self) -> bool | None:
        """Whether B is better than A here; ``None`` where there is no difference to call
        (within noise, untold, within ``SAME_WITHIN``, or a metric with no better side)."""
        r = self.ratio
        if r is None or self.within_noise or self.untold or self.metric in NO_BETTER_SIDE:
            return None
        if abs(r - 1.0) <= SAME_WITHIN:
            return None
        return r > 1 if self.metric in HIGHER_IS_BETTER else r < 1

    @property
    def verdict(self) -> str:
        """The difference in a word, so that it reads without colour: ``better``, ``worse``,
        ``within noise``, why none can be told, or nothing."""
        if self.within_noise:
            return "within noise"
        if self.untold:
            return self.untold
        return {True: "better", False: "worse", None: ""}[self.better]


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
    causes: list[causes_mod.Cause] = field(default_factory=list)
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
        shapes=data.shape_rows(),
        idle_probe=data.idle_probe_rows(),
        memory=dict(data.memory),
        inputs_given=inputs_source(data),
        first_calls=first_call.notes(data),
        device=data.device_summary(),
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
    found: list[causes_mod.Cause] | None = None,
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
    by_iteration: dict[int, list[causes_mod.Cause]] = {}
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


SettingsLike: TypeAlias = RunSettings | dict[str, Any]
"""A run's settings, or their JSON form (``RunSettings.to_json``)."""


def _typed(settings: SettingsLike) -> RunSettings:
    return settings if isinstance(settings, RunSettings) else RunSettings.from_json(settings)


def changed_settings(settings: SettingsLike) -> dict[str, str]:
    """The knobs of a run's settings that differ from their defaults, shown; ``mode`` aside
    (every view names the mode on its own)."""
    return {k: show_value(v) for k, v in changed(_typed(settings).knobs, skip=("mode",)).items()}


LINE_FIELDS = ("knobs", "env", "torch_config")
"""What the one-line form names beside the preset: what the run changes of how torch runs."""


def settings_line(settings: SettingsLike) -> str:
    """``preset no-profiling · profiling_executor=off · env.OMP_NUM_THREADS=1``, or
    ``defaults``."""
    typed = _typed(settings)
    parts = [f"preset {typed.preset}"] if typed.preset else []
    parts += [f"{k}={v}" for k, v in changed_settings(typed).items()]
    for name in LINE_FIELDS[1:]:
        parts += [f"{k}={v}" for k, v in shown(BY_NAME[name], typed).items()]
    # Values are names a user or a record chose: one line, nothing hidden in them.
    return clean_name(" · ".join(parts)) if parts else "defaults"


def _absent(field: str, name: str) -> str:
    """How a comparison writes a setting one side leaves at its default: a knob as its own
    default reads (``default``, or its value)."""
    if field == "knobs":
        return show_value(knob(name).default)
    return BY_NAME[field].absent


def settings_diff(a: SettingsLike, b: SettingsLike) -> list[SettingChange]:
    """Every run setting ``FIELDS`` compares that differs between two runs' settings (each
    ``env.*``, ``dynamo.*``/``inductor.*`` option and knob on its own), A then B."""
    ta, tb = _typed(a), _typed(b)
    rows = []
    for f in FIELDS:
        if not f.compared:
            continue
        sa, sb = shown(f, ta), shown(f, tb)
        for name in [*sa, *(n for n in sb if n not in sa)]:
            if name not in sb or name not in sa or sa[name] != sb[name]:
                absent = _absent(f.name, name)
                rows.append(
                    SettingChange(
                        name,
                        shown_value(sa[name]) if name in sa else absent,
                        shown_value(sb[name]) if name in sb else absent,
                    )
                )
    return rows


def run_diff(a: RunData, b: RunData) -> list[SettingChange]:
    """``settings_diff`` of two runs, with the mode as each ran: a preset that names the mode
    a sample runs in anyway (``script``) is no difference."""
    rows = [c for c in settings_diff(a.settings, b.settings) if c.name != "mode"]
    if a.mode != b.mode:
        rows.insert(0, SettingChange("mode", a.mode, b.mode))
    return rows


HIGHER_IS_BETTER = ("throughput_per_s",)
"""Metrics where a larger value is better; for the others (CV aside) a smaller one is."""
NO_BETTER_SIDE = ("cv",)
"""A change of spread is neither better nor worse to call from one run each."""
SAME_WITHIN = 0.05
"""A ratio this close to 1 is no difference to call, noise or not."""

STEADY_METRICS = ("p50_ms", "p90_ms", "p99_ms", "mean_ms", "throughput_per_s")
"""Metrics of the steady state, whose noise each run measures itself (its CV)."""


def _apart(ratio: float) -> float:
    """How far apart two values are, the same both ways: 2.0 and 0.5 are both 1.0 apart."""
    return max(ratio, 1 / ratio) - 1.0


def setup_ms(data: RunData) -> float | None:
    """The time before the first iteration (every phase: import, load, script, …)."""
    return math.fsum(data.phases.values()) if data.phases else None


def _with_setup(
    rows: list[tuple[str, float | None, float | None, float | None]],
    setup: tuple[float | None, float | None] | None,
) -> list[tuple[str, float | None, float | None, float | None]]:
    if setup is None:
        return rows
    va, vb = setup
    ratio = vb / va if va and vb is not None else None
    at = next((n + 1 for n, r in enumerate(rows) if r[0] == "warmup_excess_ms"), len(rows))
    return [*rows[:at], ("setup_ms", va, vb, ratio), *rows[at:]]


def metric_rows(
    a: stats.Summary,
    b: stats.Summary,
    setup: tuple[float | None, float | None] | None = None,
) -> list[MetricRow]:
    """Each compared metric of one process each (``verdicts``' module docstring). First
    iteration, warm-up and set-up (``setup``: each run's, when known) are one value a
    process: untold. A steady-state difference smaller than the larger of the two runs' CVs
    is within noise; a tail percentile without ``TAIL_BEYOND`` iterations beyond it in each
    run is untold."""
    noise = max(a.cv or 0.0, b.cv or 0.0)
    counts = (a.steady_count, b.steady_count)
    return [
        _one_process_row(m, va, vb, r, noise, counts)
        for m, va, vb, r in _with_setup(verdicts.compare(a, b).rows, setup)
    ]


def _one_process_row(
    m: str,
    va: float | None,
    vb: float | None,
    r: float | None,
    noise: float,
    steady_counts: tuple[int, int],
) -> MetricRow:
    untold = ""
    within = False
    if r is None:
        pass
    elif m in verdicts.ONE_PROCESS_METRICS:
        untold = verdicts.ONE_EACH
    elif not all(verdicts.tail_known(m, n) for n in steady_counts):
        untold = verdicts.FEW_ITERATIONS
    elif m in STEADY_METRICS and r > 0 and _apart(r) <= noise:
        within = True
    return MetricRow(m, va, vb, r, within_noise=within, untold=untold)


def _value(metric: str, data: RunData, summary: stats.Summary) -> float | None:
    return setup_ms(data) if metric == "setup_ms" else getattr(summary, metric)


def _middle(metric: str, iv: Interval | None) -> float | None:
    """A side's median; for an iteration number, the upper median, one of its values."""
    if iv is None:
        return None
    return upper_median(iv.values) if metric in WHOLE_METRICS else iv.median


WHOLE_METRICS = ("steady_from",)
"""Metrics that count iterations: their medians are iteration numbers."""


def side_rows(
    a: Sequence[RunData],
    b: Sequence[RunData],
    sa: Sequence[stats.Summary],
    sb: Sequence[stats.Summary],
) -> list[MetricRow]:
    """Each compared metric of two sides, each one process or several. One process each:
    ``metric_rows``. Several each: medians, and verdicts from their intervals
    (``verdicts.interval_verdict``). One against several: one-process metrics are untold,
    steady ones keep the within-run rule on the medians. The same settings on both sides:
    nothing is better or worse (``verdicts.SAME_SETTINGS``)."""
    rows = _side_rows(a, b, sa, sb)
    if not same_settings(a[0], b[0]):
        return rows
    # The same settings twice: whatever differs is process-to-process noise, not an effect.
    return [replace(r, untold=verdicts.SAME_SETTINGS) if r.better is not None else r for r in rows]


def same_settings(a: RunData, b: RunData) -> bool:
    """Whether two runs ran the same target in the same mode with the same settings."""
    return a.settings.target == b.settings.target and not run_diff(a, b)


def _side_rows(
    a: Sequence[RunData],
    b: Sequence[RunData],
    sa: Sequence[stats.Summary],
    sb: Sequence[stats.Summary],
) -> list[MetricRow]:
    if len(a) == 1 and len(b) == 1:
        return metric_rows(sa[0], sb[0], (setup_ms(a[0]), setup_ms(b[0])))
    names = [m for m, *_ in _with_setup(verdicts.compare(sa[0], sb[0]).rows, (None, None))]
    noise = max(s.cv or 0.0 for s in [*sa, *sb])
    counts = (min(s.steady_count for s in sa), min(s.steady_count for s in sb))
    rows = []
    for m in names:
        ia = median_interval([_value(m, d, s) for d, s in zip(a, sa, strict=True)])
        ib = median_interval([_value(m, d, s) for d, s in zip(b, sb, strict=True)])
        va, vb = (_middle(m, iv) for iv in (ia, ib))
        r = vb / va if va and vb is not None else None
        if len(a) == 1 or len(b) == 1:
            row = _one_process_row(m, va, vb, r, noise, counts)
            if row.untold == verdicts.ONE_EACH:
                row = replace(row, untold=verdicts.ONE_SIDE)
        else:
            row = MetricRow(m, va, vb, r)
            if r is None or ia is None or ib is None or m in NO_BETTER_SIDE:
                pass
            elif not all(verdicts.tail_known(m, n) for n in counts):
                row = replace(row, untold=verdicts.FEW_ITERATIONS)
            else:
                told = verdicts.interval_verdict(ia, ib)
                if told == WITHIN_NOISE:
                    row = replace(row, within_noise=True)
                elif told in verdicts.UNTOLD:
                    row = replace(row, untold=told)
        rows.append(replace(row, a_iv=ia if len(a) > 1 else None, b_iv=ib if len(b) > 1 else None))
    return rows


def settings_table(runs: list[RunData]) -> list[tuple[str, list[str]]]:
    """Every setting that differs between the first run and any other: its value in each run
    (as ``run_diff`` writes them: a run with the first's value shows the first's)."""
    names: dict[str, str] = {}
    diffs = []
    for other in runs[1:]:
        diff = {c.name: c for c in run_diff(runs[0], other)}
        diffs.append(diff)
        for c in diff.values():
            names.setdefault(c.name, c.a)
    return [
        (name, [first] + [d[name].b if name in d else first for d in diffs])
        for name, first in names.items()
    ]


RunOrSide: TypeAlias = RunData | Sequence[RunData]
"""One run, or the several processes of one side (repeats of the same settings)."""


def _sides(runs: Sequence[RunOrSide]) -> list[list[RunData]]:
    return [[r] if isinstance(r, RunData) else list(r) for r in runs]


def _status_text(side: list[RunData]) -> str:
    if len(side) == 1:
        return side[0].status
    counts = {s: sum(r.status == s for r in side) for s in dict.fromkeys(r.status for r in side)}
    return ", ".join(f"{s} ×{n}" for s, n in counts.items())


def comparison_notes(rows: Sequence[MetricRow], repeated: bool) -> list[str]:
    """What the untold verdicts mean and how to get them, once each."""
    said = {r.untold for r in rows}
    notes = []
    if repeated:
        notes.append(
            "values are medians across each side's processes with their intervals (order "
            "statistics); a difference is called where the intervals do not overlap and "
            f"identical settings would do that at most {verdicts.LEVEL:.0%} of the time"
        )
    if verdicts.SAME_SETTINGS in said:
        notes.append(
            "same settings: the runs compared ran the same settings, so what differs between "
            "them is process-to-process noise (or the context above), not an effect: its size "
            "is what noise looks like here"
        )
    if verdicts.ONE_EACH in said:
        notes.append(
            "1 process each: a first iteration, warm-up and set-up vary from process to "
            "process, and one process each cannot tell them apart: " + verdicts.MORE_PROCESSES
        )
    if verdicts.ONE_SIDE in said:
        notes.append(
            "1 process a side: a side with one process gives its first iteration, warm-up and "
            "set-up no interval: repeat it too"
        )
    if verdicts.FEW_PROCESSES in said:
        notes.append(
            "too few processes: with so few, identical settings give intervals that miss each "
            f"other more than {verdicts.LEVEL:.0%} of the time; {verdicts.fewest_each()} "
            "processes a side suffice"
        )
    if verdicts.FEW_ITERATIONS in said:
        notes.append(
            f"too few iterations: a tail percentile needs {verdicts.TAIL_BEYOND} steady "
            "iterations beyond it in each run (p90: 100, p99: 1,000): run longer (--iters)"
        )
    return notes


def comparison(
    runs: Sequence[RunOrSide],
    names: list[str],
    summaries: Sequence[stats.Summary | Sequence[stats.Summary]] | None = None,
) -> dict[str, Any]:
    """Runs side by side, each against the first (the baseline): the ``warmscope-comparison``
    document that compare exports (JSON, and Markdown from it). Each entry of ``runs`` is one
    run or a side of several processes with the same settings (``side_rows``).
    ``summaries``: the runs' own (in the same shape) when the caller has them."""
    sides = _sides(runs)
    if summaries is None:
        sums = [[r.summary() for r in side] for side in sides]
    else:
        sums = [[s] if isinstance(s, stats.Summary) else list(s) for s in summaries]
    columns = [side_rows(sides[0], side, sums[0], s) for side, s in zip(sides, sums, strict=True)]
    repeated = any(len(side) > 1 for side in sides)
    metrics = []
    for n, row in enumerate(columns[0]):
        cells = [col[n] for col in columns]
        metric: dict[str, Any] = {
            "metric": row.metric,
            "name": row.name,
            "values": [row.a] + [c.b for c in cells[1:]],
            "ratios": [None] + [c.ratio for c in cells[1:]],
            "verdicts": [""] + [c.verdict for c in cells[1:]],
        }
        if repeated:
            ivs = [row.a_iv] + [c.b_iv for c in cells[1:]]
            metric["intervals"] = [iv.to_json() if iv else None for iv in ivs]
        metrics.append(metric)
    firsts = [side[0] for side in sides]
    return {
        "format": "warmscope-comparison",
        "version": 1,
        "baseline": 0,
        "runs": [
            {
                "name": name,
                "target": side[0].settings.target,
                "mode": side[0].mode,
                "settings": settings_line(side[0].settings),
                "status": _status_text(side),
                "iterations": int(statistics.median(r.count for r in side)),
                "processes": len(side),
                "records": [r.record_path for r in side],
                "record": side[0].record_path,
            }
            for side, name in zip(sides, names, strict=True)
        ],
        "metrics": metrics,
        "settings": [{"name": k, "values": v} for k, v in settings_table(firsts)],
        "context": [row.to_json() for row in verdicts.context_table(sides)],
        "notes": comparison_notes([c for col in columns[1:] for c in col], repeated),
    }
