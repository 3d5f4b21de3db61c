"""The command line: ``warmscope [run|open|compare|samples|knobs] ...``.

Exit codes: 0 the run completed; 1 the run failed (the model raised, the child crashed or
timed out); 2 bad usage or a bad target/input, named in one line; 130 stopped by the user.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from warmscope.core import outcome
from warmscope.core.digest import (
    digest,
    event_list_text,
    memory_text,
    metric_rows,
    run_diff,
    settings_line,
)
from warmscope.core.export import write_json
from warmscope.core.knobs import KNOBS, show_value
from warmscope.core.outcome import UsageError, WarmscopeError
from warmscope.core.reading import tell_live
from warmscope.core.record import QUICK_READ_BYTES, check_header, read_run, read_summarized
from warmscope.core.run import RunData
from warmscope.core.run_fields import FIELDS
from warmscope.core.safe_text import clean, clean_line
from warmscope.core.sampler import warmscope_version
from warmscope.core.setting_fields import CAPTURE as CAPTURE_GROUP
from warmscope.core.setting_fields import RUN as RUN_GROUP
from warmscope.core.setting_fields import read as read_setting
from warmscope.core.settings import PRESETS, RunSettings
from warmscope.core.sweep import DEFAULT_REPEAT
from warmscope.core.units import metric as metric_cell
from warmscope.core.units import ms as fmt_ms
from warmscope.core.units import rate

SUMMARY_WARMUP_ROWS = 12

COMMANDS = ("run", "sweep", "open", "compare", "report", "samples", "knobs")

DESCRIPTION = """\
Watch what a PyTorch model does in its first forward passes, live, and which executor
setting changes that. Each run is a fresh child process: JIT state is process-wide.

  warmscope                          TUI on the default sample model
  warmscope TARGET [OPTIONS]         TUI on TARGET
  warmscope run TARGET [OPTIONS]     headless: live progress on stderr, summary on stdout
  warmscope sweep TARGET [OPTIONS]   several settings x several fresh processes, interleaved;
                                     medians with 95% intervals and a one-line answer
  warmscope open RECORD...           TUI over saved run records (or a sweep's runs)
  warmscope compare RECORD...        side-by-side summary in the terminal (runs or a sweep)
  warmscope report RECORD            a Markdown report to paste into an issue or forum post
  warmscope samples                  list the bundled sample models
  warmscope knobs                    list every --set knob and --preset

TARGET: model.pt (TorchScript archive), path/file.py:factory, package.module:factory,
sample:NAME. A factory returns an nn.Module (optionally with example inputs: a module-level
example_inputs() or a (module, inputs) tuple).
"""

EPILOG = """\
exit codes: 0 completed, 1 the run failed (model raised, child crashed, timeout),
2 bad usage or bad target/input, 130 stopped with Ctrl-C.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse echoes unrecognized arguments as given: never raw escape sequences.
        raise UsageError(clean_line(message))


def add_run_options(p: argparse.ArgumentParser, *, headless: bool, sweep: bool = False) -> None:
    """The run settings' options (``setting_fields.FIELDS``, in its order), with the options of
    the command itself where ``--help`` lists them."""
    groups = {group: p.add_argument_group(group) for group in (RUN_GROUP, CAPTURE_GROUP)}
    g = groups[RUN_GROUP]
    for setting in FIELDS:
        for option in setting.options:
            if option.applies(sweep):
                groups[setting.group].add_argument(*option.flags, **option.spec)
            if option.flags == ("--preset",) and sweep and option.applies(sweep):
                g.add_argument(
                    "--vary",
                    action="append",
                    default=[],
                    metavar="KNOB=V1,V2",
                    help="values of a knob to compare; several --vary make a grid",
                )
                g.add_argument(
                    "--rank-by",
                    default="first",
                    metavar="OBJECTIVE",
                    help="first (default), warmup, steady, or total@K (time to serve K calls from "
                    "process start)",
                )
            if option.flags == ("--timeout",) and headless:
                g.add_argument(
                    "--repeat",
                    type=int,
                    default=DEFAULT_REPEAT if sweep else 1,
                    metavar="N",
                    help="fresh processes per setting; with N > 1 the output is medians with 95%% "
                    f"intervals across processes (default {DEFAULT_REPEAT if sweep else 1})",
                )
    g = groups[CAPTURE_GROUP]
    g.add_argument(
        "--record",
        type=Path,
        metavar="PATH",
        help="where to write the run record (default: under ~/.local/state/warmscope/runs); "
        "with --repeat or sweep: a new folder for the records and the sweep document",
    )
    g.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --record file (never one a live run is writing)",
    )
    if not headless:
        add_view_options(p)
    if headless:
        g.add_argument(
            "--json",
            type=Path,
            metavar="PATH",
            help="also write one JSON document (written whatever the outcome); with --repeat "
            "or sweep, the warmscope-sweep document",
        )
        g.add_argument("--quiet", action="store_true", help="no live progress line")
    p.add_argument("--verbose", action="store_true", help="tracebacks for errors")
    p.add_argument("--version", action="version", version=f"warmscope {warmscope_version()}")


