"""``warmscope report RECORD``: a Markdown report of a run or a sweep."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from warmscope.core.child import outcome
from warmscope.core.cli.command import Command
from warmscope.core.cli.console import emit
from warmscope.core.data.record import read_run
from warmscope.core.output.safe_text import clean


def run(args: argparse.Namespace, argv: list[str]) -> int:
    record, against, output = args.record, args.against, args.output
    from warmscope.core.output.export import atomic_write
    from warmscope.core.output.report import report, sweep_report
    from warmscope.core.run.sweep import is_sweep_document, read_sweep

    if is_sweep_document(record):
        text = sweep_report(read_sweep(record))
    else:
        text = report(read_run(record, ms=False), read_run(against, ms=False) if against else None)
    if output is None:
        emit(clean(text), end="")
    else:
        atomic_write(output, text)
        print(f"report written to {output}", file=sys.stderr)
    return outcome.EXIT_OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("record", type=Path, metavar="RECORD")
    p.add_argument(
        "--against",
        type=Path,
        metavar="RECORD",
        help="a run with other settings, for the hints",
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
