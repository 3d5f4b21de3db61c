"""Exports of one run: the ``--json`` document, a CSV of iterations, a Markdown summary; and of
a comparison of runs: its JSON document and a Markdown table."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, TextIO

from warmscope.core.base import units
from warmscope.core.base.files import atomic_write, beside
from warmscope.core.base.safe_text import clean, clean_line
from warmscope.core.data import document, env_keys
from warmscope.core.data.run import RunData
from warmscope.core.output.digest import digest, event_list_text, memory_text, shape_cells
from warmscope.core.output.report import report
from warmscope.core.output.text_views import value_cell

FORMATS = ("json", "csv", "md")
REPORT_SUFFIX = "report.md"


def dump_json(f: TextIO, data: RunData) -> None:
    """The ``--json`` document onto ``f``. Its iterations are streamed, a row a line: memory
    stays proportional to a batch, not to a run of millions of iterations."""
    doc = document.to_document(data, iterations=False)
    del doc["iterations"]  # written last, streamed
    head = json.dumps(doc, indent=1, default=str)  # ends with "\n}": reopened below
    f.write(head[:-2] + ',\n "iterations": [')
    batch: list[str] = []
    for n, row in enumerate(document.iteration_rows(data)):
        batch.append(("\n  " if n == 0 else ",\n  ") + json.dumps(row, separators=(",", ":")))
        if len(batch) >= 10_000:
            f.write("".join(batch))
            batch.clear()
    f.write("".join(batch) + "\n ]\n}\n")


def write_json(path: Path, data: RunData, *, parents: bool = True) -> Path:
    """The ``--json`` document at ``path`` (written beside, then renamed)."""
    with beside(path, parents=parents) as f:
        dump_json(f, data)
    return path


CSV_COLUMNS = (
    "iteration",
    "ms",
    "start_ms",
    "shape",
    "label",
    "profiled",
    "device_ms",
    "launch_ms",
)
"""One row per iteration, as the ``--json`` document's iterations hold it; a column per fact,
so that ``pandas.read_csv`` reads each as one type (``shape`` and ``label`` empty where none
applies, ``profiled`` ``true`` or ``false``, ``device_ms`` and ``launch_ms`` empty where the
device did not time the call: a CPU run, a profiled call). A shape is a name from the record:
made safe to print, as every view shows it."""


def csv_writer(f: TextIO, *, with_run: bool = False) -> Any:
    """A CSV writer on ``f`` with the header written: ``run`` first where several runs share
    the file."""
    w = csv.writer(f, lineterminator="\n")
    w.writerow((["run"] if with_run else []) + list(CSV_COLUMNS))
    return w


def csv_cell(value: Any) -> Any:
    """A CSV cell: a number as it is, nothing for ``None``, any other value as text made safe
    to print (``safe_text.clean_line``): a spreadsheet or a ``cat`` of the file shows it."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return "" if value is None else clean_line(str(value))


def csv_rows(w: Any, data: RunData, run: str | None = None) -> None:
    """``data``'s iterations onto a ``csv_writer`` (``run``: its ``run`` column)."""
    lead = [] if run is None else [csv_cell(run)]
    for row in document.iteration_rows(data):
        w.writerow(
            [
                *lead,
                row["i"],
                f"{row['ms']:.6f}",
                f"{row['start_ms']:.6f}",
                clean_line(row.get("shape", "")),
                clean_line(row.get("label", "")),
                "true" if row.get("profiled") else "false",
                _fixed(row.get("device_ms")),
                _fixed(row.get("launch_ms")),
            ]
        )


def _fixed(value: float | None) -> str:
    return "" if value is None else f"{value:.6f}"


SWEEP_CSV_COLUMNS = (
    "cell",
    "setting",
    "repeat",
    "record",
    "status",
    "iterations",
    "first_ms",
    "warmup_excess_ms",
    "steady_from",
    "steady_p50_ms",
    "setup_ms",
    "host",
)
"""One row per process of a sweep document, in the order the cells list them: the figures each
process gave (the intervals are the document's), and the host it ran on (empty where here)."""