def add_view_options(p: argparse.ArgumentParser) -> None:
    """How the TUI draws: for the TUI on a target and for ``open``."""
    g = p.add_argument_group("the live view")
    g.add_argument(
        "--refresh",
        type=float,
        default=2.0,
        metavar="HZ",
        help="repaint a pane at most HZ times a second (default 2; lower for a slow link)",
    )
    g.add_argument(
        "--mouse",
        action="store_true",
        help="track the mouse (off by default: every move is bytes over SSH, and the "
        "terminal keeps its own text selection)",
    )
    g.add_argument(
        "--ascii",
        action="store_true",
        help="draw with ASCII only: no braille, box drawing or symbols (on by itself "
        "where TERM is linux or vt100)",
    )


def build_settings(args: argparse.Namespace) -> RunSettings:
    """The settings the parsed options give (each field as ``FIELDS`` reads it, in its order:
    a preset before the knobs it sets, ``--set`` last)."""
    settings = RunSettings()
    for setting in FIELDS:
        read_setting(setting, args, settings)
    return settings


# -- headless run -------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace, argv: list[str]) -> int:
    from warmscope.core.run_plan import drive, start_run

    if args.repeat != 1:
        return cmd_sweep(args, argv)
    settings = build_settings(args)
    if args.json is not None:
        check_json_path(args.json, args.record)

    def tell(line: str, warning: bool) -> None:
        if warning or not args.quiet:
            print(f"warmscope: {clean_line(line)}", file=sys.stderr)

    # A record that cannot be written is refused here, before any child runs.
    session = start_run(
        settings,
        record_path=args.record,
        command=["warmscope", *argv],
        overwrite=args.overwrite,
        notify=tell,
    )
    progress = None if args.quiet or not sys.stderr.isatty() else Progress()
    hangup = HangupGuard()
    try:
        drive(
            session,
            on_update=(lambda update: progress.show(session, update)) if progress else None,
            hung_up=lambda: hangup.fired,
        )
    finally:
        if progress:
            progress.close()
        hangup.restore()
    if session.failure is not None:
        raise session.failure  # before the measured process ran (the warming one failed)
    data = session.data
    code = data.exit_code if data.exit_code is not None else outcome.EXIT_FAILED
    json_error = None
    if args.json is not None:
        try:
            write_json(args.json, data, parents=False)
        except (OSError, ValueError) as exc:  # ValueError: text that cannot be encoded
            json_error = f"cannot write --json {clean_line(str(args.json))}: {_reason(exc)}"
    if data.exit_code == outcome.EXIT_USAGE:
        # Found once the child ran: a factory that is missing or returns no module (its
        # message), an interpreter that is not a Python (the status detail). One line.
        message = data.error["message"] if data.error else data.status_detail
        print(f"warmscope: {clean_line(str(message))}", file=sys.stderr)
    else:
        emit(render_summary(data))
        if data.status != outcome.OK:
            show_failure(data, verbose=args.verbose)
    if json_error is not None:
        # The record and the summary stand; the document the caller asked for does not.
        print(f"warmscope: {json_error}", file=sys.stderr)
        return code if code != outcome.EXIT_OK else outcome.EXIT_FAILED
    return code


