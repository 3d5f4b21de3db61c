"""``warmscope report``: a Markdown report of one run, to paste into a forum post or a bug.

It reads well as plain text: environment, the settings that differ from the defaults, the
latency summary, the warm-up iterations with their labels and events, where the slow
iterations' time went against a steady one, hints the data supports, and the command that
reproduces the run.
"""

from __future__ import annotations

import shlex
from typing import Any

from warmscope.core.base.units import ms
from warmscope.core.data import env_keys, first_call
from warmscope.core.data.breakdown import diff, steady_reference
from warmscope.core.data.run import RunData
from warmscope.core.output.digest import (
    RunDigest,
    device_text,
    digest,
    event_list_text,
    graph_facts,
    memory_text,
    shape_cells,
)
from warmscope.core.output.hints import hints
from warmscope.core.output.sweep_columns import sweep_rows
from warmscope.core.output.sweep_digest import ran_text, sweep_method_text

MAX_WARMUP_ROWS = 15
MAX_DIFF_ROWS = 8


def report(data: RunData, compared: RunData | None = None) -> str:
    """The run as Markdown: one section after another, each from the run's digest (the rows
    the command line renders) and its record."""
    d = digest(data, max_warmup=MAX_WARMUP_ROWS)
    status = f"**{d.status}**" + (f" ({d.status_detail})" if d.status_detail else "")
    out = [
        f"# warmscope report: `{d.target}`",
        "",
        f"Run of {data.started or 'unknown time'}: {status}.",
        "",
    ]
    out += _environment(data)
    out += _settings(d, data)
    out += _latency(d, data)
    out += _memory(d)
    out += _shapes(d)
    out += _idle_probe(d, data)
    out += _device(d)
    out += _warmup(d)
    out += _causes(d)
    out += _profiles(d, data)
    out += _graphs(data)
    found = hints(data, compared)
    if found:
        out += ["## Hints", ""] + [f"- {h}" for h in found] + [""]
    out += ["## Reproduce", "", "```sh", shlex.join(reproduce(data)), "```", ""]
    return "\n".join(out)


def _environment(data: RunData) -> list[str]:
    """Versions, CPU, threads and GPU."""
    out: list[str] = []
    env = data.env
    out += ["## Environment", "", "| | |", "| --- | --- |"]
    rows = [
        *env_keys.rows(env, ("warmscope", "torch", "python")),
        (
            "CPU",
            f"{env.get('cpu_model', '?')}, {env.get('cpu_logical', '?')} logical / {env.get('cpu_physical', '?')} physical cores",
        ),
        (
            "threads",
            f"{env.get('intra_op_threads', '?')} intra-op, {env.get('inter_op_threads', '?')} inter-op",
        ),
        ("GPU", env_keys.gpu_text(env)),
        *env_keys.rows(env, ("cuda_device", "torch_cuda", "platform", "observer")),
    ]
    out += [f"| {k} | {v} |" for k, v in rows if v not in (None, "")]
    out.append("")
    return out


def _settings(d: RunDigest, data: RunData) -> list[str]:
    """The knobs that differ from the defaults, the mode, inputs and shapes."""
    out: list[str] = []
    out += ["## Settings", ""]
    if d.changed:
        out += [f"- `{k}` = `{v}`" for k, v in d.changed.items()]
    else:
        out.append("All knobs at their defaults.")
    given = f" ({d.inputs_given})" if d.inputs_given and d.inputs_given != "--input" else ""
    out += [
        f"- mode: `{d.mode}`, inputs: {', '.join(f'`{i}`' for i in d.inputs) or '-'}{given}",
    ]
    settings = data.settings
    if settings.dims:
        out.append(
            f"- shapes: {', '.join(f'`--dim {x}`' for x in settings.dims)}, "
            f"schedule `{settings.schedule}`, seed {settings.seed}"
        )
    if settings.gap:
        out.append(f"- idle gap before every iteration: {settings.gap:g} s")
    out.append("")
    return out


