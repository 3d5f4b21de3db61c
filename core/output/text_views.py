"""The plain-text views the CLI prints: a run's summary, a sweep, runs compared, a finished
process of a sweep. Each is built from the digest its data already has (``digest``,
``comparison.comparison``, the sweep document), so the text says what the TUI and the exports say.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from warmscope.core.base.safe_text import clean
from warmscope.core.base.units import metric as metric_cell
from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.base.units import rate
from warmscope.core.child import outcome
from warmscope.core.data import first_call
from warmscope.core.data.run import RunData
from warmscope.core.output.comparison import ratio_text
from warmscope.core.output.digest import (
    RunDigest,
    device_text,
    digest,
    event_list_text,
    memory_text,
)
from warmscope.core.output.sweep_columns import sweep_rows
from warmscope.core.output.sweep_digest import header_lines, process_facts

SUMMARY_WARMUP_ROWS = 12


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


RATIO_WIDTH = len("1.80× too few iterations")


def render_summary(data: RunData) -> str:
    """The plain-text answer: first iteration, warm-up, percentiles, the slow iterations."""
    d = digest(data, max_warmup=SUMMARY_WARMUP_ROWS)
    out = [*_run_lines(d), f"iterations {d.summary.count}"]
    if d.summary.count == 0:
        # A run that failed before its first call: its record holds why (the events, stderr).
        if d.record_path:
            out.append(f"record     {d.record_path}")
        return clean("\n".join(out))
    out.extend(_timing_lines(d, data))
    if d.device is not None:
        out.append(f"device     {device_text(d.device)}")
    out.extend(_slow_iteration_lines(d))
    out.extend(_explained_lines(d))
    out.extend(_shape_lines(d))
    out.extend(_idle_probe_lines(d))
    if d.memory:
        out.append(f"memory     {memory_text(d.memory)}")
    out.extend(_profile_lines(data))
    out.extend(f"warning    {warning}" for warning in d.warnings)
    out.extend(f"note       {said}" for said in d.notes)
    if d.record_path:
        out.append(f"record     {d.record_path}")
    # Targets, knob values, event titles come from the user, the model or a record file.
    return clean("\n".join(out))


def _run_lines(d: RunDigest) -> list[str]:
    """What was run and how: the target, the settings changed, the phases, the inputs."""
    out = [f"warmscope  {d.target}  mode={d.mode}  status={d.status_text}"]
    if d.changed:
        out.append("settings   " + "  ".join(f"{k}={v}" for k, v in d.changed.items()))
    if d.phases:
        out.append("phases     " + " · ".join(f"{k} {fmt_ms(v)}" for k, v in d.phases.items()))
    for cause in d.causes:
        if cause.phase is not None and cause.evidence:
            out.append(f"           {cause.phase}: {cause.name} ({cause.evidence})")
    if d.inputs:
        given = f"  ({d.inputs_given})" if d.inputs_given and d.inputs_given != "--input" else ""
        out.append("inputs     " + " ".join(d.inputs) + given)
    return out


def _timing_lines(d: RunDigest, data: RunData) -> list[str]:
    """The first iteration, the warm-up, the steady state's percentiles."""
    s = d.summary
    out = [f"first      {fmt_ms(s.first_ms)}", _warmup_line(d, data)]
    cv = f"{s.cv * 100:.1f}%" if s.cv is not None else "-"
    # Several shapes: these figures mix them; each shape's own are in the shapes table.
    pooled = f"pooled over {len(d.shapes)} shapes: " if d.shapes else ""
    out.append(
        f"steady     {pooled}p50 {fmt_ms(s.p50_ms)} · p90 {fmt_ms(s.p90_ms)} · p99 {fmt_ms(s.p99_ms)} · "
        f"mean {fmt_ms(s.mean_ms)} · CV {cv} · {rate(s.throughput_per_s)}"
    )
    return out


def _warmup_line(d: RunDigest, data: RunData) -> str:
    """How many iterations the warm-up took (those that waited for a core left out are not
    counted) and what it cost above steady state."""
    s = d.summary
    if s.steady_from is None:
        return "warm-up    not steady within the run"
    every = " until every shape is steady" if d.shapes else ""
    above = "above each shape's steady p50" if d.shapes else "above steady state"
    waited = sum(1 for i in data.contended_left_out() if i < s.steady_from)
    aside = f" ({waited} waiting for a core left out)" if waited else ""
    return (
        f"warm-up    {s.steady_from - waited} iteration(s){every}{aside}, steady from "
        f"#{s.steady_from}; {fmt_ms(s.warmup_excess_ms)} {above}"
    )


