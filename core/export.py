"""Exports of one run: the ``--json`` document, a CSV of iterations, a Markdown summary."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from warmscope.core.knobs import changed
from warmscope.core.run import RunData

FORMATS = ("json", "csv", "md")


def atomic_write(path: Path, text: str) -> None:
    """Write beside, then rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_json(path: Path, data: RunData) -> Path:
    atomic_write(path, json.dumps(data.to_document(), indent=1, default=str) + "\n")
    return path


def write_csv(path: Path, data: RunData) -> Path:
    """One row per iteration: index, latency, start offset, label, event count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    labels = data.labelled()
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["iteration", "ms", "start_ms", "label", "events"])
        for i, (ms, st) in enumerate(zip(data.ms, data.start_ms, strict=True)):
            w.writerow([i, f"{ms:.6f}", f"{st:.6f}", labels.get(i, ""), len(data.events_at(i))])
    os.replace(tmp, path)
    return path


def changed_knobs(data: RunData) -> dict[str, object]:
    """Knobs of a recorded run that differ from their defaults."""
    return changed(data.settings.get("knobs", {}))


def markdown(data: RunData, max_rows: int = 12) -> str:
    """A summary ready to paste into an issue or a forum post."""
    s = data.summary()
    env = data.env
    target = data.settings.get("target", "?")
    lines = [f"### warmscope: `{target}`", ""]
    lines.append(
        f"torch {env.get('torch', '?')} · Python {env.get('python', '?')} · "
        f"{env.get('cpu_model', '?')} ({env.get('cpu_logical', '?')} logical cores) · "
        f"{env.get('intra_op_threads', '?')} threads"
        + (f" · {env['gpu']}" if env.get("gpu") else "")
    )
    changed = changed_knobs(data)
    if changed:
        lines.append("Settings: " + ", ".join(f"`{k}={_show(v)}`" for k, v in changed.items()))
    lines.append(
        f"Status: **{data.status}**" + (f" ({data.status_detail})" if data.status_detail else "")
    )
    lines += ["", "| metric | value |", "| --- | --- |"]
    rows = [
        ("iterations", str(s.count)),
        ("first iteration", _ms(s.first_ms)),
        ("steady from", "-" if s.steady_from is None else f"#{s.steady_from}"),
        ("warm-up excess", _ms(s.warmup_excess_ms)),
        ("p50 / p90 / p99", f"{_ms(s.p50_ms)} / {_ms(s.p90_ms)} / {_ms(s.p99_ms)}"),
        ("CV", "-" if s.cv is None else f"{s.cv * 100:.1f}%"),
    ]
    lines += [f"| {k} | {v} |" for k, v in rows]
    if data.phases:
        lines += ["", "Phases: " + ", ".join(f"{k} {_ms(v)}" for k, v in data.phases.items())]
    warm = sorted(set(range(min(s.steady_from or 0, data.count))) | set(data.labelled()))[:max_rows]
    if warm:
        lines += ["", "| iteration | ms | label | events |", "| ---: | ---: | --- | --- |"]
        for i in warm:
            titles = "; ".join(sorted({e.title for e in data.events_at(i) if e.kind != "stderr"}))
            lines.append(f"| {i} | {data.ms[i]:.3f} | {data.label(i) or ''} | {titles[:120]} |")
    if data.command:
        lines += ["", "Reproduce: `" + " ".join(data.command) + "`"]
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, data: RunData) -> Path:
    atomic_write(path, markdown(data))
    return path


def export_all(data: RunData, directory: Path, stem: str) -> list[Path]:
    """All three formats side by side: ``stem.json``, ``stem.csv``, ``stem.md``."""
    return [
        write_json(directory / f"{stem}.json", data),
        write_csv(directory / f"{stem}.csv", data),
        write_markdown(directory / f"{stem}.md", data),
    ]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} ms"


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "default" if value is None else str(value)
