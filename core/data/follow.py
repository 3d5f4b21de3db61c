"""Following a record that a live run is still writing, as ``tail -f`` does: a ``LiveRun``.

``warmscope open`` of such a record shows the run so far and then grows with it: each
``poll`` reads the complete lines written since the last one (a line still being written
waits for its newline) and folds them with the same checks as ``read_run`` (``reading``).
When the writer lets go of the record and nothing is left to read, the run has ended: as its
``end`` line says, or crashed where there is none. Folding the lines the run wrote gives the
run's own figures: the record is where the run keeps them. Both the reading and the writer's
hold are asked of the file opened, not of its name: a record deleted (or replaced) while it is
followed is still the one its run writes, followed to its end and said to be gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from pathlib import Path

from warmscope.core.child import outcome
from warmscope.core.data.reading import MAX_LINE_BYTES, RecordError, fold_entry, live_writer
from warmscope.core.data.run import Cursor, RunData, Update

READ_BYTES = 8 << 20
"""The most read in one ``poll``: a record far ahead is caught up over several polls, each
quick enough for a frame."""


class RecordFollower:
    """A ``LiveRun`` over a growing record file: nothing to stop but the following."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = RunData(record_path=str(path))
        self._file = path.open("rb")
        self._pending = b""
        self._number = 0
        self._t0 = time.monotonic()
        self._stopped = False
        self._lock = threading.Lock()
        self._read()

    def _read(self) -> None:
        """Fold every complete line written since the last read; at the writer's end, end."""
        if self.data.finished or self._file.closed:
            return
        live = self._writer_holds()  # before reading: what a dead writer wrote is all there
        try:
            chunk = self._file.read(READ_BYTES)
            self._fold(chunk)
        except (RecordError, OSError, UnicodeDecodeError, ValueError) as exc:
            self._end(outcome.CRASHED, f"following stopped: {exc}")
            return
        gone = self._gone()
        if self.data.finished:
            self._file.close()
            if gone:
                self.data.status_detail += f"; {gone}"
        elif not live and len(chunk) < READ_BYTES:
            detail = "the record ends before the run did (warmscope itself stopped)"
            self._end(outcome.CRASHED, f"{detail}; {gone}" if gone else detail)
        elif self.data.status == outcome.RUNNING:
            if gone:
                self.data.status_detail = f"{gone}: followed from the file still open"
            else:
                self.data.status_detail = live_writer(self.path, self.data) or ""

    def _writer_holds(self) -> bool:
        """Whether a live run's writer holds the file this follower opened (its ``flock``,
        as ``record_lock.is_live`` asks of a path)."""
        fd = self._file.fileno()
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False

    def _gone(self) -> str:
        """What became of the record's name, where it no longer names the file followed."""
        try:
            named, held = os.stat(self.path), os.fstat(self._file.fileno())
        except FileNotFoundError:
            return f"its record {self.path} was deleted while it was followed"
        except OSError:
            return ""
        if (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino):
            return f"its record {self.path} was replaced while it was followed"
        return ""

    def _fold(self, chunk: bytes) -> None:
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()  # a line not yet complete
        if len(self._pending) > MAX_LINE_BYTES:
            raise RecordError(f"{self.path}: a line longer than {MAX_LINE_BYTES >> 20} MB")
        for raw in lines:
            self._number += 1
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
            except (ValueError, RecursionError):
                raise RecordError(f"{self.path}:{self._number}: not valid JSON") from None
            if self._number == 1 and not (
                isinstance(entry, dict) and entry.get("type") == "header"
            ):
                raise RecordError(f"{self.path} is not a warmscope record (no header line)")
            fold_entry(self.data, entry, self.path, self._number)

    def _end(self, status: str, detail: str) -> None:
        self.data.status, self.data.status_detail = status, detail
        self._file.close()

    # -- LiveRun -------------------------------------------------------------------------

    def poll(self, cursor: Cursor, *, starts: bool = False) -> Update:
        with self._lock:
            if not self._stopped:
                self._read()
            return self.data.since(cursor, starts=starts)

    def snapshot(self) -> RunData:
        with self._lock:
            return self.data.snapshot()

    def stop(self, grace: float = 0.0) -> None:
        """Stop following (the run goes on, in its own warmscope): the figures stay as read."""
        with self._lock:
            if not self.data.finished and not self._file.closed:
                self._end(outcome.STOPPED, "no longer followed: the run goes on elsewhere")
            self._stopped = True

    def kill(self) -> None:
        self.stop()

    def is_finished(self) -> bool:
        return self.data.finished

    def elapsed(self) -> float:
        return time.monotonic() - self._t0


def follow(path: Path) -> RecordFollower:
    """A follower of the record at ``path``; ``RecordError`` where it cannot be read."""
    try:
        return RecordFollower(path)
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from None