# -- sweep and run --repeat ----------------------------------------------------------------


def sweep_cells(args: argparse.Namespace, *, sweep: bool) -> list[Any]:
    """The cells of ``warmscope sweep`` (presets × ``--vary`` grid), or the one cell of
    ``run --repeat``."""
    from warmscope.core.run_plan import compile_cache_mode
    from warmscope.core.sweep import Cell, grid, parse_vary

    if not sweep:
        settings = build_settings(args)
        settings.compile_cache = compile_cache_mode(settings, repeated=True)
        return [Cell(settings_line(settings.to_json()), settings)]
    presets = [p.strip() for p in (args.preset or "").split(",") if p.strip()]
    for name in presets:
        if name not in PRESETS:
            raise UsageError(f"unknown preset {name!r}: one of {', '.join(PRESETS)}")
    if len(set(presets)) != len(presets):
        raise UsageError("--preset: a preset is given twice")
    varies = [parse_vary(v) for v in args.vary]

    def make(preset: str | None) -> RunSettings:
        return build_settings(argparse.Namespace(**{**vars(args), "preset": preset}))

    cells = grid(make, presets, varies)
    if len(cells) < 2:
        raise UsageError("a sweep needs at least two settings: --preset A,B or --vary KNOB=V1,V2")
    return cells


def cmd_sweep(args: argparse.Namespace, argv: list[str], *, sweep: bool = False) -> int:
    from warmscope.core.sweep import Sweep

    if args.profile_iters:
        # The profiler slows the iterations it profiles: a cold start measured under it is
        # not the cold start. Profile in a run of its own.
        raise UsageError(
            "--profile-iters does not go with "
            + ("a sweep" if sweep else "--repeat")
            + ": profile in a `warmscope run` of its own"
        )
    cells = sweep_cells(args, sweep=sweep)
    if args.json is not None:
        check_json_path(args.json, None)
    if args.record is not None and args.record.exists():
        raise UsageError(
            f"--record {clean_line(str(args.record))} exists: a sweep writes a new folder"
        )
    job = Sweep(
        target=args.target,
        cells=cells,
        repeat=args.repeat,
        rank_by=getattr(args, "rank_by", "first"),
        command=["warmscope", *argv],
        folder=args.record,
        json_path=args.json,
    )
    job.prepare_folder()
    progress = None if args.quiet or not sys.stderr.isatty() else SweepProgress()
    hangup = HangupGuard()
    try:
        doc = job.run(
            on_update=progress.show if progress else None,
            on_done=None if args.quiet else (progress.done if progress else _done_line),
            hung_up=lambda: hangup.fired,
        )
    finally:
        if progress:
            progress.close()
        hangup.restore()
    if job.aborted:
        print(f"warmscope: {clean_line(job.aborted)}", file=sys.stderr)
        return outcome.EXIT_USAGE
    emit(render_sweep(doc))
    if job.stopped:
        return outcome.EXIT_STOPPED
    if any(p.data.status != outcome.OK for p in job.processes):
        return outcome.EXIT_FAILED
    return outcome.EXIT_OK


def _done_line(sweep: Any, process: Any) -> None:
    print(clean_line(process_line(sweep, process)), file=sys.stderr)


def process_line(sweep: Any, process: Any) -> str:
    """``[3/8] torchscript #1 ok · first 43.1 ms · steady p50 2.77 ms · warm-up``."""
    from warmscope.core.sweep_digest import process_facts

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


