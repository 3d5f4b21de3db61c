"""``warmscope compare SIDE...``: runs side by side, or a sweep document's table.

A side is one record, or the processes of one setting repeated: a folder of records (the
folder ``run --repeat`` writes), a quoted pattern (``'runs/a-*.jsonl'``), or the document of
a one-setting sweep. One process a side gets the one-process rule; several get intervals
(``output.verdicts``).
"""

from __future__ import annotations

import argparse
import glob
import json
from pathlib import Path

from warmscope.cli.command import Command
from warmscope.cli.console import emit
from warmscope.core.base.safe_text import clean_line
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.reading import tell_live
from warmscope.core.data.record import read_summarized
from warmscope.core.data.run import RunData
from warmscope.core.data.sweep_document import is_sweep_document, read_sweep, record_path
from warmscope.core.output.comparison import comparison
from warmscope.core.output.settings_diff import run_diff
from warmscope.core.output.text_views import render_comparison, render_sweep

GLOB_CHARS = "*?["


def side_paths(arg: Path) -> list[Path]:
    """The records one argument names: itself, a folder's ``*.jsonl``, a pattern's matches,
    or a one-setting sweep document's processes."""
    shown = clean_line(str(arg))
    if arg.is_dir():
        found = sorted(arg.glob("*.jsonl"))
        if not found:
            raise UsageError(f"{shown} is a folder with no run records (*.jsonl) in it")
        return found
    if not arg.exists() and any(c in str(arg) for c in GLOB_CHARS):
        found = sorted(Path(p) for p in glob.glob(str(arg)))
        if not found:
            raise UsageError(f"no record matches {shown}")
        return found
    if is_sweep_document(arg):
        doc = read_sweep(arg)
        cells = doc.get("cells") or []
        if len(cells) != 1:
            raise UsageError(
                f"{shown} is a sweep of {len(cells)} settings: compare it alone, or name one "
                "setting's records"
            )
        named = [p.get("record") for p in cells[0].get("processes", [])]
        # Where a record is nowhere, its place beside the document: the reader names it.
        return [
            record_path(r, doc, arg) or arg.parent / Path(r).name
            for r in named
            if isinstance(r, str)
        ]
    return [arg]


def check_side(arg: Path, side: list[RunData]) -> None:
    """A side's processes must be repeats of one setting, or their figures mean nothing
    together."""
    first = side[0]
    for other in side[1:]:
        diff = run_diff(first, other)
        if other.settings.target != first.settings.target:
            what = "target"
        elif diff:
            what = diff[0].name
        else:
            continue
        raise UsageError(
            f"{clean_line(str(arg))}: its records differ in {what} "
            f"({clean_line(str(first.record_path))}, {clean_line(str(other.record_path))}): "
            "a side is repeats of one setting"
        )


def run(args: argparse.Namespace, argv: list[str]) -> int:
    args_ = args.records
    if len(args_) == 1 and is_sweep_document(args_[0]):
        doc = read_sweep(args_[0])
        if args.json:
            emit(json.dumps(doc, indent=1))
        else:
            emit(render_sweep(doc))
        return outcome.EXIT_OK
    if len(args_) < 2:
        raise UsageError(
            "compare needs two or more sides (a record, a folder of records, a pattern), or "
            "one sweep document"
        )
    groups = [side_paths(a) for a in args_]
    runs = read_summarized([p for g in groups for p in g])
    tell_live(runs)
    sides: list[list[RunData]] = []
    for arg, group in zip(args_, groups, strict=True):
        sides.append(runs[: len(group)])
        runs = runs[len(group) :]
        check_side(arg, sides[-1])
    doc = comparison(sides, [str(a) for a in args_])
    if args.json:
        emit(json.dumps(doc, indent=1))
    else:
        emit(render_comparison(doc))
    return outcome.EXIT_OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "records",
        nargs="+",
        type=Path,
        metavar="SIDE",
        help="a record, a folder of records of one setting (run --repeat's), a quoted "
        "pattern, or a sweep document",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the comparison as JSON (the warmscope-comparison document)",
    )
    p.add_argument("--verbose", action="store_true")


COMMANDS = (
    Command(
        "compare",
        add_arguments,
        run,
        description="Runs side by side (warm-up, percentiles, settings, the context that "
        "differs), each against the first; a side of repeated processes is compared by its "
        "intervals. Or a sweep document's answer and table.",
    ),
)