def _latency(d: RunDigest, data: RunData) -> list[str]:
    """The latency summary, its warnings and what came before the first call."""
    out: list[str] = []
    s = d.summary
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
    if d.shapes:
        out += [
            f"Pooled over {len(d.shapes)} shapes: the percentiles, mean and CV mix every shape's "
            "steady calls (each shape's own p50 is under Shapes); steady from the call after "
            "which every shape is steady; the warm-up excess is each shape's over its own p50.",
            "",
        ]
    for warning in d.warnings:
        out.append(f"> **Warning:** {warning}.")
    if d.warnings:
        out.append("")
    out.append(
        f"{s.count} iterations; statistics over the {s.steady_count} steady ones"
        + (
            f", {len(data.profiled_here())} profiled iteration(s) left out."
            if data.profiled_here()
            else "."
        )
    )
    if data.phases:
        out.append(
            "Before the first iteration: "
            + ", ".join(f"{k} {ms(v)}" for k, v in data.phases.items())
            + "."
        )
    out.append("")
    return out


def _memory(d: RunDigest) -> list[str]:
    """The child's peak memory."""
    out: list[str] = []
    if d.memory:
        out += [f"Peak memory of the child: {memory_text(d.memory)}.", ""]
    return out


def _shapes(d: RunDigest) -> list[str]:
    """Each shape's first call against its own steady p50."""
    out: list[str] = []
    if d.shapes:
        out += [
            "## Shapes",
            "",
            "The first call of each shape against that shape's own steady p50 (statistics and "
            "steady state are judged per shape).",
            "",
            "| shape | iterations | first call | first latency | steady p50 | first / p50 | steady from | events of the first call |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for r in d.shapes:
            c = shape_cells(r)
            titles = event_list_text(r["events"], 150).replace("|", "\\|")
            out.append(
                f"| `{r['key']}` | {r['count']} | {c.first} | {ms(r['first_ms'])} | {ms(r['p50_ms'])} "
                f"| {c.ratio} | {c.steady_from} | {titles} |"
            )
        out.append("")
    return out


def _idle_probe(d: RunDigest, data: RunData) -> list[str]:
    """Calls after idle gaps against the steady p50."""
    out: list[str] = []
    if d.idle_probe:
        out += [
            "## After idle gaps",
            "",
            "One call after each idle gap, three times, against the steady p50"
            + (f" of `{data.idle_probe_shape}`" if data.idle_probe_shape else "")
            + ".",
            "",
            "| idle (s) | latency | × steady p50 |",
            "| ---: | --- | --- |",
        ]
        for r in d.idle_probe:
            times = ", ".join(ms(t) for t in r["ms"])
            ratios = ", ".join(f"{v:.2f}×" for v in r["vs_p50"]) if r["vs_p50"] else "-"
            out.append(f"| {r['idle_s']:g} | {times} | {ratios} |")
        out.append("")
    return out


def _device(d: RunDigest) -> list[str]:
    """Device time, where CUDA events timed the calls."""
    out: list[str] = []
    if d.device is not None:
        out += [
            f"Device time (CUDA events around each call): {device_text(d.device, why=True)}.",
            "",
        ]
    return out


def _warmup(d: RunDigest) -> list[str]:
    """The warm-up iterations with their labels and events."""
    out: list[str] = []
    if d.warmup:
        out += [
            "## Warm-up iterations",
            "",
            "| iteration | ms | label | events |",
            "| ---: | ---: | --- | --- |",
        ]
        for row in d.warmup:
            titles = row.titles_text().replace("|", "\\|")
            out.append(f"| {row.iteration} | {row.ms:.3f} | {row.label_text} | {titles} |")
        out.append("")
    return out


def _causes(d: RunDigest) -> list[str]:
    """The named causes of the slow calls."""
    out: list[str] = []
    if d.causes:
        out += [
            "## Why the slow calls were slow",
            "",
            "Each cause from the run's own evidence: its events, the profiles of its first "
            "calls (their traces where found beside the record), its phases and settings.",
            "",
            "| call | cause | time | evidence |",
            "| --- | --- | ---: | --- |",
        ]
        for cause in d.causes:
            when = cause.phase if cause.phase is not None else f"#{cause.iteration}"
            timed = ms(cause.ms) if cause.ms is not None else "-"
            evidence = cause.evidence.replace("|", "\\|")
            out.append(f"| {when} | {cause.name} | {timed} | {evidence} |")
        out.append("")
    return out


def _profiles(d: RunDigest, data: RunData) -> list[str]:
    """Where the profiled iterations' time went against a steady one."""
    out: list[str] = []
    ref = steady_reference(data.profiles, d.summary.steady_from)
    slow = [i for i in sorted(data.profiles) if i != ref]
    if data.profiles:
        out += ["## Where the time went", ""]
        for note in d.first_calls:
            shape = f" (`{note['shape']}`)" if note.get("shape") else ""
            out += [
                f"**Iteration {note['iteration']}{shape}, {note['label']}** against steady "
                f"iteration {note['against']}: {first_call.detail(note)}.",
                "",
            ]
        sources = sorted({str(p["source"]) for p in data.profiles.values() if p.get("separate")})
        if sources:
            out += [
                "The operator profiles come from a separate process ("
                + ", ".join(f"`{s}`" for s in sources)
                + "): no latency above was measured under the profiler.",
                "",
            ]
        else:
            out += [
                "Profiled in this run: the profiled iterations are left out of the statistics.",
                "",
            ]
        out += [
            "| iteration | wall | in operators | not in any operator |",
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
                    "| operator | here | steady | adds | calls |",
                    "| --- | ---: | ---: | ---: | ---: |",
                ]
                for row in rows_:
                    calls = (
                        f"{row.calls_slow}/{row.calls_steady}" if row.kind != "unaccounted" else ""
                    )
                    steady_ms = ms(row.steady_ms) if row.kind != "only here" else "not run"
                    out.append(
                        f"| `{row.name}` | {ms(row.slow_ms)} | {steady_ms} | {ms(row.added_ms)} | {calls} |"
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
    return out


def _graphs(data: RunData) -> list[str]:
    """The TorchScript graphs as loaded and as last executed."""
    out: list[str] = []
    if data.graphs:
        out += ["## TorchScript graphs", ""]
        loaded = graph_facts(data.graphs.get("graph", "")).text()
        optimized = graph_facts(data.graphs.get("optimized", "")).text()
        out.append(f"Graph as loaded: {loaded}. Graph executed last, once warm: {optimized}.")
        out.append("")
    return out


def reproduce(data: RunData) -> list[str]:
    if not data.settings.target:  # a damaged record: the command it names, if any
        return data.command or ["warmscope", "run", "?"]
    return data.settings.command_line()


def sweep_report(doc: dict[str, Any]) -> str:
    """A sweep document as Markdown: the answer first, then each cell with its intervals, the
    ranking, every process, and what to distrust."""
    cells = doc.get("cells", [])
    out = [f"# warmscope sweep: `{doc.get('target', '?')}`", ""]
    out += [f"**{doc.get('answer', '')}**", ""]
    per = doc.get("per_process_s")
    out.append(
        f"{len(cells)} setting(s) × {doc.get('repeat')} fresh processes, interleaved "
        f"({ran_text(doc)}"
        + (", **stopped**" if doc.get("stopped") else "")
        + f"), {doc.get('iters')} iterations each; {float(doc.get('wall_s') or 0):.1f} s"
        + (f", {per:.1f} s per process." if per else ".")
    )
    out.append(sweep_method_text(doc))
    columns, rows = sweep_rows(cells)
    out += [
        "",
        "| " + " | ".join(col.header for col in columns) + " |",
        "| " + " | ".join("---:" if col.figures else "---" for col in columns) + " |",
    ]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    ranking = doc.get("ranking", [])
    if len(ranking) > 1:
        out += ["", f"Ranked by `{doc.get('rank_by')}`:", ""]
        for r in ranking:
            out.append(f"{r.get('rank')}. {r.get('label')}: {r.get('vs_best')}")
    warnings = list(doc.get("warnings", []))
    for c in cells:
        for p in c.get("processes", []):
            warnings += [f"{c.get('label')} #{p.get('repeat')}: {w}" for w in p.get("warnings", [])]
    if warnings:
        out += ["", "## Warnings", ""]
        out += [f"- {w}" for w in warnings]
    out += [
        "",
        "## Processes in the order they ran",
        "",
        "| # | setting | repeat | status | record |",
    ]
    out.append("| ---: | --- | ---: | --- | --- |")
    by_key = {
        (c.get("index"), p.get("repeat")): (c, p) for c in cells for p in c.get("processes", [])
    }
    for n, (ci, r) in enumerate(doc.get("schedule", []), 1):
        c, p = by_key.get((ci, r), ({}, {}))
        out.append(
            f"| {n} | {c.get('label', '?')} | {r} | {p.get('status', '?')} | `{p.get('record')}` |"
        )
    if doc.get("command"):
        out += ["", "Reproduce: `" + shlex.join(str(a) for a in doc["command"]) + "`"]
    return "\n".join(out) + "\n"