class SweepProgress:
    """A live line on stderr (the process in progress) above which each finished one stays."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        self._text = Text
        self.console = Console(stderr=True)
        self.live = Live(Text(""), console=self.console, transient=True, refresh_per_second=10)
        self.live.start()
        self.count = 0
        self.step = -1

    def show(self, sweep: Any, step: int, session: Any, update: Any) -> None:
        if step != self.step:
            self.step, self.count = step, 0
        self.count += len(update.ms)
        c, r = sweep.plan[step]
        where = f"iteration {self.count}" if self.count else f"{update.phase or 'starting'}…"
        line = (
            f"process {step + 1}/{len(sweep.plan)} · {sweep.cells[c].label} (repeat {r + 1}/"
            f"{sweep.repeat}) · {where} · {session.elapsed():.1f} s"
        )
        self.live.update(self._text(clean_line(line)))

    def done(self, sweep: Any, process: Any) -> None:
        self.live.console.print(self._text(clean_line(process_line(sweep, process))))

    def close(self) -> None:
        self.live.stop()


def render_sweep(doc: dict[str, Any]) -> str:
    """A sweep document as text: the answer first, then one row per cell."""
    from warmscope.core.sweep_digest import count_text, iv_text

    cells = doc.get("cells", [])
    out = [f"answer     {doc.get('answer', '')}"]
    wall = doc.get("wall_s") or 0.0
    per = doc.get("per_process_s")
    head = (
        f"sweep      {doc.get('target', '?')} · {len(cells)} cell(s) × {doc.get('repeat', '?')} "
        f"processes, interleaved · {wall:.1f} s" + (f" ({per:.1f} s per process)" if per else "")
    )
    if doc.get("warming_s"):
        head += f" · {doc['warming_s']:.1f} s warming compile caches"
    out.append(head)
    out.append(f"intervals  median (95% interval) across processes; {doc.get('interval', '')}")
    columns = ["cell", "runs", "first", "warm-up excess", "steady from", "steady p50", "setup"]
    has_total = any("total_ms" in c for c in cells)
    if has_total:
        columns.append(f"total@{cells[0].get('total_calls')}")
    columns.append("shapes")
    rows = []
    for c in cells:
        row = [
            str(c.get("label", "?")),
            str(len(c.get("runs", []))),
            iv_text(c.get("first_ms")),
            iv_text(c.get("warmup_excess_ms")),
            count_text(c.get("steady_from")),
            iv_text(c.get("steady_p50_ms")),
            iv_text(c.get("setup_ms")),
        ]
        if has_total:
            row.append(iv_text(c.get("total_ms")))
        row.append(str(c.get("shapes", "-")))
        rows.append(row)
    widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(len(columns))]
    for r in [columns, *rows]:
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


def check_json_path(path: Path, record: Path | None) -> None:
    """``--json PATH`` before anything runs: an existing, writable folder, and not a folder
    itself. ``UsageError`` names the problem (exit 2, nothing spawned)."""
    shown = clean_line(str(path))
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"--json {shown} is a folder: give a file path")
    if not folder.exists():
        # Name the first missing folder: the one to create.
        missing = folder
        while not missing.parent.exists() and missing.parent != missing:
            missing = missing.parent
        raise UsageError(f"--json {shown}: no such folder {clean_line(str(missing))}")
    if not folder.is_dir():
        raise UsageError(f"--json {shown}: {clean_line(str(folder))} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--json {shown}: the folder {clean_line(str(folder))} is not writable")
    if record is not None and os.path.abspath(record) == os.path.abspath(path):
        raise UsageError(f"--json {shown} is also the --record path: give two different files")


def _reason(exc: BaseException) -> str:
    """An OS error's reason in words (``Permission denied``), else the exception's text."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return clean_line(str(exc)) or type(exc).__name__


def emit(text: str, end: str = "\n") -> None:
    """Print ``text`` on stdout; if the reader went away (``| head -1``), drop the rest quietly."""
    try:
        print(text, end=end)
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_gone()


