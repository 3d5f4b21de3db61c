"""The command line's own errors: one line `warmscope: ...`, the documented exit code, no
traceback, nothing spawned for bad usage, and never a raw escape sequence echoed back."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_in_process import main_here
from tests.conftest import FACTORIES, Result, warmscope
from warmscope.core.base.files import atomic_write
from warmscope.core.child import outcome
from warmscope.core.data.record import read_run
from warmscope.core.data.settings import (
    MAX_PROFILED,
    RunSettings,
    SettingsError,
    check_python,
    parse_profile_iters,
)

TINY = (f"{FACTORIES}:tiny", "--input", "2x8")
ESC = "\x1b"


def one_line(stderr: str) -> str:
    """The single `warmscope: ...` line of ``stderr``; fails on anything else."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("warmscope: "), stderr
    assert "Traceback" not in stderr
    assert ESC not in stderr and "\x07" not in stderr and "\x9b" not in stderr, repr(stderr)
    return lines[0]


def refused(r: Result, message: str) -> str:
    """``r`` is bad usage: one clean line holding ``message``, exit 2, nothing on stdout."""
    line = one_line(r.stderr)
    assert r.code == outcome.EXIT_USAGE, r.stderr
    assert message in line, line
    assert r.stdout == ""
    return line


def assert_usage(
    capsys: pytest.CaptureFixture[str], args: list[str] | tuple[str, ...], message: str
) -> str:
    """Bad usage decided by ``main()`` before any child: here, in-process (a child started
    fails the call); the console script's own one-line exit 2 is checked on real processes
    below (a target with escapes, a --json in a missing folder)."""
    return refused(main_here(capsys, *args), message)


