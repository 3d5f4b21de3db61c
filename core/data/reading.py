"""Reading a run back: a record (``.jsonl``) or a ``--json`` document, as ``RunData``.

A record may come from someone else: ``read_run`` raises nothing but ``RecordError`` (one line,
exit code 2) for a file it cannot read, a record of a newer version, or a line of the wrong
shape, naming the file and the line. Each line is checked and folded by ``schema``.

Whatever a file declares, a reader holds memory in proportion to what it shows, or a fixed cap:
a line is read up to ``MAX_LINE_BYTES`` (a flood of NULs or one giant line stops there), a
``--json`` document up to ``MAX_DOCUMENT_BYTES``, and a packed batch inflates no further than
its count allows, a count its bytes could honestly hold (``packing``).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TextIO, cast

from warmscope.core.base.safe_text import clean_line
from warmscope.core.child import outcome
from warmscope.core.data.document import read_document
from warmscope.core.data.record_lock import is_live
from warmscope.core.data.run import RunData
from warmscope.core.data.schema import (
    FOLD_ERRORS,
    FORMAT,
    RecordError,
    Shape,
    apply_line,
    check_line,
    check_version,
    describe,
    kind_of,
    need,
)

MAX_LINE_BYTES = 16 << 20
"""The longest record line read (a batch line is a few hundred kilobytes; a TorchScript graph a
few megabytes): a longer one is not a record's."""

MAX_DOCUMENT_BYTES = 64 << 20
"""The largest ``--json`` document read. It is read whole, and its rows cost several times
their bytes as Python objects (a million iterations, 60 MB, come to about 300 MB); a record
is read a line at a time, its iterations packed."""

QUICK_READ_BYTES = 8 << 20
"""A record up to this size is read in well under a second: ``open`` reads it whole up front
(to fail early, in one line); a larger one is read behind a first frame, with its progress."""

Progress = Callable[[float], None]
"""Told the fraction of the file read so far, every megabyte or so."""


def read_run(path: Path, progress: Progress | None = None, *, ms: bool = True) -> RunData:
    """A record (``.jsonl``) or a ``--json`` document, as ``RunData``. Anything wrong with the
    file (missing, unreadable, not a record, a newer version, a line of the wrong shape) raises
    ``RecordError``, one line naming it; nothing else is raised for a bad file.

    ``ms=False``: the latencies are converted to milliseconds only if ``RunData.ms`` is read
    (a report or a comparison needs its statistics and a few latencies, not ten million).
    """
    try:
        with _open_text(path) as f:
            head = f.read(1)
            f.seek(0)
            if head == "{" and path.suffix == ".json":
                return read_document(_load_document(f, path), path)
            size = os.fstat(f.fileno()).st_size
            return _from_lines(f.buffer, path, progress if size else None, size, ms)
    except RecordError:
        raise
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path} is not a warmscope record: {exc}") from None
    except MemoryError:
        raise RecordError(f"{path} is too large to read") from None
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_summarized(paths: list[Path]) -> list[RunData]:
    """Records to compare, each read as ``read_run(path, ms=False)`` with its summary counted.

    Counting a long record's latencies is about half of reading it. Once all are read, the
    runs beyond the first are counted in forked processes that share their memory (copy on
    write: nothing is copied but the summaries sent back), while this one counts the first:
    one core each.
    """
    runs = [read_run(p, ms=False) for p in paths]
    workers = min(len(runs) - 1, (os.cpu_count() or 1) - 1)
    big = sum(sorted(r.count for r in runs)[:-1]) >= PARALLEL_COUNT
    if workers >= 1 and big and _summarize_forked(runs, workers):
        return runs
    for run in runs:
        run.summary()
    return runs


PARALLEL_COUNT = 1_000_000
"""Iterations, beyond the largest run's, from which counting in other processes pays for
starting them."""

_FORKED: list[RunData] = []
"""The runs a forked process counts, inherited rather than sent."""


def _counted(k: int) -> Any:
    return _FORKED[k].counted()


def _summarize_forked(runs: list[RunData], workers: int) -> bool:
    """``summary()`` of every run, runs beyond the first in forked processes; False where no
    process could be forked (nothing counted then)."""
    import multiprocessing  # here: a report or a short comparison starts none
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    _FORKED[:] = runs
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            others = [pool.submit(_counted, k) for k in range(1, len(runs))]
            runs[0].summary()
            for run, done in zip(runs[1:], others, strict=True):
                run.take_counted(done.result())
    except (BrokenProcessPool, OSError):
        return False
    finally:
        _FORKED.clear()
    return True


def check_header(path: Path) -> int:
    """Whether ``path`` starts like a record this version reads (or is a ``--json`` document):
    its size in bytes, or ``RecordError`` as ``read_run`` would say it. Reads one line only."""
    try:
        with _open_text(path) as f:
            size = os.fstat(f.fileno()).st_size
            if path.suffix == ".json" and f.read(1) == "{":
                return size
            f.seek(0)
            line = f.readline(1 << 20)
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path} is not a warmscope record: {exc}") from None
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not line.strip():
        raise RecordError(f"{path} is empty, not a warmscope record")
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        entry = None
    if not isinstance(entry, dict) or entry.get("type") != "header":
        raise RecordError(f"{path} is not a warmscope record (no header line)")
    if entry.get("format") != FORMAT:
        raise RecordError(f"{path} is not a warmscope record (no header line)")
    try:
        check_version(entry, path)
    except Shape as exc:
        raise RecordError(f"{path}:1: not a valid record line ({describe(exc)})") from None
    return size