def _slow_iteration_lines(d: RunDigest) -> list[str]:
    """The slow iterations, each with its causes or the events seen in it."""
    if not d.warmup:
        return []
    out = ["slow iterations"]
    for row in d.warmup:
        if row.causes:  # the causes, then the events that show them
            what = f"{row.label_text}   {row.titles_text(100)}".rstrip()
            out.append(f"  #{row.iteration:<5} {fmt_ms(row.ms):>11}  {clip(what, 180)}")
            continue
        out.append(
            f"  #{row.iteration:<5} {fmt_ms(row.ms):>11}  {row.label_text:<25} "
            f"{row.titles_text(100)}".rstrip()
        )
    return out


def _explained_lines(d: RunDigest) -> list[str]:
    """The first calls explained: what each one's cost was spent on."""
    out = []
    for note in d.first_calls:
        shape = f" ({note['shape']})" if note.get("shape") else ""
        out.append(f"explained  #{note['iteration']}{shape} {note['label']}")
        out.append(f"           {first_call.detail(note)}")
    return out


def _shape_lines(d: RunDigest) -> list[str]:
    """A table of the declared shapes: each one's first call against its own steady p50."""
    if not d.shapes:
        return []
    out = ["shapes     first call of each shape against its own steady p50"]
    width = max(len(r["key"]) for r in d.shapes)
    for r in d.shapes:
        ratio = f"{r['first_vs_p50']:.2f}×" if r["first_vs_p50"] is not None else "-"
        first = f"#{r['first_iteration']}" if r["first_iteration"] is not None else "-"
        out.append(
            f"  {r['key']:<{width}}  {r['count']:>5} it  first {first:<6} "
            f"{fmt_ms(r['first_ms']):>10}  p50 {fmt_ms(r['p50_ms']):>10}  {ratio:>7}  "
            f"{event_list_text(r['events'], 80)}".rstrip()
        )
    return out


def _idle_probe_lines(d: RunDigest) -> list[str]:
    """The calls made after each idle gap, against the steady p50."""
    if not d.idle_probe:
        return []
    out = ["idle probe one call after each idle gap, against the steady p50"]
    for r in d.idle_probe:
        vs = r["vs_p50"] or []
        calls = "  ".join(
            fmt_ms(t) + (f" ({v:.2f}×)" if vs else "")
            for t, v in zip(r["ms"], vs or r["ms"], strict=True)
        )
        out.append(f"  after {r['idle_s']:g} s  {calls}")
    return out


def _profile_lines(data: RunData) -> list[str]:
    """Each profiled iteration: its wall time, the time in operators and in none, its trace."""
    out = []
    for i in sorted(data.profiles):
        p = data.profiles[i]
        if "wall_ms" in p:
            out.append(
                f"profiled   #{i}: {fmt_ms(p['wall_ms'])} wall, {fmt_ms(p['ops_ms'])} in operators, "
                f"{fmt_ms(p['unaccounted_ms'])} in none"
                + (" (separate process)" if p.get("separate") else "")
                + (f"; trace {p['trace']}" if p.get("trace") else "")
            )
    return out