def _stdout_gone() -> None:
    """Point stdout at /dev/null, so nothing more (the flush at exit included) raises
    ``BrokenPipeError``: the recipe of the ``signal`` module's "Note on SIGPIPE"."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class HangupGuard:
    """SIGHUP (the terminal went away) and SIGTERM stop the run like Ctrl-C, quickly.

    The record is then finished properly; the child would die with us anyway (parent-death
    signal), but this way its last iterations and the end line are written.
    """

    def __init__(self) -> None:
        self.fired = False
        self._previous = {
            sig: signal.signal(sig, self._handle) for sig in (signal.SIGHUP, signal.SIGTERM)
        }

    def _handle(self, signum: int, frame: object) -> None:
        self.fired = True
        if signum == signal.SIGHUP:
            # Writing to a closed terminal would fail or block: send output nowhere.
            devnull = os.open(os.devnull, os.O_WRONLY)
            for fd in (1, 2):
                os.dup2(devnull, fd)
        raise KeyboardInterrupt

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def show_failure(data: RunData, *, verbose: bool = False) -> None:
    """torch's own message (the whole traceback with --verbose), else the child's last stderr."""
    err = sys.stderr
    if data.error and data.error.get("traceback"):
        if verbose:
            print(clean(data.error["traceback"].rstrip()), file=err)
        else:
            print(clean(model_frames(data.error["traceback"])), file=err)
    elif data.status in (outcome.CRASHED, outcome.TIMEOUT):
        last = next((e for e in reversed(data.events) if e.kind == "stderr"), None)
        if last is not None:
            # The last block the child printed is its crash dump: its head says what happened.
            where = f"iteration {last.iteration}" if last.iteration is not None else last.phase
            lines = last.text.splitlines()
            print(f"the child's last output ({where}):", file=err)
            for line in lines[:25]:
                print(f"  {clean_line(line)}", file=err)
            if len(lines) > 25:
                print(f"  … {len(lines) - 25} more lines in {data.stderr_path}", file=err)
    print(f"warmscope: run {data.status}: {clean_line(str(data.status_detail))}", file=err)


def model_frames(tb: str) -> str:
    """The traceback from the model's own call on: warmscope's agent frames are noise here."""
    lines = tb.rstrip().splitlines()
    start = 0
    for n, line in enumerate(lines):
        if line.lstrip().startswith("File ") and "agent.py" in line:
            start = n + 2  # skip the agent frame and its source line
    body = lines[start:] if start < len(lines) else lines
    return "\n".join(["Traceback (most recent call last):", *body] if start else body)


class Progress:
    """One live line on stderr: iteration, last latency, rate."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        self._text = Text
        self.live = Live(
            Text(""), console=Console(stderr=True), transient=True, refresh_per_second=10
        )
        self.live.start()
        self.count = 0
        self.last = 0.0
        self.rate_at = (time.monotonic(), 0)
        self.rate = 0.0

    def show(self, session: Any, update: Any) -> None:
        self.count += len(update.ms)
        if update.ms:
            self.last = update.ms[-1]
        now = time.monotonic()
        t, n = self.rate_at
        if now - t >= 0.5:
            self.rate = (self.count - n) / (now - t)
            self.rate_at = (now, self.count)
        if self.count == 0:
            line = f"{update.phase or 'starting'}… {session.elapsed():.1f} s"
        else:
            line = f"iteration {self.count}  last {self.last:.3f} ms  {self.rate:,.0f} it/s"
        if update.busy:
            activity = update.busy.get("activity") or "running"
            line += f"  · iteration {update.busy['iteration']} {activity} for {update.busy['ms'] / 1000:.1f} s"
        self.live.update(self._text(clean_line(line)))

    def close(self) -> None:
        self.live.stop()


