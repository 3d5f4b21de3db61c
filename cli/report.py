"""``warmscope report RECORD``: a Markdown report of a run or a sweep, or its facts as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from warmscope.cli.command import Command
from warmscope.cli.console import emit
from warmscope.core.base.files import atomic_write
from warmscope.core.base.safe_text import clean
from warmscope.core.child import outcome
from warmscope.core.data import document
from warmscope.core.data.record import read_run
from warmscope.core.data.sweep_document import is_sweep_document, read_sweep
from warmscope.core.output.comparison import comparison
from warmscope.core.output.hints import hints
from warmscope.core.output.report import report, sweep_report


def run(args: argparse.Namespace, argv: list[str]) -> int:
    record, against, output = args.record, args.against, args.output
    if is_sweep_document(record):
        sweep = read_sweep(record)
        text = json.dumps(sweep, indent=1) + "\n" if args.format == "json" else sweep_report(sweep)
    elif args.format == "json":
        text = json.dumps(report_document(record, against), indent=1, default=str) + "\n"
    else:
        text = report(read_run(record, ms=False), read_run(against, ms=False) if against else None)
    if output is None:
        emit(clean(text), end="")
    else:
        atomic_write(output, clean(text))  # a file is shown on a terminal too
        print(f"report written to {output}", file=sys.stderr)
    return outcome.EXIT_OK


def report_document(record: Path, against: Path | None) -> dict[str, Any]:
    """The report's facts for a program: the run's ``--json`` document, the hints, and the
    comparison with ``against`` (the ``compare --json`` document) where one is given."""
    data = read_run(record)
    other = read_run(against) if against else None
    return {
        "format": "warmscope-report",
        "version": 1,
        "run": document.to_document(data),
        "hints": hints(data, other),
        "comparison": comparison([data, other], [str(record), str(against)]) if other else None,
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("record", type=Path, metavar="RECORD")
    p.add_argument(
        "--against",
        type=Path,
        metavar="RECORD",
        help="a run with other settings, for the hints",
    )
    p.add_argument(
        "--format",
        choices=("md", "json"),
        default="md",
        help="md: the report (default); json: the run's --json document with the hints (and "
        "the comparison with --against); a sweep document: itself",
    )
    p.add_argument("-o", "--output", type=Path, metavar="PATH", help="write here instead of stdout")
    p.add_argument("--verbose", action="store_true")


COMMANDS = (
    Command(
        "report",
        add_arguments,
        run,
        description="Write a Markdown report of a run: environment, settings, latency, warm-up "
        "iterations, operator breakdown against steady state, hints, and the command to reproduce it.",
    ),
)
