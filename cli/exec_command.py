"""``warmscope exec [OPTIONS] -- COMMAND [ARGS...]``: the forward calls of the user's own
program, watched while it runs (the TUI; ``--headless``: lines on stderr as it goes, the summary
of each process on stdout once it has exited). The program's stdio is its own and its exit
code is warmscope's."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warmscope.cli.command import Command
from warmscope.cli.console import STDOUT, check_json_path, emit, reason, say
from warmscope.core.base.files import beside
from warmscope.core.base.safe_text import clean_line
from warmscope.core.child.outcome import UsageError
from warmscope.core.output.text_views import render_summary

if TYPE_CHECKING:
    from warmscope.core.run.exec_session import ExecSession

DESCRIPTION = """\
Run COMMAND (a Python program: a script, python -m ..., a console script such as
uvicorn) with warmscope's observer loaded at interpreter start, and show each outermost
forward call of its torch modules: the module, the input signature, the thread, the time,
and the compiles and graph breaks pinned to the call that made them. Every Python process
of the program's tree is watched, each with a record of its own. Nothing in the program
changes: its stdin, stdout and stderr are its own, and warmscope exits with its exit code.

  warmscope exec -- python serve.py --port 8000
  warmscope exec --headless --json calls.json -- python -m mypkg.batch_job
  warmscope exec --watch mypkg.serve:runner.run -- uvicorn mypkg.serve:app

A call is a call of an nn.Module (eager, scripted, traced, torch.compile'd) not nested in
another module's call, or of a callable named with --watch. Calls of one module with one
input signature are one group ("shape" in the summary); the first call of each is marked.
"""

EPILOG = """\
exit codes: the program's own (128 + N where signal N ended it); 2 bad usage or a command
that cannot be run, named in one line.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--headless",
        action="store_true",
        help="no TUI: a line on stderr for each new process and each first call of a module "
        "and signature, each process's summary on stdout after the program exits",
    )
    p.add_argument(
        "--watch",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="also time calls of this callable (an AOTInductor runner, a compiled function): "
        "MODULE is one the program imports (not the script run as __main__), ATTR a dotted "
        "path in it, there once MODULE has run; repeatable",
    )
    p.add_argument(
        "--record",
        type=Path,
        metavar="PATH",
        help="the first process's record (default: under ~/.local/state/warmscope/runs); "
        "other processes' records go beside it, named PATH's stem + .PID",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing --record file")
    p.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="--headless: also write the first process's run document, the other processes' "
        "under its 'processes' (a file: stdout is the program's)",
    )
    p.add_argument("--quiet", action="store_true", help="--headless: no lines while it runs")
    p.add_argument("--verbose", action="store_true", help="tracebacks for warmscope's own errors")
    p.add_argument("--refresh", type=float, default=2.0, metavar="HZ", help=argparse.SUPPRESS)
    p.add_argument("--mouse", action="store_true", help="TUI: track the mouse")
    p.add_argument("--ascii", action="store_true", help="TUI: ASCII glyphs only")
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND [ARGS...]",
        help="the program to run, after --",
    )


def program(args: argparse.Namespace) -> list[str]:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("warmscope exec needs a command after --: warmscope exec -- python app.py")
    return command


def make_session(
    args: argparse.Namespace, argv: list[str], command: list[str], *, own_terminal: bool
) -> ExecSession:
    # The run machinery (subprocess, psutil): with this command only.
    from warmscope.core.run.exec_session import ExecSession

    return ExecSession(
        command,
        record=args.record,
        overwrite=args.overwrite,
        watch=args.watch,
        own_terminal=own_terminal,
        warmscope_command=["warmscope", *argv],
    )


def run(args: argparse.Namespace, argv: list[str]) -> int:
    command = program(args)
    if not args.headless:
        if args.json is not None:
            raise UsageError("--json is for --headless (the TUI exports from its x key)")
        return _tui(args, argv, command)
    if args.json is not None:
        if str(args.json) == STDOUT:
            raise UsageError(
                "--json -: the program's own output goes to stdout; name a file for the document"
            )
        check_json_path(args.json, args.record)
    session = make_session(args, argv, command, own_terminal=True)
    lines = Lines(session, quiet=args.quiet)
    previous = _pass_on_end_signals(session)
    try:
        session.start()
        code = session.wait(tick=lines.tick)
    finally:
        session.finish()
        _restore(previous)
    lines.tick()
    texts, notes = summaries(session, command)
    for text in texts:
        emit(text)
    for line in notes:
        say(line)
    if args.json is not None:
        try:
            with beside(args.json, parents=False) as f:  # written beside, then renamed
                json.dump(exec_document(session), f, indent=1)
        except (OSError, ValueError) as exc:
            say(f"cannot write --json {clean_line(str(args.json))}: {reason(exc)}")
    return code