def render_summary(data: RunData) -> str:
    """The plain-text answer: first iteration, warm-up, percentiles, the slow iterations."""
    d = digest(data, max_warmup=SUMMARY_WARMUP_ROWS)
    s = d.summary
    out = [f"warmscope  {d.target}  mode={d.mode}  status={d.status_text}"]
    if d.changed:
        out.append("settings   " + "  ".join(f"{k}={v}" for k, v in d.changed.items()))
    if d.phases:
        out.append("phases     " + " · ".join(f"{k} {fmt_ms(v)}" for k, v in d.phases.items()))
    if d.inputs:
        given = f"  ({d.inputs_given})" if d.inputs_given and d.inputs_given != "--input" else ""
        out.append("inputs     " + " ".join(d.inputs) + given)
    out.append(f"iterations {s.count}")
    if s.count == 0:
        return "\n".join(out)
    out.append(f"first      {fmt_ms(s.first_ms)}")
    if s.steady_from is None:
        out.append("warm-up    not steady within the run")
    else:
        out.append(
            f"warm-up    {s.steady_from} iteration(s), steady from #{s.steady_from}; "
            f"{fmt_ms(s.warmup_excess_ms)} above steady state"
        )
    cv = f"{s.cv * 100:.1f}%" if s.cv is not None else "-"
    out.append(
        f"steady     p50 {fmt_ms(s.p50_ms)} · p90 {fmt_ms(s.p90_ms)} · p99 {fmt_ms(s.p99_ms)} · "
        f"mean {fmt_ms(s.mean_ms)} · CV {cv} · {rate(s.throughput_per_s)}"
    )
    if d.warmup:
        out.append("slow iterations")
        for row in d.warmup:
            out.append(
                f"  #{row.iteration:<5} {fmt_ms(row.ms):>11}  {row.label_text:<25} "
                f"{row.titles_text(100)}".rstrip()
            )
    if d.shapes:
        out.append("shapes     first call of each shape against its own steady p50")
        width = max(len(r["key"]) for r in d.shapes)
        for r in d.shapes:
            ratio = f"{r['first_vs_p50']:.2f}×" if r["first_vs_p50"] is not None else "-"
            first = f"#{r['first_iteration']}" if r["first_iteration"] is not None else "-"
            out.append(
                f"  {r['key']:<{width}}  {r['count']:>5} it  first {first:<6} "
                f"{fmt_ms(r['first_ms']):>10}  p50 {fmt_ms(r['p50_ms']):>10}  {ratio:>7}  "
                f"{event_list_text(r['events'], 80)}".rstrip()
            )
    if d.idle_probe:
        out.append("idle probe one call after each idle gap, against the steady p50")
        for r in d.idle_probe:
            vs = r["vs_p50"] or []
            calls = "  ".join(
                fmt_ms(t) + (f" ({v:.2f}×)" if vs else "")
                for t, v in zip(r["ms"], vs or r["ms"], strict=True)
            )
            out.append(f"  after {r['idle_s']:g} s  {calls}")
    if d.memory:
        out.append(f"memory     {memory_text(d.memory)}")
    for i in sorted(data.profiles):
        p = data.profiles[i]
        if "wall_ms" in p:
            out.append(
                f"profiled   #{i}: {fmt_ms(p['wall_ms'])} wall, {fmt_ms(p['ops_ms'])} in operators, "
                f"{fmt_ms(p['unaccounted_ms'])} in none"
                + (" (separate process)" if p.get("separate") else "")
                + (f"; trace {p['trace']}" if p.get("trace") else "")
            )
    for warning in d.warnings:
        out.append(f"warning    {warning}")
    for note in d.notes:
        out.append(f"note       {note}")
    if d.record_path:
        out.append(f"record     {d.record_path}")
    # Targets, knob values, event titles come from the user, the model or a record file.
    return clean("\n".join(out))


# -- other commands ------------------------------------------------------------------------


def cmd_samples() -> int:
    from warmscope.sample_models import DEFAULT_SAMPLE, SAMPLES

    width = max(len(n) for n in SAMPLES) + 7
    for name, sample in SAMPLES.items():
        mark = " (default)" if name == DEFAULT_SAMPLE else ""
        print(
            f"sample:{name:<{width - 7}}  mode {sample.mode:<7} input {' '.join(sample.inputs):<12} "
            f"{sample.summary}{mark}"
        )
    return outcome.EXIT_OK


def cmd_knobs() -> int:
    print("knobs (--set KEY=VALUE; 'default' leaves torch's own default):")
    for k in KNOBS:
        values = (
            "|".join(k.choices)
            if k.choices
            else {"bool": "on|off", "int": "N", "str": "TEXT"}[k.type]
        )
        print(f"  {k.name:<24} {values:<40} default {k.show(k.default)}")
        print(f"  {'':<24} {k.help}")
    print(
        "  env.NAME=VALUE            an environment variable for the child (OMP_NUM_THREADS, ...)"
    )
    print(
        "  dynamo.NAME=VALUE         torch._dynamo.config.NAME (cache_size_limit, allow_rnn, ...)"
    )
    print("  inductor.NAME=VALUE       torch._inductor.config.NAME (max_autotune, ...)")
    print("  (checked against the installed torch when the run starts; a refusal is reported)")
    print("\npresets (--preset NAME):")
    for p in PRESETS.values():
        knobs = ", ".join(f"{k}={show_value(v)}" for k, v in p.knobs.items())
        print(f"  {p.name:<14} {p.help}  [{knobs}]")
    return outcome.EXIT_OK


