"""The terminal stays warmscope's: hostile names cannot talk to it, Ctrl+Z and SIGTSTP hand it
back to the shell and take it again whole, a dumb terminal is told what to use, and every
screen can be left.

Names come from records built in ``tmp_path`` from a checked-in record of a real run, and from
a real headless run of a target file with such a name; terminals are real pseudo-terminals (one
TUI over the hostile records serves both what it draws of them and its suspend and resume).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.test_big_record import big_record  # noqa: F401  (the fixture)
from tests.test_tui_hostile import notes, rewrite
from tests.tui_support import in_terminal, run, screen_text, terminal_chunk, wait_for
from warmscope.core.base.safe_text import REPLACEMENT, clean, clean_name, strip_controls
from warmscope.core.data.settings import RunSettings
from warmscope.tui.app import build_app
from warmscope.tui.screens.compare_screen import CompareScreen
from warmscope.tui.screens.confirm_screen import ConfirmScreen
from warmscope.tui.screens.history_screen import HistoryScreen
from warmscope.tui.widgets.run.run_header import RunHeader

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "speech-script.jsonl"
TARGETS = Path(__file__).parent / "targets"

# Renames the window, clears the screen, turns text red, reverses what follows, hides two
# characters, and breaks the line.
HOSTILE = "esc\x1b]0;PWN\x07\x1b[2J\x1b[31mred\u202e\u200b\u200d\nx.py"
# What none of the screen may hold once a hostile name was drawn (the newline aside).
FORBIDDEN = ("\x1b", "\x07", "\u202e", "\u200b", "\u200d")


def _safe(text: str) -> None:
    assert not any(ch in text for ch in FORBIDDEN), [
        text[max(0, text.find(ch) - 60) : text.find(ch) + 20] for ch in FORBIDDEN if ch in text
    ]


def test_a_name_is_one_line_with_every_hidden_character_marked() -> None:
    name = clean_name(HOSTILE + ":make")
    assert name.startswith("esc") and name.endswith("x.py:make") and "\n" not in name
    _safe(name)
    assert name.count(REPLACEMENT) == 6  # OSC, CSI, CSI, U+202E, U+200B, U+200D
    family = "family \U0001f468\u200d\U0001f469"
    assert clean(family) == family, "stderr keeps the joiner its emoji needs"
    assert REPLACEMENT in clean_name(family), "a name does not"
    assert clean_name("speech.py:make") == "speech.py:make"
    drawn = strip_controls("a\x1b[2Jb\u202ec")
    assert drawn == "a[2Jbc", "a drawn line loses its controls and keeps its width"


def _hostile_records(folder: Path) -> list[Path]:
    def name_it(line: dict[str, object]) -> None:
        if line["type"] == "header":
            line["settings"]["target"] = HOSTILE + ":make"  # type: ignore[index]

    stem = "rec\u200b\x1b[31m\u202e"  # a file name can hold all of it but "/" and NUL
    return [rewrite(SCRIPT, folder / f"{stem}{n}.jsonl", name_it) for n in (1, 2)]


def test_a_hostile_name_reaches_no_view_raw(tmp_path: Path) -> None:
    records = _hostile_records(tmp_path)
    broken = tmp_path / "broken\x1b]0;PWN\x07\u200b.jsonl"
    broken.write_text("not a record\n")
    app = build_app(records=[*records, broken])
    shown_notes = notes(app)

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: len(app.runs) == 2)
        # The broken file's toast, drawn while it is up (it goes after a few seconds).
        assert any("broken" in n for n in shown_notes), shown_notes
        await wait_for(pilot, lambda: "broken" in screen_text(app), timeout=5)
        _safe(screen_text(app))
        # The next run differs from the viewed one in its target: the header says so.
        app.state.next_settings = RunSettings(target=HOSTILE + ":other")
        app.viewer.show(app.runs[0])
        await pilot.pause()
        header = app.screen.query_one(RunHeader).plain.splitlines()
        assert len(header) == 2
        assert "esc" in header[0] and "x.py:make" in header[0], header
        assert "next run: target=esc" in header[1] and "x.py:other" in header[1], header
        for line in header:
            _safe(line)
        shown = screen_text(app)
        assert "x.py:make" in shown
        _safe(shown)

        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        shown = screen_text(app)
        assert "x.py:make" in shown and "rec" in shown
        _safe(shown)
        await pilot.press("escape")

        await pilot.press("c")
        assert isinstance(app.screen, CompareScreen)
        shown = screen_text(app)
        assert "#1" in shown and "#2" in shown
        _safe(shown)
        await pilot.press("escape")

    run(app, scenario, (120, 36), notifications=True)


def _read_until(master: int, seconds: float, done: Callable[[bytes], bool]) -> bytes:
    """What the terminal receives until ``done(what came so far)`` holds, or ``seconds`` pass."""
    out = b""
    deadline = time.monotonic() + seconds
    while not done(out) and time.monotonic() < deadline:
        if (chunk := terminal_chunk(master, 0.05)) is None:
            break
        out += chunk
    return out


def _read(master: int, seconds: float, until: bytes | None = None) -> bytes:
    """What the terminal receives in ``seconds``, or until ``until`` arrives."""
    return _read_until(master, seconds, lambda out: until is not None and until in out)


def _drain(master: int, quiet: float = 0.3, most: float = 5) -> bytes:
    """What the terminal receives until it has been quiet for ``quiet`` seconds (the app has
    drawn what it had to draw), or ``most`` seconds pass."""
    out = b""
    deadline = time.monotonic() + most
    while time.monotonic() < deadline and (chunk := terminal_chunk(master, quiet)):
        out += chunk
    return out


def _state(pid: int) -> str:
    """The process's state letter: T when stopped."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