# -- bad usage, found before anything runs -------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--duration", "nan"], "--duration must be a positive number of seconds, got nan"),
        (["--duration", "inf"], "--duration must be a positive number of seconds, got inf"),
        (["--duration=-inf"], "--duration must be a positive number of seconds, got -inf"),
        (["--duration", "0"], "--duration must be a positive number of seconds, got 0.0"),
        (["--timeout", "nan"], "--timeout must be a positive number of seconds, got nan"),
        (["--timeout", "inf"], "--timeout must be a positive number of seconds, got inf"),
        (["--timeout", "-1"], "--timeout must be a positive number of seconds, got -1.0"),
        (["--iters", "0"], "--iters must be at least 1, got 0"),
        (["--iters", "-5"], "--iters must be at least 1, got -5"),
        (
            ["--profile-iters", "0-99999999"],
            "--profile-iters 0-99999999 asks for 100000000 profiled iterations; "
            "at most 100 (each is slow and writes a trace)",
        ),
        (
            ["--duration", "5", "--profile-iters", "0-99999999"],
            "asks for 100000000 profiled iterations; at most 100",
        ),
        (["--profile-iters", f"{ESC}[2J"], r"bad --profile-iters item '\x1b[2J'"),
        (["--set", f"compile_backend=a{ESC}[2Jb"], "compile_backend: control character"),
        (["--set", "compile_backend=a\x07b"], "compile_backend: control character"),
        (["--set", "compile_backend=a\x7fb"], "compile_backend: control character"),
        (["--set", "compile_mode=a\tb"], "compile_mode: control character"),
        (["--bogus", f"x{ESC}]0;pwned\x07"], "unrecognized arguments: --bogus x"),
        (["--set", f"nosuch{ESC}[31m=1"], "unknown knob"),
        (["--adaptive"], "--adaptive needs --repeat N"),
    ],
)
def test_bad_values_are_one_line(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_usage(capsys, ["run", *TINY, *extra], message)


def test_the_profile_cap_is_the_documented_message(capsys: pytest.CaptureFixture[str]) -> None:
    line = assert_usage(capsys, ["run", *TINY, "--profile-iters", "0-99999999"], "")
    assert line == (
        "warmscope: --profile-iters 0-99999999 asks for 100000000 profiled iterations; "
        "at most 100 (each is slow and writes a trace)"
    )


def test_a_target_with_escapes_is_not_echoed_raw() -> None:
    # A real process: the console script's one line on stderr, exit 2, nothing on stdout.
    refused(warmscope("run", f"{ESC}[2J{ESC}]0;x\x07missing.pt"), "missing.pt")


# -- --python ------------------------------------------------------------------------------


def test_python_that_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = assert_usage(capsys, ["run", *TINY, "--python", str(tmp_path)], "")
    assert line == f"warmscope: --python {tmp_path} is a folder, not a Python interpreter"


def test_python_that_is_missing_or_not_executable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_usage(
        capsys,
        ["run", *TINY, "--python", str(tmp_path / "nope")],
        f"--python {tmp_path / 'nope'}: not an executable file: no such file",
    )
    plain = tmp_path / "python3"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(0o644)
    assert_usage(
        capsys,
        ["run", *TINY, "--python", str(plain)],
        f"--python {plain}: not an executable file: no permission to execute it",
    )
    assert_usage(
        capsys,
        ["run", *TINY, "--python", f"/tmp/{ESC}[2Jpy"],
        "not an executable file: no such file",
    )
    assert_usage(
        capsys,
        ["run", *TINY, "--python", "no-such-python-anywhere"],
        "--python no-such-python-anywhere: not an executable file, and not found on PATH",
    )


def test_check_python_accepts_an_executable(tmp_path: Path) -> None:
    check_python(sys.executable)
    check_python("sh")  # a bare name is looked up on PATH, as the child is started
    with pytest.raises(SettingsError, match="is a folder"):
        check_python(str(tmp_path))


# -- --json --------------------------------------------------------------------------------


def test_json_in_a_missing_folder_is_refused_before_the_run(record_dir: Path) -> None:
    # A real process: refused before any child, no record started.
    line = refused(warmscope("run", *TINY, "--json", "/nope/x.json"), "")
    assert line == "warmscope: --json /nope/x.json: no such folder /nope"
    assert not record_dir.exists()  # nothing ran, no record was started


def test_json_path_problems(
    tmp_path: Path, record_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def usage(args: list[str], message: str) -> str:
        return assert_usage(capsys, args, message)

    deep = tmp_path / "a" / "b" / "x.json"
    usage(["run", *TINY, "--json", str(deep)], f"no such folder {tmp_path / 'a'}")
    usage(["run", *TINY, "--json", str(tmp_path)], f"--json {tmp_path} is a folder")
    afile = tmp_path / "afile"
    afile.write_text("")
    usage(["run", *TINY, "--json", str(afile / "x.json")], f"{afile} is not a folder")
    same = tmp_path / "run.jsonl"
    usage(["run", *TINY, "--json", str(same), "--record", str(same)], "is also the --record path")
    assert not same.exists()
    usage(["run", *TINY, "--json", f"/nope{ESC}[2J/x.json"], "no such folder /nope")
    assert not record_dir.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into any folder")
def test_json_in_a_read_only_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert_usage(capsys, ["run", *TINY, "--json", str(folder / "x.json")], "is not writable")
    finally:
        folder.chmod(0o755)


DOOMED_FACTORY = """\
import os
import shutil

import torch


def make():
    # The --json folder goes away while the run is on: the write at the end fails.
    shutil.rmtree(os.environ["DOOMED"])
    return torch.nn.Linear(4, 2), (torch.randn(1, 4),)
"""


@dataclass(frozen=True)
class Doomed:
    result: Result
    folder: Path
    target: Path
    record: Path


@pytest.fixture(scope="module")
def doomed(tmp_path_factory: pytest.TempPathFactory) -> Doomed:
    """One real run whose --json folder is removed while it runs. Its record is a whole run's
    (the model ran; only the --json write failed): it is also the record the tests below
    read, and the one a second run onto the same path must not replace."""
    tmp = tmp_path_factory.mktemp("doomed")
    factory = tmp / "doomed.py"
    factory.write_text(DOOMED_FACTORY)
    folder = tmp / "out"
    folder.mkdir()
    target = folder / "run.json"
    record = tmp / "run.jsonl"
    r = warmscope(
        "run",
        f"{factory}:make",
        "--iters",
        "3",
        "--set",
        f"env.DOOMED={folder}",
        "--record",
        str(record),
        "--json",
        str(target),
    )
    return Doomed(r, folder, target, record)


def test_json_that_cannot_be_written_at_the_end(doomed: Doomed) -> None:
    r, record = doomed.result, doomed.record
    line = one_line(r.stderr)
    assert r.code == outcome.EXIT_FAILED, r.stderr
    assert line == f"warmscope: cannot write --json {doomed.target}: No such file or directory"
    assert "iterations 3" in r.stdout and f"record     {record}" in r.stdout
    assert read_run(record).count == 3
    assert not doomed.folder.exists()


def test_atomic_write_leaves_no_tmp_behind(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    with pytest.raises(UnicodeEncodeError):
        atomic_write(path, "half \udcff written")  # a lone surrogate: fails mid-write
    assert sorted(tmp_path.iterdir()) == []

    folder = tmp_path / "taken"
    folder.mkdir()
    with pytest.raises(OSError):
        atomic_write(folder, "{}")  # the rename onto a folder fails
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]

    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "gone" / "x.json", "{}", parents=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_atomic_write_does_not_write_through_a_planted_tmp_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "doc.json.tmp").symlink_to(victim)
    atomic_write(tmp_path / "doc.json", "{}\n")
    assert victim.read_text() == "keep me"
    assert (tmp_path / "doc.json").read_text() == "{}\n"
    assert not (tmp_path / "doc.json.tmp").exists()


# -- --record and --overwrite --------------------------------------------------------------


def test_help_mentions_overwrite(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["run", "--help"], ["--help"]):
        r = main_here(capsys, *args)
        assert r.code == 0, r.stderr
        text = " ".join(r.stdout.split())  # argparse wraps the help
        assert "--overwrite replace an existing --record file" in text
        assert "(never one a live run is writing)" in text


@pytest.fixture(scope="module")
def a_record(doomed: Doomed) -> Path:
    """A finished run's record (the doomed run's: its run completed)."""
    assert read_run(doomed.record).count == 3
    return doomed.record


def test_a_second_run_onto_the_same_record_needs_overwrite(
    a_record: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Refused in the parent, before any child (a child started in-process fails the call).
    record = tmp_path / "run.jsonl"
    shutil.copyfile(a_record, record)
    kept = record.read_bytes()
    again = main_here(capsys, "run", *TINY, "--iters", "3", "--record", str(record))
    line = one_line(again.stderr)
    assert again.code == outcome.EXIT_USAGE
    assert "--overwrite" in line and str(record) in line
    assert again.stdout == ""
    assert record.read_bytes() == kept  # the first record is intact


@dataclass(frozen=True)
class Overwritten:
    code: int
    stderr: str
    took_s: float
    record: Path
    kept: bytes


@pytest.fixture(scope="module")
def overwritten(a_record: Path, tmp_path_factory: pytest.TempPathFactory) -> Overwritten:
    """One real run with --overwrite onto a copy of a finished run's record, its stdout closed
    before it prints anything (``| head -0``)."""
    record = tmp_path_factory.mktemp("overwrite") / "run.jsonl"
    shutil.copyfile(a_record, record)
    kept = record.read_bytes()
    started = time.monotonic()
    code, _, stderr = closed_early(
        "run", *TINY, "--iters", "3", "--record", str(record), "--overwrite", read_first=False
    )
    return Overwritten(code, stderr, time.monotonic() - started, record, kept)


def test_overwrite_replaces_the_record(overwritten: Overwritten) -> None:
    assert overwritten.code == 0, overwritten.stderr
    assert overwritten.record.read_bytes() != overwritten.kept
    assert read_run(overwritten.record).count == 3


# -- stdout closed early -------------------------------------------------------------------


def closed_early(*args: str, read_first: bool) -> tuple[int, str, str]:
    """Run the CLI with stdout on a pipe that the reader closes early (``| head -1``)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "warmscope.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline() if read_first else ""
    proc.stdout.close()
    stderr = proc.stderr.read()
    return proc.wait(timeout=120), first, stderr


def test_compare_piped_into_head(a_record: Path) -> None:
    # The reader takes one line and goes away.
    code, first, stderr = closed_early("compare", str(a_record), str(a_record), read_first=True)
    assert code == 0 and stderr == ""
    assert first.split() == [a_record.name, a_record.name, "ratio", "B/A"]


@pytest.mark.parametrize("command", ["compare", "report", "knobs", "samples"])
def test_stdout_closed_before_anything_is_printed(a_record: Path, command: str) -> None:
    # Closed before the command prints (it is still importing): every write meets EPIPE.
    args = {"compare": [str(a_record), str(a_record)], "report": [str(a_record)]}
    code, _, stderr = closed_early(command, *args.get(command, []), read_first=False)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert code == 0 and stderr == ""


def test_run_with_stdout_closed_keeps_its_exit_code_and_record(overwritten: Overwritten) -> None:
    assert "Traceback" not in overwritten.stderr and overwritten.stderr == "", overwritten.stderr
    assert overwritten.code == 0
    assert read_run(overwritten.record).count == 3
    assert overwritten.took_s < 120


# -- units -----------------------------------------------------------------------------------


def test_profile_iters_cap_counts_before_expanding() -> None:
    started = time.monotonic()
    with pytest.raises(SettingsError, match="asks for 100000000 profiled iterations"):
        parse_profile_iters("0-99999999")
    with pytest.raises(SettingsError, match=r"asks for 1\d{20} profiled"):
        parse_profile_iters("0-" + "9" * 20)
    assert time.monotonic() - started < 1
    assert parse_profile_iters("0-99") == (list(range(100)), False)
    assert parse_profile_iters("0-99,50-99,7,steady") == (list(range(100)), True)
    with pytest.raises(SettingsError, match="asks for 101 profiled iterations; at most 100"):
        parse_profile_iters("0-49,50-99,200")
    assert MAX_PROFILED == 100


def test_settings_set_refuses_control_characters_but_not_markup() -> None:
    s = RunSettings(target="sample:speech")
    s.set("compile_backend=[/]")
    assert s.knobs["compile_backend"] == "[/]"
    s.set("compile_backend=[bold red]x[/]")
    for bad in ("a\x00b", "a\x1b[2Jb", "a\nb", "\x7f", "x\x1f"):
        with pytest.raises(SettingsError) as info:
            s.set(f"compile_backend={bad}")
        message = str(info.value)
        assert message.startswith("compile_backend: control character")
        assert message.isprintable() and ESC not in message
    s.set("env.NAME=a\tb")  # an environment value may hold a tab; not a NUL
    s.env["BAD"] = "a\x00b"
    with pytest.raises(SettingsError, match=r"env\.BAD: a NUL character"):
        s.resolve()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("duration", math.nan),
        ("duration", math.inf),
        ("timeout", math.nan),
        ("timeout", -math.inf),
        ("timeout", -1.0),
    ],
)
def test_resolve_refuses_non_finite_seconds(field: str, value: float) -> None:
    s = RunSettings(target="sample:speech")
    setattr(s, field, value)
    with pytest.raises(SettingsError, match=f"--{field} must be a positive number"):
        s.resolve()