def sweep_csv_writer(f: TextIO, *, with_sweep: bool = False) -> Any:
    """A CSV writer on ``f`` with the header of ``SWEEP_CSV_COLUMNS`` written: ``sweep`` first
    where several documents share the file."""
    w = csv.writer(f, lineterminator="\n")
    w.writerow((["sweep"] if with_sweep else []) + list(SWEEP_CSV_COLUMNS))
    return w


def sweep_csv_rows(w: Any, doc: dict[str, Any], sweep: str | None = None) -> None:
    """A sweep document's processes onto a ``sweep_csv_writer``."""
    lead = [] if sweep is None else [csv_cell(sweep)]
    for cell in doc.get("cells") or []:
        for p in cell.get("processes") or []:
            node = p.get("node") if isinstance(p.get("node"), dict) else {}
            values = {
                **p,
                "cell": cell.get("index"),
                "setting": cell.get("label"),
                "host": node.get("hostname", ""),
            }
            # Every text cell through the one sanitiser, as the record's CSV does.
            w.writerow(lead + [csv_cell(values.get(c)) for c in SWEEP_CSV_COLUMNS])


def write_csv(path: Path, data: RunData) -> Path:
    """One row per iteration (``CSV_COLUMNS``)."""
    with beside(path, newline="") as f:
        csv_rows(csv_writer(f), data)
    return path


def markdown(data: RunData, max_rows: int = 12) -> str:
    """A summary ready to paste into an issue or a forum post."""
    d = digest(data, max_warmup=max_rows)
    s = d.summary
    env = data.env
    lines = [f"### warmscope: `{d.target}`", ""]
    lines.append(
        f"torch {env.get('torch', '?')} · Python {env.get('python', '?')} · "
        f"{env.get('cpu_model', '?')} ({env.get('cpu_logical', '?')} logical cores) · "
        f"{env.get('intra_op_threads', '?')} threads"
        + (
            f" · {env_keys.gpu_text(env)}"
            if env_keys.nvml_gpu(env) or env_keys.cuda_device(env)
            else ""
        )
    )
    if d.changed:
        lines.append("Settings: " + ", ".join(f"`{k}={v}`" for k, v in d.changed.items()))
    lines.append(f"Status: **{d.status}**" + (f" ({d.status_detail})" if d.status_detail else ""))
    lines += ["", "| metric | value |", "| --- | --- |"]
    rows = [
        ("iterations", str(s.count)),
        ("first iteration", units.ms(s.first_ms)),
        ("steady from", "-" if s.steady_from is None else f"#{s.steady_from}"),
        ("warm-up excess", units.ms(s.warmup_excess_ms)),
        ("p50 / p90 / p99", f"{units.ms(s.p50_ms)} / {units.ms(s.p90_ms)} / {units.ms(s.p99_ms)}"),
        ("CV", "-" if s.cv is None else f"{s.cv * 100:.1f}%"),
    ]
    lines += [f"| {k} | {v} |" for k, v in rows]
    if d.memory:
        lines += [f"| peak memory | {memory_text(d.memory)} |"]
    lines += [f"\n> **Warning:** {w}." for w in d.warnings]
    if d.phases:
        lines += ["", "Phases: " + ", ".join(f"{k} {units.ms(v)}" for k, v in d.phases.items())]
    if d.shapes:
        lines += [
            "",
            "| shape | first call | first latency | steady p50 | first / p50 | events |",
            "| --- | ---: | ---: | ---: | ---: | --- |",
        ]
        for r in d.shapes:
            c = shape_cells(r)
            lines.append(
                f"| `{r['key']}` | {c.first} | {units.ms(r['first_ms'])} | {units.ms(r['p50_ms'])} | {c.ratio} "
                f"| {event_list_text(r['events'], 120).replace('|', '/')} |"
            )
    if d.idle_probe:
        lines += ["", "| idle (s) | latency after the gap | × steady p50 |", "| ---: | --- | --- |"]
        for r in d.idle_probe:
            ratios = ", ".join(f"{v:.2f}×" for v in r["vs_p50"]) if r["vs_p50"] else "-"
            lines.append(
                f"| {r['idle_s']:g} | {', '.join(units.ms(t) for t in r['ms'])} | {ratios} |"
            )
    if d.warmup:
        lines += ["", "| iteration | ms | label | events |", "| ---: | ---: | --- | --- |"]
        for row in d.warmup:
            lines.append(
                f"| {row.iteration} | {row.ms:.3f} | {row.label_text} | {row.titles_text(120)} |"
            )
    if data.command:
        lines += ["", "Reproduce: `" + " ".join(data.command) + "`"]
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, data: RunData) -> Path:
    atomic_write(path, clean(markdown(data)))
    return path


