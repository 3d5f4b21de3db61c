"""``warmscope export RECORD... --format json|csv|md [-o PATH]``: a record's data, as a program
or a post wants it, on stdout (or into PATH).

- ``json``: the run's ``--json`` document, exactly; several records: a JSON list of them.
- ``csv``: one row per iteration (``export.CSV_COLUMNS``); several records: one header, and a
  ``run`` column first naming each row's record as given.
- ``md``: the report ``warmscope report`` writes; several: one after the other, split by ``---``.

Sweep documents (``sweep.json``) export the same way: ``json`` the document, ``csv`` a row per
process (``export.SWEEP_CSV_COLUMNS``), ``md`` the sweep's report.

Records are read one at a time and written as they are read: memory holds one run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from warmscope.cli.command import Command
from warmscope.cli.console import reason
from warmscope.core.base.files import beside
from warmscope.core.base.safe_text import clean, clean_line
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.record import read_run
from warmscope.core.data.sweep_document import is_sweep_document, read_sweep
from warmscope.core.output import export
from warmscope.core.output.report import report, sweep_report

FORMATS = ("json", "csv", "md")


@contextmanager
def _out(path: Path | None) -> Iterator[TextIO]:
    """stdout, or a file written beside ``path`` and renamed onto it once whole."""
    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    try:
        with beside(path, newline="") as f:
            yield f
    except OSError as exc:
        raise UsageError(f"cannot write {clean_line(str(path))}: {reason(exc)}") from None


def _check(records: list[Path], output: Path | None) -> bool:
    """Every file before anything is written: a file, not the output; all records, or all
    sweep documents (``True``)."""
    sweeps = []
    for record in records:
        shown = clean_line(str(record))
        if record.is_dir():
            raise UsageError(f"{shown} is a folder: name its records (FOLDER/*.jsonl)")
        if output is not None and record.resolve() == output.resolve():
            raise UsageError(
                f"-o {clean_line(str(output))} is also a record read: give another path"
            )
        sweeps.append(is_sweep_document(record))
    if any(sweeps) and not all(sweeps):
        raise UsageError("records and sweep documents have different columns: export them apart")
    return all(sweeps)


def _sweeps(args: argparse.Namespace, records: list[Path], output: Path | None) -> int:
    """Sweep documents: the document, a row per process, or the sweep's report."""
    several = len(records) > 1
    docs = [read_sweep(path) for path in records]  # small: a document holds no iteration
    with _out(output) as f:
        if args.format == "json":
            f.write(json.dumps(docs if several else docs[0], indent=1) + "\n")
        elif args.format == "csv":
            writer = export.sweep_csv_writer(f, with_sweep=several)
            for path, doc in zip(records, docs, strict=True):
                export.sweep_csv_rows(writer, doc, str(path) if several else None)
        else:
            texts = [sweep_report(doc) for doc in docs]
            f.write(clean("\n---\n\n".join(texts)))  # a file is shown on a terminal too
    if output is not None:
        print(f"{args.format} of {len(records)} sweep(s) written to {output}", file=sys.stderr)
    return outcome.EXIT_OK


def run(args: argparse.Namespace, argv: list[str]) -> int:
    records: list[Path] = args.records
    output: Path | None = args.output
    if args.format is None:
        suffix = output.suffix.lstrip(".").lower() if output is not None else ""
        args.format = suffix if suffix in FORMATS else "json"
    if _check(records, output):
        return _sweeps(args, records, output)
    several = len(records) > 1
    # The first record is read before the output is opened: a bad one leaves no file behind.
    first = read_run(records[0])
    with _out(output) as f:
        writer = export.csv_writer(f, with_run=several) if args.format == "csv" else None
        if args.format == "json" and several:
            f.write("[\n")
        for n, path in enumerate(records):
            data = first if n == 0 else read_run(path)
            if args.format == "json":
                if n:
                    f.write(",\n")
                export.dump_json(f, data)
            elif args.format == "csv":
                export.csv_rows(writer, data, str(path) if several else None)
            else:
                text = report(data)
                # As `warmscope report` prints it: nothing from the record (a target, an
                # event's title) can drive the terminal that shows it, or the file, later.
                f.write(("\n---\n\n" if n else "") + clean(text))
        if args.format == "json" and several:
            f.write("]\n")
    if output is not None:
        print(f"{args.format} of {len(records)} record(s) written to {output}", file=sys.stderr)
    return outcome.EXIT_OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("records", nargs="+", type=Path, metavar="RECORD")
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="json: the run's --json document (a list for several records); csv: a row an "
        "iteration (iteration, ms, start_ms, shape, label, profiled; run first for several); "
        "md: the report. Default: from -o's suffix (.json, .csv, .md), else json",
    )
    p.add_argument("-o", "--output", type=Path, metavar="PATH", help="write here instead of stdout")
    p.add_argument("--verbose", action="store_true")


COMMANDS = (
    Command(
        "export",
        add_arguments,
        run,
        description="Write records as JSON (the --json document), CSV (a row an iteration) or "
        "Markdown (the report), to stdout or -o PATH. Sweep documents: the document, a row a "
        "process, or the sweep's report.",
    ),
)
