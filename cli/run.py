"""``warmscope run TARGET``: one headless run, live progress on stderr, its summary on stdout
(on stderr with ``--json -``, whose document is then stdout's only text)."""

from __future__ import annotations

import argparse
import sys

from warmscope.cli.command import Command
from warmscope.cli.console import STDOUT, check_json_path, emit, reason, say
from warmscope.cli.options import TARGET_HELP, add_run_options, build_settings
from warmscope.cli.progress import Progress
from warmscope.cli.sweep import run_sweep
from warmscope.core.base.safe_text import clean, clean_line
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data import contention
from warmscope.core.data.run import RunData, Update
from warmscope.core.output.export import dump_json, write_json
from warmscope.core.output.text_views import render_summary
from warmscope.core.run.hangup import HangupGuard
from warmscope.core.run.run_plan import drive, start_run


def run(args: argparse.Namespace, argv: list[str]) -> int:
    if args.repeat != 1:
        return run_sweep(args, argv, sweep=False)
    if getattr(args, "adaptive", False):
        raise UsageError(
            "--adaptive needs --repeat N (the cap on processes): one run has nothing to stop early"
        )
    settings = build_settings(args)
    to_stdout = args.json is not None and str(args.json) == STDOUT
    if args.json is not None:
        check_json_path(args.json, args.record, stdout_ok=True)

    def tell(line: str, warning: bool) -> None:
        if warning or not args.quiet:
            say(line)

    # A record that cannot be written is refused here, before any child runs.
    session = start_run(
        settings,
        record_path=args.record,
        command=["warmscope", *argv],
        overwrite=args.overwrite,
        notify=tell,
        explain=True,
    )
    progress = None if args.quiet or not sys.stderr.isatty() else Progress()
    hangup = HangupGuard()
    said: list[str] = []

    def on_update(update: Update) -> None:
        if progress:
            progress.show(session, update)
        if not said:  # as soon as the child says how many threads it runs
            text = contention.oversubscribed(session.data)
            if text is not None:
                said.append(text)
                say(text)

    try:
        drive(session, on_update=on_update, hung_up=lambda: hangup.fired)
    finally:
        if progress:
            progress.close()
        hangup.restore()
    if session.failure is not None:
        raise session.failure  # before the measured process ran (the warming one failed)
    data = session.data
    code = data.exit_code if data.exit_code is not None else outcome.EXIT_FAILED
    json_error = None
    if args.json is not None and not to_stdout:
        try:
            write_json(args.json, data, parents=False)
        except (OSError, ValueError) as exc:  # ValueError: text that cannot be encoded
            json_error = f"cannot write --json {clean_line(str(args.json))}: {reason(exc)}"
    if data.exit_code == outcome.EXIT_USAGE:
        # Found once the child ran: a factory that is missing or returns no module (its
        # message), an interpreter that is not a Python (the status detail). One line.
        message = data.error["message"] if data.error else data.status_detail
        say(str(message))
    elif to_stdout:
        # stdout holds the document alone: the summary goes where the progress went.
        print(render_summary(data), file=sys.stderr)
        if data.status != outcome.OK:
            show_failure(data, verbose=args.verbose)
    else:
        emit(render_summary(data))
        if data.status != outcome.OK:
            show_failure(data, verbose=args.verbose)
    if to_stdout:
        dump_json(sys.stdout, data)
        sys.stdout.flush()
    if json_error is not None:
        # The record and the summary stand; the document the caller asked for does not.
        say(json_error)
        return code if code != outcome.EXIT_OK else outcome.EXIT_FAILED
    return code


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
    """The traceback from the model's own call on: warmscope's agent frames are noise here.

    A frame is its ``File`` line and the lines indented under it: its source line where Python
    found the source, and the carets under the expression (3.11 on) where that is not the
    whole line. The last agent frame goes with all of them, and nothing of the next frame."""
    lines = tb.rstrip().splitlines()
    start = 0
    for n, line in enumerate(lines):
        if _frame_file(line) == AGENT_FILE:
            start = n + 1
            while start < len(lines) and _under_frame(lines[start]):
                start += 1
    body = lines[start:] if start < len(lines) else lines
    return "\n".join(["Traceback (most recent call last):", *body] if start else body)


AGENT_FILE = "agent.py"


def _frame_file(line: str) -> str | None:
    """``agent.py`` for ``  File "/…/core/child/agent.py", line 9, in main``; ``None`` for a
    line that is not a frame's. The name is compared whole: ``my_agent.py`` is a model's."""
    text = line.strip()
    if not text.startswith('File "'):
        return None
    path = text[len('File "') :].split('"', 1)[0]
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _under_frame(line: str) -> bool:
    """A frame's source or caret line: indented deeper than ``File``, and not a frame."""
    return line.startswith("    ") and _frame_file(line) is None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    add_run_options(p, headless=True)


COMMANDS = (
    Command(
        "run",
        add_arguments,
        run,
        description="Run TARGET headless: live progress on stderr, "
        "the summary on stdout, a record on disk.",
        epilog=True,
    ),
)
