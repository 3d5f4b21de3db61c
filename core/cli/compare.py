"""``warmscope compare RECORD...``: runs side by side, or a sweep document's table."""

from __future__ import annotations

import argparse

from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.cli.command import Command, add_records
from warmscope.core.cli.console import emit
from warmscope.core.data.reading import tell_live
from warmscope.core.data.record import read_summarized
from warmscope.core.output.digest import comparison
from warmscope.core.output.text_views import render_comparison, render_sweep


def run(args: argparse.Namespace, argv: list[str]) -> int:
    from warmscope.core.run.sweep import is_sweep_document, read_sweep

    paths = args.records
    sweeps = [p for p in paths if is_sweep_document(p)]
    if sweeps:
        if len(paths) != 1:
            raise UsageError("compare takes one sweep document, or run records (not both)")
        emit(render_sweep(read_sweep(paths[0])))
        return outcome.EXIT_OK
    if len(paths) < 2:
        raise UsageError("compare needs two or more run records, or one sweep document")
    runs = read_summarized(paths)
    tell_live(runs)
    emit(render_comparison(comparison(runs, [str(p) for p in paths])))
    return outcome.EXIT_OK


COMMANDS = (
    Command(
        "compare",
        add_records,
        run,
        description="Runs side by side (warm-up, percentiles, settings), or a sweep document's "
        "answer and table.",
    ),
)