def render_sweep(doc: dict[str, Any]) -> str:
    """A sweep document as text: the answer first, then one row per cell."""
    cells = doc.get("cells", [])
    out = [f"answer     {doc.get('answer', '')}", *header_lines(doc)]
    columns, rows = sweep_rows(cells)
    table = [[col.header for col in columns], *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    for r in table:
        out.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    ranking = doc.get("ranking", [])
    if len(ranking) > 1:
        parts = []
        for r in ranking:
            tag = "" if r.get("vs_best") in ("best", "worse") else f" ({r.get('vs_best')})"
            parts.append(f"{r.get('rank')}. {r.get('label')} {fmt_ms(r.get('median'))}{tag}")
        out.append(f"ranking    by {doc.get('rank_by')}: " + " · ".join(parts))
    for w in doc.get("warnings", []):
        out.append(f"warning    {w}")
    for c in cells:
        flagged = [p for p in c.get("processes", []) if p.get("warnings")]
        if flagged:
            out.append(
                f"warning    {c.get('label')}: {len(flagged)} of {len(c.get('processes', []))} "
                f"processes flagged, e.g. #{flagged[0].get('repeat')}: {flagged[0]['warnings'][0]}"
            )
    if doc.get("folder"):
        out.append(f"records    {doc['folder']}")
    return clean("\n".join(out))


def value_cell(metric: str, value: float | None, interval: dict[str, Any] | None = None) -> str:
    """A compared value, with its interval across processes where it has one:
    ``4.62 ms (4.55–4.70)``; the bounds in the median's unit."""
    text = metric_cell(metric, value)
    if not interval or interval.get("median") is None or value is None:
        return text
    lo, hi = metric_cell(metric, interval["lo"]), metric_cell(metric, interval["hi"])
    unit = text.rpartition(" ")[2] if " " in text else ""
    if unit and lo.endswith(" " + unit) and hi.endswith(" " + unit):
        lo, hi = lo[: -len(unit) - 1], hi[: -len(unit) - 1]
    return f"{text} ({lo}–{hi})"


def render_comparison(doc: dict[str, Any]) -> str:
    """A ``comparison.comparison`` document as text: a column of values a run, then a column of
    ratios for each run against the first (the baseline), then the settings and the context
    that differ, then what the untold verdicts mean."""
    runs = doc["runs"]
    names = [Path(str(r["name"])).name for r in runs]
    names = [
        n + (f" ×{r['processes']}" if r.get("processes", 1) > 1 else "")
        for n, r in zip(names, runs, strict=True)
    ]
    letters = [chr(ord("A") + n) if n < 26 else f"#{n + 1}" for n in range(len(names))]
    cells = {
        m["metric"]: [
            value_cell(m["metric"], v, iv)
            for v, iv in zip(m["values"], m.get("intervals") or [None] * len(runs), strict=True)
        ]
        for m in doc["metrics"]
    }
    width = max(14, *(len(n) for n in names), *(len(c) for row in cells.values() for c in row))
    ratio_headers = [f"ratio {letter}/A" for letter in letters[1:]]
    ratio_width = max(RATIO_WIDTH, *(len(h) for h in ratio_headers))

    def line(label: str, values: list[str], ratios: list[str] | None = None) -> str:
        text = f"{label:<18} " + " ".join(f"{v:>{width}}" for v in values)
        if ratios:
            text += "  " + "  ".join(f"{r:<{ratio_width}}" for r in ratios)
        return text.rstrip()

    lines = [line("", names, ratio_headers)]
    lines.append(line("status", [str(r["status"]) for r in runs]))
    lines.append(line("iterations", [str(r["iterations"]) for r in runs]))
    for m in doc["metrics"]:
        ratios = [ratio_text(r, v) for r, v in zip(m["ratios"][1:], m["verdicts"][1:], strict=True)]
        lines.append(line(m["metric"], cells[m["metric"]], ratios))
    if len(names) > 2:
        lines.append("ratios: each run against the first")
    if doc["settings"]:
        lines.append("settings that differ:")
        for row in doc["settings"]:
            lines.append(f"  {row['name']:<16} " + " ".join(f"{v:>{width}}" for v in row["values"]))
    if doc.get("context"):
        lines.append("context that differs (it changes what is measured):")
        for row in doc["context"]:
            values = " ".join(f"{v:>{width}}" for v in row["values"])
            lines.append(f"  {row['name']:<16} {values}  ({row['why']})")
    for note in doc.get("notes", []):
        lines.append(f"note: {note}")
    return clean("\n".join(lines))


def process_line(sweep: Any, process: Any) -> str:
    """``[3/8] torchscript #1 ok · first 43.1 ms · steady p50 2.77 ms · warm-up``."""
    f = process_facts(process.data)
    n = len(sweep.processes)
    text = (
        f"[{n}/{len(sweep.plan)}] {sweep.cells[process.cell].label} #{process.repeat} {f['status']}"
    )
    if f["status"] != outcome.OK:
        return f"{text} ({f['detail']})"
    return (
        f"{text} · first {fmt_ms(f['first_ms'])} · steady p50 {fmt_ms(f['steady_p50_ms'])} · "
        f"{f['shape']}"
    )
