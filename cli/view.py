"""The TUI: ``warmscope [TARGET]`` on a target, ``warmscope open RECORD...`` over records."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from warmscope.cli.command import EPILOG, Command, UsageParser, add_records
from warmscope.cli.options import add_run_options, add_view_options, build_settings
from warmscope.core.base.safe_text import clean_line
from warmscope.core.child.outcome import UsageError
from warmscope.sample_models import DEFAULT_SAMPLE

DESCRIPTION = """\
Watch what a PyTorch model does in its first forward passes, live, and which executor
setting changes that. Each run is a fresh child process: JIT state is process-wide.

  warmscope                          TUI on the default sample model
  warmscope TARGET [OPTIONS]         TUI on TARGET
  warmscope run TARGET [OPTIONS]     headless: live progress on stderr, summary on stdout
  warmscope sweep TARGET [OPTIONS]   several settings x several fresh processes, interleaved;
                                     medians with 95% intervals and a one-line answer
  warmscope warmup TARGET [OPTIONS]  derive a warm-up recipe, verify it in fresh processes,
                                     write it as a Python file (--emit)
  warmscope open RECORD...           TUI over saved run records (or a sweep's runs)
  warmscope compare RECORD...        side-by-side summary in the terminal (runs or a sweep)
  warmscope report RECORD            a Markdown report to paste into an issue or forum post
  warmscope export RECORD...         a record as JSON, CSV or Markdown (--format, -o PATH)
  warmscope exec [OPTIONS] -- CMD    the forward calls of your own Python program, live
                                     (--headless: lines as it goes, summaries at its end)
  warmscope samples                  list the bundled sample models
  warmscope knobs                    list every --set knob and --preset

TARGET: model.pt (TorchScript archive), model.pt2 (a torch.export.save program or an
AOTInductor package), path/file.py:factory, package.module:factory, sample:NAME. A factory
returns an nn.Module (optionally with example inputs: a module-level example_inputs() or a
(module, inputs) tuple).
"""


MAX_SWEEP_RUNS = 2000
"""The most run records of one sweep document the TUI opens: each is a run of the session,
held in memory with its iterations."""


def open_records(paths: list[Path]) -> tuple[list[Path], list[dict[str, Any]]]:
    """``warmscope open``: run records as given; a sweep document stands for its runs, and the
    TUI shows its answer and table first. Each file is read here, to fail early in one line
    (a long record's header only: the TUI reads the rest with its progress on screen)."""
    # the record reader: `warmscope TARGET` opens none, and its first frame waits for no reader
    from warmscope.core.data.record import QUICK_READ_BYTES, check_header, read_run

    records: list[Path] = []
    sweeps: list[dict[str, Any]] = []
    for path in paths:
        # A sweep document is .json: only then the sweep machinery, which the TUI's first
        # frame does not need for a run record.
        if path.suffix == ".json" and _is_sweep(path):
            from warmscope.core.data.sweep_document import read_sweep, sweep_runs

            doc = read_sweep(path)
            runs = sweep_runs(doc, path)
            if not runs:
                raise UsageError(f"sweep {clean_line(str(path))}: none of its run records exist")
            if len(runs) > MAX_SWEEP_RUNS:
                raise UsageError(
                    f"sweep {clean_line(str(path))} names {len(runs):,} run records: the TUI "
                    f"opens at most {MAX_SWEEP_RUNS:,} (`warmscope report` reads the document)"
                )
            records += runs
            sweeps.append(doc)
        else:
            if check_header(path) <= QUICK_READ_BYTES:
                read_run(path)  # a long one is read by the TUI, behind its first frame
            records.append(path)
    return records, sweeps


def _is_sweep(path: Path) -> bool:
    # as above: only `open` reads documents
    from warmscope.core.data.sweep_document import is_sweep_document

    return is_sweep_document(path)


def run_tui(
    args: argparse.Namespace,
    argv: list[str],
    records: list[Path] | None = None,
    sweeps: list[dict[str, Any]] | None = None,
) -> int:
    try:
        # Textual and the app: loaded once the command line is known to start the TUI
        from warmscope.tui.terminal_app import run_app
    except ImportError as exc:
        raise UsageError(
            f"the TUI is not available in this build ({exc}); use `warmscope run`"
        ) from None
    settings = build_settings(args) if records is None else None
    if settings is not None:
        # With the run machinery: checked before the first frame, once, here.
        from warmscope.core.run import remote_target

        remote_target.resolve(settings)
    refresh = refresh_rate(args)
    return run_app(
        settings=settings,
        records=records or [],
        record_path=getattr(args, "record", None),
        overwrite=getattr(args, "overwrite", False),
        refresh_hz=refresh,
        mouse=getattr(args, "mouse", False),
        ascii=getattr(args, "ascii", False),
        sweeps=sweeps or [],
    )


def refresh_rate(args: argparse.Namespace) -> float:
    refresh = getattr(args, "refresh", 2.0)
    if not (math.isfinite(refresh) and refresh > 0):
        raise UsageError(f"--refresh must be a positive number of repaints a second, got {refresh}")
    return float(refresh)


def tui_parser() -> UsageParser:
    """The parser of ``warmscope [TARGET]``, the command line with no command word."""
    p = UsageParser(
        prog="warmscope",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "target",
        metavar="TARGET",
        nargs="?",
        default=f"sample:{DEFAULT_SAMPLE}",
        help=f"what to run (default sample:{DEFAULT_SAMPLE})",
    )
    add_run_options(p, headless=False)
    return p


def run_open(args: argparse.Namespace, argv: list[str]) -> int:
    records, sweeps = open_records(args.records)
    return run_tui(args, argv, records=records, sweeps=sweeps)


def add_open_arguments(p: argparse.ArgumentParser) -> None:
    add_records(p)
    add_view_options(p)


COMMANDS = (
    Command(
        "open",
        add_open_arguments,
        run_open,
        description="Open saved run records (.jsonl) or --json documents in the TUI.",
    ),
)
