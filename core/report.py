"""``warmscope report``: a Markdown report of one run, to paste into a forum post or a bug.

It reads well as plain text: environment, the settings that differ from the defaults, the
latency summary, the warm-up iterations with their labels and events, where the slow
iterations' time went against a steady one, hints the data supports, and the command that
reproduces the run.
"""

from __future__ import annotations

import shlex

from warmscope.core.breakdown import diff, steady_reference
from warmscope.core.export import changed_knobs
from warmscope.core.hints import hints
from warmscope.core.run import RunData
from warmscope.core.settings import RunSettings

MAX_WARMUP_ROWS = 15
MAX_DIFF_ROWS = 8


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def report(data: RunData, compared: RunData | None = None) -> str:
    s = data.summary()
    env = data.env
    target = data.settings.get("target", "?")
    out = [f"# warmscope report: `{target}`", ""]
    status = f"**{data.status}**" + (f" ({data.status_detail})" if data.status_detail else "")
    out += [f"Run of {data.started or 'unknown time'}: {status}.", ""]

    out += ["## Environment", "", "| | |", "| --- | --- |"]
    rows = [
        ("torch", env.get("torch")),
        ("Python", env.get("python")),
        (
            "CPU",
            f"{env.get('cpu_model', '?')}, {env.get('cpu_logical', '?')} logical / {env.get('cpu_physical', '?')} physical cores",
        ),
        (
            "threads",
            f"{env.get('intra_op_threads', '?')} intra-op, {env.get('inter_op_threads', '?')} inter-op",
        ),
        ("GPU", _gpu(env)),
        ("CUDA (torch build)", env.get("torch_cuda")),
        ("platform", env.get("platform")),
    ]
    out += [f"| {k} | {v} |" for k, v in rows if v not in (None, "")]
    out.append("")

    changed = changed_knobs(data)
    out += ["## Settings", ""]
    if changed:
        out += [f"- `{k}` = `{_show(v)}`" for k, v in changed.items()]
    else:
        out.append("All knobs at their defaults.")
    mode = data.settings.get("knobs", {}).get("mode") or data.target.get("default_mode")
    out += [f"- mode: `{mode}`, inputs: {', '.join(f'`{i}`' for i in _inputs(data)) or '-'}", ""]

    out += [
        "## Latency (ms)",
        "",
        "| first | steady from | warm-up excess | p50 | p90 | p99 | mean | CV |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    cv = "-" if s.cv is None else f"{s.cv * 100:.1f}%"
    steady = "-" if s.steady_from is None else f"#{s.steady_from}"
    out.append(
        f"| {ms(s.first_ms)} | {steady} | {ms(s.warmup_excess_ms)} | {ms(s.p50_ms)} | {ms(s.p90_ms)} "
        f"| {ms(s.p99_ms)} | {ms(s.mean_ms)} | {cv} |"
    )
    out.append("")
    out.append(
        f"{s.count} iterations; statistics over the {s.steady_count} steady ones"
        + (f", {len(data.profiles)} profiled iteration(s) left out." if data.profiles else ".")
    )
    if data.phases:
        out.append(
            "Before the first iteration: "
            + ", ".join(f"{k} {v:.1f} ms" for k, v in data.phases.items())
            + "."
        )
    out.append("")

    warm = sorted(
        set(range(min(s.steady_from or 0, data.count))) | set(data.labelled()) | set(data.profiles)
    )
    if warm:
        out += [
            "## Warm-up iterations",
            "",
            "| iteration | ms | label | events |",
            "| ---: | ---: | --- | --- |",
        ]
        for i in warm[:MAX_WARMUP_ROWS]:
            if i >= data.count:
                continue
            titles = _titles(data, i)
            label = (data.label(i) or "") + (" (profiled)" if i in data.profiles else "")
            out.append(f"| {i} | {data.ms[i]:.3f} | {label.strip()} | {titles} |")
        out.append("")

    ref = steady_reference(data.profiles, s.steady_from)
    slow = [i for i in sorted(data.profiles) if i != ref]
    if data.profiles:
        out += ["## Where the time went", ""]
        out += [
            "| iteration | wall ms | in operators | not in any operator |",
            "| ---: | ---: | ---: | ---: |",
        ]
        for i in sorted(data.profiles):
            p = data.profiles[i]
            tag = " (steady)" if i == ref else ""
            out.append(
                f"| {i}{tag} | {ms(p.get('wall_ms'))} | {ms(p.get('ops_ms'))} | {ms(p.get('unaccounted_ms'))} |"
            )
        out.append("")
        if ref is not None:
            for i in slow:
                rows_ = diff(data.profiles[i], data.profiles[ref])[:MAX_DIFF_ROWS]
                if not rows_:
                    continue
                out += [
                    f"Iteration {i} against steady iteration {ref}, by what each adds:",
                    "",
                    "| operator | ms here | ms steady | adds | calls |",
                    "| --- | ---: | ---: | ---: | ---: |",
                ]
                for d in rows_:
                    calls = f"{d.calls_slow}/{d.calls_steady}" if d.kind != "unaccounted" else ""
                    steady_ms = ms(d.steady_ms) if d.kind != "only here" else "not run"
                    out.append(
                        f"| `{d.name}` | {ms(d.slow_ms)} | {steady_ms} | {ms(d.added_ms)} | {calls} |"
                    )
                out.append("")
        else:
            out += [
                "No profiled iteration is in steady state: add `steady` to `--profile-iters` for a comparison.",
                "",
            ]
        traces = [p["trace"] for p in data.profiles.values() if p.get("trace")]
        if traces:
            out += [
                "Chrome traces (open in https://ui.perfetto.dev or chrome://tracing): "
                + ", ".join(f"`{t}`" for t in traces),
                "",
            ]

    if data.graphs:
        out += ["## TorchScript graphs", ""]
        loaded = data.graphs.get("graph", "")
        optimized = data.graphs.get("optimized", "")
        out.append(
            f"Graph as loaded: {_graph_facts(loaded)}. Graph executed last, once warm: {_graph_facts(optimized)}."
        )
        out.append("")

    found = hints(data, compared)
    if found:
        out += ["## Hints", ""] + [f"- {h}" for h in found] + [""]

    out += ["## Reproduce", "", "```sh", shlex.join(reproduce(data)), "```", ""]
    return "\n".join(out)


def reproduce(data: RunData) -> list[str]:
    try:
        return RunSettings.from_json(data.settings).command_line()
    except (TypeError, ValueError):
        return data.command or ["warmscope", "run", str(data.settings.get("target", "?"))]


def _graph_facts(graph: str) -> str:
    if not graph:
        return "not captured"
    lines = [ln for ln in graph.splitlines() if ln.strip()]
    operators = sum(
        graph.count(f" = {ns}::") for ns in ("aten", "quantized", "prepacked", "mkldnn")
    )
    facts = [f"{len(lines)} lines", f"{operators} operator nodes"]
    for needle, name in (
        ("prim::CallMethod", "submodule calls (not inlined)"),
        ("prim::If", "branches"),
        ("prim::profile", "profile nodes"),
        ("prim::TypeCheck", "type guards"),
        ("prim::RequiresGradCheck", "requires-grad guards"),
        ("prim::TensorExprGroup", "TensorExpr fusion groups"),
        ("prim::FusionGroup", "fusion groups"),
        ("prim::DifferentiableGraph", "differentiable graphs"),
        ("prim::BailOut", "bailouts"),
    ):
        n = graph.count(needle)
        if n:
            facts.append(f"{n} {name}")
    return ", ".join(facts)


def _gpu(env: dict[str, object]) -> str:
    if env.get("gpu"):
        driver = f", driver {env['driver']}" if env.get("driver") else ""
        return f"{env['gpu']}{driver}"
    gpus = env.get("gpus") or []
    if isinstance(gpus, list) and gpus:
        return ", ".join(str(g.get("name")) for g in gpus if isinstance(g, dict))
    return str(env.get("nvml") or "none")


def _inputs(data: RunData) -> list[str]:
    return list(data.settings.get("inputs") or data.target.get("default_inputs") or [])


def _titles(data: RunData, i: int) -> str:
    counts: dict[str, int] = {}
    for e in data.events_at(i):
        if e.kind in ("stderr", "info"):
            continue
        counts[e.title] = counts.get(e.title, 0) + 1
    text = "; ".join(t if n == 1 else f"{t} ×{n}" for t, n in counts.items())
    return (text[:150] + "…" if len(text) > 150 else text).replace("|", "\\|")


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "default" if value is None else str(value)
