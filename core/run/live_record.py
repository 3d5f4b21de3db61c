"""One run's record as its session writes it, and its live data: each line checked, folded
into the ``RunData`` a view polls and written to the record at once, flushed in batches; the
child's raw stderr in its side file, capped. A write that fails (a full disk) ends the run:
what the record holds is what it could keep.
"""

from __future__ import annotations

import contextlib
import errno
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warmscope.core.data.fold import apply_line, check_line, event_line
from warmscope.core.data.packing import Packed
from warmscope.core.data.record import (
    VERSION,
    RecordWriter,
    create_unique,
    open_side_file,
    side_file_path,
)
from warmscope.core.data.run import Event, RunData
from warmscope.core.data.run_summary import run_summary
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.targets import Target
from warmscope.core.run.side_cap import CappedFile, cut_note

RECORD_FLUSH_S = 0.25


class LiveRecord:
    """The record of one run and the data folded from the same lines.

    Created with the session, exclusively (two runs never share a record: ``RecordError``
    names why); ``open`` when the run starts. ``elapsed``: the run's clock, for its events.
    ``on_failed``: told why the record cannot be kept, to end the run."""

    def __init__(
        self,
        settings: RunSettings,
        target: Target,
        mode: str,
        run_id: str,
        *,
        record_path: Path | None,
        command: list[str] | None,
        overwrite: bool,
        elapsed: Callable[[], float],
        on_failed: Callable[[str], None],
    ) -> None:
        self._writer: RecordWriter = (
            RecordWriter.create(record_path, overwrite=overwrite)
            if record_path is not None
            else create_unique(settings.target, mode)
        )
        self._overwrite = overwrite
        self.path = self._writer.path
        self.stderr_path = side_file_path(self.path)
        header = {
            "type": "header",
            "format": "warmscope-record",
            "version": VERSION,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": command or [],
            "settings": settings.to_json(),
            "target": target.to_json(),
            "mode": mode,
            "stderr_file": str(self.stderr_path),
            "run_id": run_id,
        }
        self._header = json.loads(json.dumps(header, default=str))
        self.data = RunData(record_path=str(self.path))
        apply_line(self.data, self._header)
        self.stderr_file: CappedFile | None = None
        self._elapsed = elapsed
        self._on_failed = on_failed
        self.last_flush = 0.0
        """When the record was last flushed (``flush_due``)."""

    @property
    def writable(self) -> bool:
        return not (self._writer.failed or self._writer.closed)

    def open(self) -> None:
        """The side file made (never over another file) and the header written."""
        self.stderr_file = CappedFile(open_side_file(self.stderr_path, overwrite=self._overwrite))
        self._writer.write(self._header)

    def flush_start(self) -> None:
        """What is written before the child starts, on disk: an error raises (nothing ran)."""
        self._writer.flush()

    def commit(
        self, line: dict[str, Any], *, native: bool = False, packed: Packed | None = None
    ) -> None:
        """Write one record line and fold that same line into the live data.

        A line built here (not decoded from the child) is folded as it reads back from JSON
        (tuples become lists, say), so the live run and its replay hold equal data.
        ``native``: the line already holds nothing but JSON's own types. ``packed``: the
        batch an ``iters`` line was packed from here (``record_entry``), folded as it decodes.
        """
        if not native:
            line = json.loads(json.dumps(line, default=str))
        if packed is None:  # checked as every reader checks it (a packed batch was, as made)
            check_line(line)
        apply_line(self.data, line, packed)  # first: a line it refuses never reaches the record
        if self.writable:
            self._writer.write(line)

    def add_event(self, ev: Event) -> None:
        ev.t = self._elapsed()
        self.commit(event_line(ev))

    def add_events(self, events: list[Event]) -> None:
        for ev in events:
            self.add_event(ev)

    def write_stderr(self, plain: list[bytes]) -> None:
        """The child's plain stderr lines into the side file, up to its cap (an event says
        where it was cut)."""
        if not plain or self.stderr_file is None:
            return
        try:
            if self.stderr_file.write(b"\n".join(plain) + b"\n"):
                where = str(self.stderr_path)
                self.add_event(Event("warning", cut_note(), where, self.data.count))
        except OSError as exc:
            self.write_failed(self.stderr_path, exc)

    @property
    def stderr_cut(self) -> bool:
        return self.stderr_file is not None and self.stderr_file.cut

    def flush_due(self, now: float) -> bool:
        """Whether a batch is due to be flushed (at most every ``RECORD_FLUSH_S``); it counts
        as flushed from ``now``."""
        if now - self.last_flush <= RECORD_FLUSH_S:
            return False
        self.last_flush = now
        return True

    def flush(self) -> None:
        if not self.writable:
            return
        try:
            self._writer.flush()
            if self.stderr_file is not None:
                self.stderr_file.flush()
        except OSError as exc:
            self.write_failed(self.path, exc)

    def write_failed(self, path: Path, exc: OSError) -> None:
        """A full disk or another write error: the run cannot be kept, so it ends now."""
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENOSPC:
            reason = "the disk is full"
        self._on_failed(f"cannot write {path}: {reason}")
        with contextlib.suppress(OSError, ValueError):
            self._writer.close()  # it will not take more; what it holds is what it could keep

    def end(self, end: dict[str, Any]) -> None:
        """The last line, folded and written with the run's summary (a convenience for readers
        of the raw file: ``read_run`` computes its own); the record and side file closed."""
        apply_line(self.data, end)
        if self.writable:
            self._writer.write({**end, "summary": run_summary(self.data)})
            self.flush()
        with contextlib.suppress(OSError, ValueError):
            self._writer.close()
        if self.stderr_file is not None:
            with contextlib.suppress(OSError):
                self.stderr_file.close()

    def abandon(self) -> None:
        """A start that failed: the record and the side file it made removed."""
        with contextlib.suppress(OSError):
            self._writer.close()
        for path in (self.path, self.stderr_path):
            if self.stderr_file is not None or path == self.path:
                with contextlib.suppress(OSError):
                    path.unlink()
        if self.stderr_file is not None:
            self.stderr_file.close()