def open_records(paths: list[Path]) -> tuple[list[Path], list[dict[str, Any]]]:
    """``warmscope open``: run records as given; a sweep document stands for its runs, and the
    TUI shows its answer and table first. Each file is read here, to fail early in one line
    (a long record's header only: the TUI reads the rest with its progress on screen)."""
    from warmscope.core.sweep import is_sweep_document, read_sweep, sweep_runs

    records: list[Path] = []
    sweeps: list[dict[str, Any]] = []
    for path in paths:
        if is_sweep_document(path):
            doc = read_sweep(path)
            runs = sweep_runs(doc, path)
            if not runs:
                raise UsageError(f"sweep {clean_line(str(path))}: none of its run records exist")
            records += runs
            sweeps.append(doc)
        else:
            if check_header(path) <= QUICK_READ_BYTES:
                read_run(path)  # a long one is read by the TUI, behind its first frame
            records.append(path)
    return records, sweeps


def cmd_compare(paths: list[Path]) -> int:
    from warmscope.core.sweep import is_sweep_document, read_sweep

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
    if len(runs) == 2:
        emit(render_comparison(runs[0], runs[1], [str(p) for p in paths]))
    else:
        emit(render_many(runs, [str(p) for p in paths]))
    return outcome.EXIT_OK


def render_many(runs: list[RunData], names: list[str]) -> str:
    """Three or more runs side by side, each metric against the first run."""
    width = max(30, *(len(Path(n).name) for n in names))  # a value and "1.80× within noise"
    summaries = [r.summary() for r in runs]
    lines = [f"{'':<18} " + " ".join(f"{Path(n).name:>{width}}" for n in names)]
    lines.append(f"{'status':<18} " + " ".join(f"{r.status:>{width}}" for r in runs))
    lines.append(f"{'iterations':<18} " + " ".join(f"{r.count:>{width}}" for r in runs))
    columns = [metric_rows(summaries[0], s) for s in summaries]
    for n, row in enumerate(columns[0]):
        cells = [metric_cell(row.metric, row.a)]
        for col in columns[1:]:
            other = col[n]
            ratio = f" {other.ratio_text}" if other.ratio is not None else ""
            cells.append(metric_cell(other.metric, other.b) + ratio)
        lines.append(f"{row.metric:<18} " + " ".join(f"{c:>{width}}" for c in cells))
    lines.append("ratios: each run against the first")
    for i, r in enumerate(runs[1:], 1):
        diffs = run_diff(runs[0], r)
        if diffs:
            lines.append(f"settings of {Path(names[i]).name} that differ from the first:")
            for change in diffs:
                lines.append(f"  {change.name:<16} {change.a:>{width}} {change.b:>{width}}")
    return clean("\n".join(lines))


def cmd_report(record: Path, against: Path | None, output: Path | None) -> int:
    from warmscope.core.export import atomic_write
    from warmscope.core.report import report, sweep_report
    from warmscope.core.sweep import is_sweep_document, read_sweep

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


def render_comparison(a: RunData, b: RunData, names: list[str]) -> str:
    width = max(14, *(len(Path(n).name) for n in names))
    lines = [f"{'':<18} {Path(names[0]).name:>{width}} {Path(names[1]).name:>{width}}  ratio B/A"]
    lines.append(f"{'status':<18} {a.status:>{width}} {b.status:>{width}}")
    lines.append(f"{'iterations':<18} {a.count:>{width}} {b.count:>{width}}")
    for row in metric_rows(a.summary(), b.summary()):
        fa, fb = metric_cell(row.metric, row.a), metric_cell(row.metric, row.b)
        r = row.ratio_text
        lines.append(f"{row.metric:<18} {fa:>{width}} {fb:>{width}}  {r}")
    diffs = run_diff(a, b)
    if diffs:
        lines.append("settings that differ:")
        for change in diffs:
            lines.append(f"  {change.name:<16} {change.a:>{width}} {change.b:>{width}}")
    return clean("\n".join(lines))


