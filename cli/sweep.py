"""``warmscope sweep TARGET`` and ``run --repeat``: cells × fresh processes, interleaved."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from warmscope.cli.command import Command
from warmscope.cli.console import STDOUT, check_json_path, emit, say
from warmscope.cli.options import TARGET_HELP, add_run_options, build_settings
from warmscope.cli.progress import SweepProgress, done_line
from warmscope.core.base.safe_text import clean_line
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.sweep_plan import NEEDS_TWO, check_repeat, plan, split_names
from warmscope.core.output.text_views import render_sweep
from warmscope.core.run.hangup import HangupGuard
from warmscope.core.run.ray_executor import start_executor
from warmscope.core.run.sweep import Sweep, grid


def sweep_cells(args: argparse.Namespace, *, sweep: bool) -> list[Any]:
    """The cells of ``warmscope sweep`` (presets × ``--vary`` grid), or the one cell of
    ``run --repeat``: ``sweep.grid`` over the settings the options give without ``--preset``
    (a sweep's presets are its cells), from the plan the TUI's form parses the same way."""
    if not sweep:
        check_repeat(args.repeat)
        return grid(build_settings(args), [], [])
    chosen = plan(
        args.repeat,
        split_names(args.preset or ""),
        args.vary,
        adaptive=bool(getattr(args, "adaptive", False)),
    )
    if not chosen.sweeps:
        raise UsageError(NEEDS_TWO)
    base = build_settings(argparse.Namespace(**{**vars(args), "preset": None}))
    return grid(base, chosen.presets, chosen.varies)


def run_sweep(args: argparse.Namespace, argv: list[str], *, sweep: bool) -> int:
    """``warmscope sweep`` (``sweep``), or ``run --repeat N``: one cell in N processes."""
    if args.profile_iters:
        # The profiler slows the iterations it profiles: a cold start measured under it is
        # not the cold start. Profile in a run of its own.
        raise UsageError(
            "--profile-iters does not go with "
            + ("a sweep" if sweep else "--repeat")
            + ": profile in a `warmscope run` of its own"
        )
    cells = sweep_cells(args, sweep=sweep)
    to_stdout = args.json is not None and str(args.json) == STDOUT
    if args.json is not None:
        check_json_path(args.json, None, stdout_ok=True)
    if args.record is not None and args.record.exists():
        raise UsageError(
            f"--record {clean_line(str(args.record))} exists: a sweep writes a new folder"
        )
    executor = start_executor(getattr(args, "executor", "local"))
    try:
        job = Sweep(
            target=args.target,
            cells=cells,
            repeat=args.repeat,
            rank_by=getattr(args, "rank_by", "first"),
            adaptive=bool(getattr(args, "adaptive", False)),
            command=["warmscope", *argv],
            folder=args.record,
            json_path=None if to_stdout else args.json,
            executor=executor,
        )
        return _run(job, args, to_stdout=to_stdout)
    finally:
        if executor is not None:
            executor.close()


def _run(job: Any, args: argparse.Namespace, *, to_stdout: bool = False) -> int:
    job.prepare_folder()
    progress = None if args.quiet or not sys.stderr.isatty() else SweepProgress()
    hangup = HangupGuard()
    try:
        doc = job.run(
            on_update=progress.show if progress else None,
            on_done=None if args.quiet else (progress.done if progress else done_line),
            hung_up=lambda: hangup.fired,
        )
    finally:
        if progress:
            progress.close()
        hangup.restore()
    if job.aborted:
        say(job.aborted)
        return outcome.EXIT_USAGE
    if to_stdout:
        # stdout holds the document alone: the answer goes where the progress went.
        print(render_sweep(doc), file=sys.stderr)
        emit(json.dumps(doc, indent=1, default=str))
    else:
        emit(render_sweep(doc))
    if job.stopped:
        return outcome.EXIT_STOPPED
    if any(p.data.status != outcome.OK for p in job.processes):
        return outcome.EXIT_FAILED
    return outcome.EXIT_OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    add_run_options(p, headless=True, sweep=True)
    add_executor_option(p)


def add_executor_option(p: argparse._ActionsContainer) -> None:
    """``--executor local|ray[:ADDRESS]`` (``sweep`` and ``warmup``)."""
    p.add_argument(
        "--executor",
        default="local",
        metavar="local|ray[:ADDRESS]",
        help="where the processes run: local (here, one at a time; the default) or ray: one "
        "Ray task per process, a whole node each (no address: an embedded local Ray; "
        "ray:auto or ray:ray://HOST:PORT joins a cluster; pip install 'warmscope[ray]')",
    )


COMMANDS = (
    Command(
        "sweep",
        add_arguments,
        lambda args, argv: run_sweep(args, argv, sweep=True),
        description="Run TARGET under several settings (--preset A,B and/or --vary "
        "KNOB=V1,V2), each in --repeat fresh processes, interleaved (A B A B …); with "
        "--adaptive, until the answer is decided. Prints the answer first (a best only where it "
        "is beyond noise better than every other), then each setting's medians with intervals "
        "across processes, at the coverage they reach.",
        epilog=True,
    ),
)
