"""``PipeReader`` on real pipes of a real child (a plain Python, no torch): lines split whole
across reads, a stdout torn by the child's exit, a newline-less stderr flood cut, the end."""

from __future__ import annotations

import subprocess
import sys
import time

from warmscope.core.run.pipes import MAX_STDERR_LINE, READ_CHUNK, PipeReader


class Recorder:
    """A consumer that keeps what it is handed."""

    def __init__(self) -> None:
        self.protocol: list[bytes] = []
        self.stderr: list[bytes] = []
        self.torn: list[bytes] = []
        self.too_long: list[int] = []
        self.turns = 0
        self.idle_turns = 0

    def turn_begins(self) -> None:
        self.turns += 1

    def protocol_lines(self, lines: list[bytes]) -> None:
        self.protocol += lines

    def stderr_lines(self, lines: list[bytes]) -> None:
        self.stderr += lines

    def torn_message(self, tail: bytes) -> None:
        self.torn.append(tail)

    def message_too_long(self, limit: int) -> None:
        self.too_long.append(limit)

    def turn_ends(self, *, idle: bool, stderr_caught_up: bool, now: float) -> None:
        self.idle_turns += idle


def read_child(code: str) -> tuple[Recorder, int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    recorder = Recorder()
    PipeReader(proc, recorder, measure_stderr=True).run()
    return recorder, proc.wait(10)


def test_lines_come_whole_across_reads_and_a_torn_tail_is_named() -> None:
    code = """
import os, time
for i in range(3):
    os.write(1, b'{"t":"it",')
    time.sleep(0.05)
    os.write(1, b'"i":%d}\\n' % i)
    os.write(2, b'log %d\\n' % i)
os.write(2, b'no newline at the end')
os.write(1, b'{"t":"cut')
"""
    recorder, code_ = read_child(code)
    assert code_ == 0
    assert recorder.protocol == [b'{"t":"it","i":%d}' % i for i in range(3)]
    assert recorder.stderr == [b"log 0", b"log 1", b"log 2", b"no newline at the end"]
    assert recorder.torn == [b'{"t":"cut']
    assert recorder.too_long == [] and recorder.turns > 1


def test_a_stderr_flood_without_newlines_is_cut_to_bounded_lines() -> None:
    size = 3 * MAX_STDERR_LINE + 10
    recorder, _ = read_child(f"import os, sys\nsys.stderr.buffer.write(b'x' * {size})")
    assert sum(map(len, recorder.stderr)) == size
    assert max(map(len, recorder.stderr)) <= MAX_STDERR_LINE + READ_CHUNK


def test_the_reader_ends_soon_after_the_child_though_a_helper_holds_the_pipes() -> None:
    code = """
import subprocess, sys
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(10)'])
print('started', flush=True)
"""
    start = time.monotonic()
    recorder, _ = read_child(code)
    assert recorder.protocol == [b"started"]
    assert time.monotonic() - start < 8, "not held until the helper's end"