ALT_ON, ALT_OFF = b"\x1b[?1049h", b"\x1b[?1049l"


def _full_repaint(out: bytes) -> bool:
    """Whether ``out`` draws every pane's border and title again, not only what changed."""
    text = out.decode("utf-8", errors="replace")
    return all(t in text for t in ("latency", "summary", "╭", "╰")) and text.count("│") > 40


def _wait_stopped(pid: int) -> None:
    deadline = time.monotonic() + 5
    while _state(pid) != "T" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(pid) == "T", "stopped, as a shell's Ctrl+Z stops a program"


def _redrawn(out: bytes) -> bool:
    return ALT_ON in out and _full_repaint(out)


def _resumed(pid: int, master: int) -> bytes:
    """What the terminal receives after a SIGCONT, until the whole screen is drawn again (5 s
    at most); where the process is still stopped then (the continue raced the stop on a busy
    machine), one more SIGCONT, as a user types `fg` again. A process that runs and draws
    nothing still fails the caller's check."""
    back = _read_until(master, 5, _redrawn)
    if not back and _state(pid) == "T":
        os.kill(pid, signal.SIGCONT)
        back = _read_until(master, 5, _redrawn)
    return back


@dataclass
class Opened:
    """``warmscope open`` on two hostile records in a real terminal, and what it drew first."""

    proc: subprocess.Popen[bytes]
    master: int
    first: bytes
    """Everything written until the main screen was drawn, its panes and the records' names
    too, and went quiet."""


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
    """One real TUI over the hostile records for the tests below: what it draws of them, then
    what it does when suspended and resumed."""
    records = _hostile_records(tmp_path_factory.mktemp("hostile"))
    with in_terminal("open", *map(str, records)) as terminal:
        master = terminal.master
        out = _read_until(master, 20, lambda out: b"summary" in out and MARKED in out)
        yield Opened(terminal.proc, master, out + _drain(master))


MARKED = "esc\ufffd".encode()
"""The start of the hostile target's name as drawn: its controls marked."""


def test_a_hostile_record_writes_no_control_of_its_own_to_a_real_terminal(opened: Opened) -> None:
    out = opened.first
    assert MARKED in out, "where the name held controls, marks show"
    assert len(out) > 5000, "the app drew its screen"
    for seq in (b"]0;PWN", b"\x1b[31mred", "\u202e".encode(), "\u200b".encode()):
        assert seq not in out, seq