def _open_text(path: Path) -> TextIO:
    """``path`` open for reading as text: a regular file, never a FIFO that would hang."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not hang
    except FileNotFoundError:
        raise RecordError(f"no such file: {path}") from None
    except PermissionError:
        raise RecordError(f"cannot read {path}: permission denied") from None
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise RecordError(f"{path} is a folder, not a record")
        if not stat.S_ISREG(mode):
            raise RecordError(
                f"{path} is not a regular file (a pipe, device or socket), not a record"
            )
        os.set_blocking(fd, True)
        return cast(TextIO, os.fdopen(fd, encoding="utf-8"))
    except BaseException:
        os.close(fd)
        raise


def _load_document(f: IO[str], path: Path) -> Any:
    size = os.fstat(f.fileno()).st_size
    if size > MAX_DOCUMENT_BYTES:
        raise RecordError(
            f"{path} is a --json document of {size >> 20} MB, beyond the "
            f"{MAX_DOCUMENT_BYTES >> 20} MB read whole: read its record instead"
        )
    try:
        return json.load(f)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, too many digits, too deep
        raise RecordError(f"{path} is not a warmscope record: {describe(exc)}") from None


_BLOCK = 1 << 20


class _LineTooLong(Exception):
    """A line runs past the cap (``_lines``)."""


def _lines(raw: IO[bytes], limit: int) -> Iterator[bytes]:
    """Each line of ``raw`` with its newline (the last may have none), read a block at a time;
    ``_LineTooLong`` once a line runs past ``limit`` bytes, without copying it. (``readline``
    with a limit copies a long line a few kilobytes at a time: several times slower to tell
    that a flood of NULs is no line.)"""
    buf = bytearray()
    start = search = 0
    while True:
        end = buf.find(b"\n", search)
        while end >= 0:
            yield bytes(buf[start : end + 1])
            start = end + 1
            end = buf.find(b"\n", start)
        del buf[:start]
        start = 0
        if len(buf) > limit:
            raise _LineTooLong
        search = len(buf)
        block = raw.read(_BLOCK)
        if not block:
            if buf:
                yield bytes(buf)
            return
        buf += block


_PROGRESS_EVERY = 1 << 20  # characters (bytes, nearly: records are ASCII but for strings)


def _from_lines(
    raw: IO[bytes], path: Path, progress: Progress | None = None, size: int = 0, ms: bool = True
) -> RunData:
    data = RunData(record_path=str(path))
    if not ms:
        data.defer_ms()
    seen_header = False
    done = told = 0
    number = 0
    chunks = _lines(raw, MAX_LINE_BYTES)
    while True:
        number += 1
        try:
            chunk = next(chunks, None)
        except _LineTooLong:
            raise RecordError(
                f"{path}:{number}: a line longer than {MAX_LINE_BYTES >> 20} MB, "
                "not a warmscope record's"
            ) from None
        if chunk is None:
            break
        line = chunk.decode("utf-8")
        if progress is not None:
            done += len(line)
            if done - told >= _PROGRESS_EVERY:
                told = done
                progress(min(done / size, 1.0))
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError, too many digits, too deep
            if not line.endswith("\n"):
                break  # the torn last line of a run that died mid-write
            raise RecordError(f"{path}:{number}: not valid JSON") from None
        kind = entry.get("type") if isinstance(entry, dict) else None
        if not seen_header:
            if kind != "header" or entry.get("format") != FORMAT:
                raise RecordError(f"{path} is not a warmscope record (no header line)")
            seen_header = True
            try:
                check_version(entry, path)
            except Shape as exc:
                raise RecordError(
                    f"{path}:{number}: not a valid record line ({describe(exc)})"
                ) from None
        elif kind == "header":
            raise RecordError(
                f"{path}:{number}: not a valid record line (a second header: "
                "two runs wrote to this file)"
            )
        fold_entry(data, entry, path, number)
    if not seen_header:
        if live_writer(path, data) is not None:
            raise RecordError(f"{path} is being written by a live run that has only begun")
        raise RecordError(f"{path} is empty, not a warmscope record")
    if not data.finished:
        live = live_writer(path, data)
        if live is not None:
            data.status = outcome.RUNNING
            data.status_detail = live
        else:
            data.status = outcome.CRASHED
            data.status_detail = "the record ends before the run did (warmscope itself stopped)"
    return data


def fold_entry(data: RunData, entry: Any, path: Path, number: int) -> None:
    """Check one decoded record line and fold it into ``data``; ``RecordError`` naming the
    file and line where it is not a record line."""
    try:
        need(isinstance(entry, dict), f"a line that is {kind_of(entry)}, expected an object")
        check_line(entry)
        apply_line(data, entry)
    except RecordError:
        raise
    except FOLD_ERRORS as exc:
        raise RecordError(f"{path}:{number}: not a valid record line ({describe(exc)})") from None


def tell_live(runs: list[RunData], out: TextIO | None = None) -> None:
    """One line on stderr (``out``) for each run read from a record a live run still writes:
    a reader that shows only figures (``compare``) says they are the run's so far."""
    for run in runs:
        if run.status == outcome.RUNNING and run.status_detail:
            print(clean_line(run.status_detail), file=out or sys.stderr)


def live_writer(path: Path, data: RunData) -> str | None:
    """One line for a record that a live run is still writing (its writer holds the lock,
    ``record_lock.is_live``): what was read of it is the run so far, not a run that crashed.
    ``None`` for a record no run holds."""
    if not is_live(path):
        return None
    pid = (data.run_id or "").partition("-")[0]
    who = f" (pid {pid})" if pid.isdigit() else ""
    return f"{path} is being written by a live run{who}: figures so far"