class Lines:
    """``--headless``: one line on stderr for each process that joins and each first call of
    a module and signature, as they happen (whole lines: the program writes there too)."""

    def __init__(self, session: Any, *, quiet: bool) -> None:
        self.session = session
        self.quiet = quiet
        self.told: dict[int, int] = {}

    def tick(self) -> None:
        if self.quiet:
            return
        for run in self.session.watched():
            data = run.data
            if id(run) not in self.told:
                self.told[id(run)] = 0
                argv = " ".join(data.exec.get("process", {}).get("argv", []))
                say(f"watching process {run.pid}: {clean_line(argv)[:120]}")
            with run.lock:
                firsts = _first_calls(data, self.told[id(run)])
                self.told[id(run)] = len(data.shape_keys)
            for number, key, ms, label in firsts:
                more = f" ({label})" if label else ""
                say(f"process {run.pid} call #{number}: first {key}: {ms:.1f} ms{more}")


def _first_calls(data: Any, known: int) -> list[tuple[int, str, float, str]]:
    """The first call of each group from the ``known``-th on. Groups are numbered as their
    first calls arrive, so each one's is found in order (``array.index``: in C)."""
    out: list[tuple[int, str, float, str]] = []
    start = 0
    for k in range(known, len(data.shape_keys)):
        start = data.shape_of.index(k, start)
        out.append((start, data.shape_keys[k], data.latency(start), data.label(start) or ""))
    return out


def summaries(session: Any, command: list[str]) -> tuple[list[str], list[str]]:
    """Each process's summary, and the lines said after them: where the records are, or the
    one line that says why there is no summary."""
    runs = [r for r in session.processes if r.data.count]
    texts: list[str] = []
    for run in runs:
        if len(runs) > 1:
            argv = " ".join(run.data.exec.get("process", {}).get("argv", []))
            texts.append(f"process {run.pid}: {clean_line(argv)[:160]}")
        texts.append(render_summary(run.data))
    notes = [f"unwatched: process {line}" for line in session.unwatched_log()]
    notes += [f"not recorded: {line}" for line in session.failures]
    if not session.processes:
        notes.append(
            f"no process of {clean_line(command[0])} loaded warmscope's observer: exec watches "
            "Python programs (a script, python -m, a console script) that read PYTHONPATH and "
            "run site (not python -S, -E or -I)"
        )
    elif not runs:
        why = next((r.unwatched for r in session.processes if r.unwatched), "")
        notes.append(
            "the program never called a torch module"
            + (f" (unwatched: {why})" if why else "")
            + f"; record: {session.record_path}"
        )
    else:
        where = f"record: {session.record_path}"
        others = len(session.watched()) - 1
        if others:
            where += f" and {others} beside it"
        notes.append(where)
    return texts, notes


def exec_document(session: Any) -> dict[str, Any]:
    """The first process's run document; the others' under ``processes``."""
    from warmscope.core.data.document import to_document

    if not session.processes:
        return {"format": "warmscope-run", "processes": [], "status": "crashed"}
    main, *rest = session.watched()
    doc = to_document(main.data)
    doc["processes"] = [to_document(r.data) for r in rest]
    return doc


def _pass_on_end_signals(session: Any) -> dict[int, Any]:
    """Ctrl-C at the terminal reaches the program as it would without warmscope (it is in
    warmscope's process group): warmscope waits for it to end. SIGINT sent to warmscope alone,
    SIGTERM and SIGHUP are passed on to it."""
    previous: dict[int, Any] = {}

    def pass_on(signum: int, frame: object) -> None:
        session.stopped = True
        session.signal(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, pass_on)

    def interrupted(signum: int, frame: object) -> None:
        session.stopped = True
        if not _terminal_in_front():  # not the terminal's: the program has not had it
            session.signal(signum)

    previous[signal.SIGINT] = signal.signal(signal.SIGINT, interrupted)
    return previous


def _terminal_in_front() -> bool:
    """Whether warmscope's process group is its terminal's foreground group: a SIGINT then
    came from the terminal, to the program as well."""
    import os

    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


def _restore(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _tui(args: argparse.Namespace, argv: list[str], command: list[str]) -> int:
    """The TUI on the program, started now, its processes shown as they join; the program's
    exit code once it has ended (quitting stops it)."""
    try:
        from warmscope.tui.terminal_app import run_app
    except ImportError as exc:
        raise UsageError(
            f"the TUI is not available in this build ({exc}); use --headless"
        ) from None
    from warmscope.cli.view import refresh_rate

    refresh = refresh_rate(args)
    session = make_session(args, argv, command, own_terminal=False)
    try:
        session.start()
        run_app(records=[], refresh_hz=refresh, mouse=args.mouse, ascii=args.ascii, program=session)
    finally:
        if session.running():
            session.stop(grace=2.0)
        session.finish()
    print(f"record: {session.record_path}")
    if session.output_path is not None:
        print(f"the program's output: {session.output_path}")
    return session.shell_code


COMMANDS = (
    Command(
        "exec",
        add_arguments,
        run,
        description=DESCRIPTION,
        epilog_text=EPILOG,
    ),
)