def cmd_tui(
    args: argparse.Namespace,
    argv: list[str],
    records: list[Path] | None = None,
    sweeps: list[dict[str, Any]] | None = None,
) -> int:
    try:
        from warmscope.tui.app import run_app
    except ImportError as exc:
        raise UsageError(
            f"the TUI is not available in this build ({exc}); use `warmscope run`"
        ) from None
    settings = build_settings(args) if records is None else None
    if settings is not None:
        settings.resolve()
    refresh = getattr(args, "refresh", 2.0)
    if not (math.isfinite(refresh) and refresh > 0):
        raise UsageError(f"--refresh must be a positive number of repaints a second, got {refresh}")
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


# -- entry point ---------------------------------------------------------------------------


def records_parser(command: str, description: str) -> _Parser:
    """The parser of a command over saved records (``open``, ``compare``)."""
    p = _Parser(prog=f"warmscope {command}", description=description)
    p.add_argument("records", nargs="+", type=Path, metavar="RECORD")
    p.add_argument("--verbose", action="store_true")
    return p


def make_parser(command: str | None) -> argparse.ArgumentParser:
    if command == "run":
        p = _Parser(
            prog="warmscope run",
            description="Run TARGET headless: live progress on stderr, "
            "the summary on stdout, a record on disk.",
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument("target", metavar="TARGET")
        add_run_options(p, headless=True)
    elif command == "sweep":
        p = _Parser(
            prog="warmscope sweep",
            description="Run TARGET under several settings (--preset A,B and/or --vary "
            "KNOB=V1,V2), each in --repeat fresh processes, interleaved (A B A B …). Prints "
            "the answer first, then each setting's medians with 95%% intervals across processes.",
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument("target", metavar="TARGET")
        add_run_options(p, headless=True, sweep=True)
    elif command == "open":
        p = records_parser(
            "open", "Open saved run records (.jsonl) or --json documents in the TUI."
        )
        add_view_options(p)
    elif command == "compare":
        p = records_parser(
            "compare",
            "Runs side by side (warm-up, percentiles, settings), or a sweep document's "
            "answer and table.",
        )
    elif command == "report":
        p = _Parser(
            prog="warmscope report",
            description="Write a Markdown report of a run: environment, settings, latency, warm-up "
            "iterations, operator breakdown against steady state, hints, and the command to reproduce it.",
        )
        p.add_argument("record", type=Path, metavar="RECORD")
        p.add_argument(
            "--against",
            type=Path,
            metavar="RECORD",
            help="a run with other settings, for the hints",
        )
        p.add_argument(
            "-o", "--output", type=Path, metavar="PATH", help="write here instead of stdout"
        )
        p.add_argument("--verbose", action="store_true")
    elif command in ("samples", "knobs"):
        p = _Parser(prog=f"warmscope {command}")
        p.add_argument("--verbose", action="store_true")
    else:
        from warmscope.sample_models import DEFAULT_SAMPLE

        p = _Parser(
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


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # stdout closed early (`warmscope knobs | head -1`): what was asked for was read.
        _stdout_gone()
        return outcome.EXIT_OK


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    rest = argv[1:] if command else argv
    verbose = "--verbose" in rest
    try:
        args = make_parser(command).parse_args(rest)
        if command == "run":
            return cmd_run(args, argv)
        if command == "sweep":
            return cmd_sweep(args, argv, sweep=True)
        if command == "open":
            records, sweeps = open_records(args.records)
            return cmd_tui(args, argv, records=records, sweeps=sweeps)
        if command == "compare":
            return cmd_compare(args.records)
        if command == "report":
            return cmd_report(args.record, args.against, args.output)
        if command == "samples":
            return cmd_samples()
        if command == "knobs":
            return cmd_knobs()
        return cmd_tui(args, argv)
    except WarmscopeError as exc:
        if verbose:
            raise
        print(f"warmscope: {clean_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return outcome.EXIT_STOPPED


if __name__ == "__main__":
    sys.exit(main())