def test_ctrl_z_suspends_and_a_resume_draws_the_whole_screen(opened: Opened) -> None:
    proc, master = opened.proc, opened.master
    assert ALT_ON in opened.first and b"summary" in opened.first, opened.first[-300:]
    assert proc.poll() is None, "the TUI is up"
    _drain(master)
    os.write(master, b"\x1a")  # Ctrl+Z
    out = _read(master, 5, until=ALT_OFF)
    assert ALT_OFF in out, "the terminal is handed back: the alternate screen is left"
    _wait_stopped(proc.pid)
    os.kill(proc.pid, signal.SIGCONT)  # what `fg` sends
    back = _resumed(proc.pid, master)
    assert _redrawn(back), back[-500:]

    # A SIGTSTP from outside (kill -TSTP, a shell's job control): the same.
    _drain(master)
    os.kill(proc.pid, signal.SIGTSTP)
    assert ALT_OFF in _read(master, 5, until=ALT_OFF)
    _wait_stopped(proc.pid)  # a SIGCONT before it stops would leave it stopped
    os.kill(proc.pid, signal.SIGCONT)
    back = _resumed(proc.pid, master)
    assert _redrawn(back), back[-500:]

    # Ctrl+L: everything again, though nothing changed.
    _drain(master)
    os.write(master, b"\x0c")
    assert _full_repaint(_read_until(master, 3, _full_repaint))
    assert proc.poll() is None


def test_every_outside_stop_and_continue_brings_the_screen_back(opened: Opened) -> None:
    """``kill -TSTP`` then ``kill -CONT``, eight times: each continue redraws. (Without a
    wakeup descriptor, a SIGCONT that came as the event loop went back to sleep waited there,
    and Textual's resume never ran: a dead screen within a few such cycles.)"""
    proc, master = opened.proc, opened.master
    for cycle in range(8):
        _drain(master)
        os.kill(proc.pid, signal.SIGTSTP)
        assert ALT_OFF in _read(master, 5, until=ALT_OFF), cycle
        _wait_stopped(proc.pid)
        os.kill(proc.pid, signal.SIGCONT)
        back = _read_until(master, 5, _redrawn)
        assert _redrawn(back), (cycle, back[-300:])
    assert proc.poll() is None


def test_a_dumb_terminal_is_told_to_use_the_headless_form() -> None:
    # Which TERM is dumb: ``dumb``, or none at all; then what a real one is told.
    from warmscope.tui.glyphs import dumb_terminal

    assert dumb_terminal("dumb") and dumb_terminal("") and dumb_terminal(None)
    assert dumb_terminal(" Dumb ") and not dumb_terminal("xterm-256color")
    assert not dumb_terminal("vt100") and not dumb_terminal("linux"), "ASCII, but a screen"
    with in_terminal("sample:trivial", "--iters", "5", env={"TERM": "dumb"}) as dumb:
        out = _read(dumb.master, 20)
        assert dumb.proc.wait(10) == 2
    assert b"\x1b" not in out, out[:200]
    lines = out.decode().strip().splitlines()
    assert len(lines) == 1 and "warmscope run sample:trivial" in lines[0], lines


def test_the_quit_question_shows_in_a_tiny_terminal() -> None:
    from tests.fake_session import FakeSession, Moment, factory, iterations

    made: list[FakeSession] = []
    script = [Moment([iterations(0, [30.0])])] + [Moment() for _ in range(2000)]
    app = build_app(settings=RunSettings(target="sample:trivial"), start=factory(script, made))

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].live)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.pause()
        shown = screen_text(app)
        assert "quit?" in shown, shown
        await pilot.press("n")
        app.stop_all()

    run(app, scenario, (20, 6), settled=False)


def test_the_loading_screen_can_be_left_at_once(big_record: Path) -> None:  # noqa: F811
    for key in (b"q", b"\x1b"):
        with in_terminal("open", str(big_record)) as terminal:
            out = _read(terminal.master, 20, until=b"reading")
            assert b"reading" in out, "the loading screen is up"
            os.write(terminal.master, key)
            started = time.monotonic()
            out = _read(terminal.master, 10, until=ALT_OFF)
            assert terminal.proc.wait(5) == 0
            assert ALT_OFF in out, "the terminal is restored"
            assert time.monotonic() - started < 5
        assert re.search(rb"run #\d", out) is None
