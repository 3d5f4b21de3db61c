"""Plainly worded hints, each backed by what the record shows. No data, no hint."""

from __future__ import annotations

import shlex

from warmscope.core.base.units import ms
from warmscope.core.child.knobs import knob
from warmscope.core.data.breakdown import UNACCOUNTED, diff, steady_reference
from warmscope.core.data.cause_kinds import compile_trigger
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.comparison import ratio_text, side_rows
from warmscope.core.output.settings_diff import same_settings

UNACCOUNTED_SHARE = 0.5


def hints(data: RunData, compared: RunData | None = None) -> list[str]:
    out: list[str] = []
    summary = data.summary()
    p50 = summary.p50_ms
    labels = data.labelled()
    knobs = data.settings.knobs

    profiling = [i for i, lab in labels.items() if lab in ("profiling run", "optimization")]
    if profiling and p50 is not None:
        out.append(_profiling_hint(data, compared, profiling, p50))

    for ev in data.events:
        if ev.kind == "recompile":
            out.append(f"Iteration {ev.iteration} recompiled: {ev.title}.")
    resized = [e for e in data.events if e.kind == "recompile" and "size mismatch" in e.title]
    if resized and knobs.get("compile_dynamic") is None:
        out.append(
            "A new input size recompiled"
            + (" and made its dimension dynamic" if "now dynamic" in resized[0].title else "")
            + ": `--set compile_dynamic=true` compiles for dynamic sizes from the first call "
            "(no recompile per size); `--set compile_dynamic=false` keeps every size static."
        )
    compiles = [
        e
        for e in data.events
        if e.kind == "compile" and e.ms and compile_trigger(e.title) == "dynamo"
    ]
    if compiles:
        total = sum(e.ms or 0.0 for e in compiles)
        first = compiles[0]
        out.append(
            f"torch.compile compiled {len(compiles)} time(s), {ms(total)} in all; the first in "
            f"iteration {first.iteration} ({ms(first.ms)})."
        )
    graph_breaks = [e for e in data.events if e.kind == "graph_break"]
    if graph_breaks:
        out.append(f"{len(graph_breaks)} graph break(s); the first: {graph_breaks[0].title}.")

    ref = steady_reference(data.profiles, summary.steady_from)
    for i in sorted(data.profiles):
        prof = data.profiles[i]
        wall = float(prof.get("wall_ms", 0.0))
        unacc = float(prof.get("unaccounted_ms", 0.0))
        if i != ref and wall > 0 and unacc / wall >= UNACCOUNTED_SHARE:
            out.append(
                f"In iteration {i}, {ms(unacc)} of {ms(wall)} ({unacc / wall:.0%}) ran in no "
                "operator: time in the JIT or compiler itself (profiling, optimizing, compiling), "
                "not in the model's kernels."
            )
        if ref is not None and i < ref:
            ops = [d for d in diff(prof, data.profiles[ref]) if d.name != UNACCOUNTED][:3]
            if ops:
                parts = [
                    f"{d.name} {ms(d.slow_ms)} vs {ms(d.steady_ms)}"
                    if d.steady_ms
                    else f"{d.name} {ms(d.slow_ms)} (not in the steady iteration)"
                    for d in ops
                ]
                out.append(
                    f"Operators that make iteration {i} slow, against steady iteration {ref}: "
                    + "; ".join(parts)
                    + "."
                )
    if (
        knobs.get("cudnn_benchmark")
        and str(knobs.get("device", "cpu")).startswith("cuda")
        and summary.steady_from
    ):
        out.append("cudnn_benchmark is on: each new input shape autotunes in its first passes.")
    return out


def _profiling_hint(
    data: RunData, compared: RunData | None, profiling: list[int], p50: float
) -> str:
    """The profiling executor's warm-up, and what the records say of running without it:
    a preset removes these iterations by construction, but whether the first call comes
    sooner or the steady state slows is for processes of each to tell (one process each
    cannot: ``output.verdicts``)."""
    labels = data.labelled()
    excess = sum(max(0.0, data.latency(i) - p50) for i in profiling if i < data.count)
    which = ", ".join(f"{i} ({labels[i]})" for i in sorted(profiling))
    text = (
        f"Iterations {which} are the TorchScript profiling executor's warm-up: "
        f"{ms(excess)} above the steady p50 of {ms(p50)}. `--set profiling_executor=off` (no "
        "profiling run) or `--set graph_optimizer=off` (the graph runs as scripted) runs "
        "without them"
    )
    sweep = f"`{shlex.join(profiling_sweep(data.settings))}`"
    if compared is None or not compared.count:
        return text + f"; {sweep} tells what that does to the first call and the steady state."
    ck = compared.settings.knobs
    if same_settings(data, compared):
        return text + "; the compared run has the same settings, so it cannot tell: " + sweep + "."
    if not (ck.get("profiling_executor") is False or ck.get("graph_optimizer") is False):
        return text + "; the compared run keeps both on: " + sweep + " tells what they cost."
    rows = {
        r.metric: r for r in side_rows([data], [compared], [data.summary()], [compared.summary()])
    }
    first, steady = rows["first_ms"], rows["p50_ms"]
    told = f" ({steady.verdict})" if steady.verdict else ""
    return (
        text + f"; in the compared run ({_changed(ck)}) the first iteration took "
        f"{ms(first.b)} against {ms(first.a)} here (one process each cannot tell a first "
        f"iteration apart) and the steady p50 was {ms(steady.b)}, "
        f"{ratio_text(steady.ratio, '')} this run's{told}. For the first call, {sweep}."
    )


PROFILING_PRESETS = "torchscript,no-profiling,no-optimizer"
REPEAT = "5"


def profiling_sweep(settings: RunSettings) -> list[str]:
    """The sweep that tells what the profiling executor and the graph optimizer cost, on the
    run's own target, inputs and settings: its presets where the run scripted the model (they
    script it too), else its own mode with those knobs varied (a traced model may be one that
    torch.jit.script refuses)."""
    base = settings.copy()
    base.preset = None
    base.profile_iters = None
    for name in ("profiling_executor", "graph_optimizer"):
        base.knobs[name] = knob(name).default
    line = base.command_line("sweep")
    if base.knobs.get("mode") == "script":
        return [*line, "--preset", PROFILING_PRESETS, "--repeat", REPEAT]
    return [*line, "--vary", "profiling_executor=on,off", "--repeat", REPEAT]


def _changed(knobs: dict[str, object]) -> str:
    parts = []
    for name in ("profiling_executor", "graph_optimizer"):
        if knobs.get(name) is False:
            parts.append(f"{name}=off")
    return ", ".join(parts)