def export_all(data: RunData, directory: Path, stem: str) -> list[Path]:
    """Every export side by side: ``stem.json``, ``stem.csv``, ``stem.md`` and the full report,
    ``stem.report.md``."""
    report_path = directory / f"{stem}.{REPORT_SUFFIX}"
    atomic_write(report_path, clean(report(data)))
    return [
        write_json(directory / f"{stem}.json", data),
        write_csv(directory / f"{stem}.csv", data),
        write_markdown(directory / f"{stem}.md", data),
        report_path,
    ]


def comparison_markdown(doc: dict[str, Any]) -> str:
    """A ``warmscope-comparison`` document as a Markdown table, each run against the first,
    with the context that differs and what each untold verdict means."""
    runs = doc["runs"]
    letters = [chr(ord("A") + i) if i < 26 else str(i + 1) for i in range(len(runs))]
    lines = ["### warmscope: a comparison", ""]
    for letter, r in zip(letters, runs, strict=True):
        lines.append(
            f"- **{letter}** `{r['name']}`: `{r['target']}` {r['mode']}, {_cell(r['settings'])}; "
            f"{r['status']}, {r['iterations']} iterations"
            + (f", {r['processes']} processes" if r.get("processes", 1) > 1 else "")
        )
    head = ["metric", "A"] + [f"{x} (vs A)" for x in letters[1:]]
    lines += ["", "| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for m in doc["metrics"]:
        ivs = m.get("intervals") or [None] * len(runs)
        cells = [value_cell(m["metric"], m["values"][0], ivs[0])]
        columns = zip(m["values"], m["ratios"], m["verdicts"], ivs, strict=True)
        for value, ratio, verdict, iv in list(columns)[1:]:
            cell = value_cell(m["metric"], value, iv)
            if ratio is not None:
                cell += f" ({ratio:.2f}×{', ' + verdict if verdict else ''})"
            cells.append(cell)
        lines.append(f"| {m['name']} | " + " | ".join(cells) + " |")
    if doc["settings"]:
        lines += ["", "| setting | " + " | ".join(letters) + " |"]
        lines.append("| --- |" + " --- |" * len(letters))
        for row in doc["settings"]:
            values = " | ".join(f"`{_cell(v)}`" for v in row["values"])
            lines.append(f"| {row['name']} | {values} |")
    if doc.get("context"):
        lines += ["", "Context that differs (it changes what is measured):", ""]
        lines += ["| context | " + " | ".join(letters) + " | why |"]
        lines.append("| --- |" + " --- |" * (len(letters) + 1))
        for row in doc["context"]:
            values = " | ".join(_cell(v) for v in row["values"])
            lines.append(f"| {row['name']} | {values} | {_cell(row['why'])} |")
    lines += [
        "",
        "Ratios are each run's value over A's; *within noise*: smaller than the runs' "
        "own spread (their CV, or their intervals across processes), not a difference to call.",
    ]
    lines += [f"- {_cell(note)}" for note in doc.get("notes", [])]
    return "\n".join(lines) + "\n"


def export_comparison(doc: dict[str, Any], directory: Path, stem: str) -> list[Path]:
    """``stem.json`` (the document) and ``stem.md`` (its table) side by side."""
    json_path, md_path = directory / f"{stem}.json", directory / f"{stem}.md"
    atomic_write(json_path, json.dumps(doc, indent=1) + "\n")
    atomic_write(md_path, comparison_markdown(doc))
    return [json_path, md_path]


def _cell(value: object) -> str:
    """A value from a run, safe inside a Markdown table."""
    return str(value).replace("|", "\\|").replace("`", "'")
