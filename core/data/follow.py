"""Following a record that a live run is still writing, as ``tail -f`` does: a ``LiveRun``.

``warmscope open`` of such a record shows the run so far and then grows with it: each
``poll`` reads the complete lines written since the last one (a line still being written
waits for its newline) and folds them with the same checks as ``read_run`` (``reading``).
When the writer lets go of the record (``record.is_live``) and nothing is left to read, the
run has ended: as its ``end`` line says, or crashed where there is none. Folding the lines
the run wrote gives the run's own figures: the record is where the run keeps them.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from warmscope.core.child import outcome
from warmscope.core.data.reading import MAX_LINE_BYTES, RecordError, fold_entry, live_writer
from warmscope.core.data.record import is_live
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
        live = is_live(self.path)  # before reading: what a dead writer wrote is all there
        try:
            chunk = self._file.read(READ_BYTES)
            self._fold(chunk)
        except (RecordError, OSError, UnicodeDecodeError, ValueError) as exc:
            self._end(outcome.CRASHED, f"following stopped: {exc}")
            return
        if self.data.finished:
            self._file.close()
        elif not live and len(chunk) < READ_BYTES:
            self._end(
                outcome.CRASHED, "the record ends before the run did (warmscope itself stopped)"
            )
        elif self.data.status == outcome.RUNNING:
            self.data.status_detail = live_writer(self.path, self.data) or ""

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
