"""The run record: JSONL appended as the run goes, readable after any crash.

Each line is one JSON object with a ``type`` (declared in ``schema``, which folds them). Lines are
buffered and written in batches; a run that dies leaves every batch written before it, and the
reader ignores a torn last line.

Default location: ``$WARMSCOPE_RECORD_DIR``, else ``$XDG_STATE_HOME/warmscope/runs``, else
``~/.local/state/warmscope/runs``.

Writing. One record belongs to one run. ``RecordWriter.create`` makes the file with ``O_EXCL``
and ``O_NOFOLLOW``, so it never appends to, truncates or writes through what is already at that
path (another run's record, someone's file, a planted link), and holds an exclusive ``flock``
on it while the run lasts: that lock is how ``is_live`` (and ``create(..., overwrite=True)``)
tell a record a live run is still writing. Default names (``create_unique``) carry the second,
target, mode and pid, and a ``-2``, ``-3``, ... suffix when that name is taken, so two runs
never share a file, even in the same second and process. The child's raw stderr goes to a side
file opened the same way (``open_side_file``).

Reading is ``reading`` (``read_run``, ``read_summarized``, ``check_header``, named here too);
the kinds of line, each with its check and its fold, are ``schema``'s.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

from warmscope.core.base import files
from warmscope.core.base.safe_text import clean_line
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.reading import (
    QUICK_READ_BYTES,
    Progress,
    check_header,
    read_run,
    read_summarized,
)
from warmscope.core.data.record_lock import is_live
from warmscope.core.data.schema import FORMAT, VERSION, RecordError

__all__ = [
    "FORMAT",
    "QUICK_READ_BYTES",
    "VERSION",
    "Progress",
    "RecordError",
    "RecordExistsError",
    "RecordWriter",
    "check_header",
    "create_unique",
    "default_record_path",
    "is_live",
    "open_side_file",
    "read_run",
    "read_summarized",
    "record_dir",
    "side_file_path",
    "unique_record_path",
]

_MAX_SUFFIX = 10_000  # ``create_unique`` gives up after this many taken names


class RecordExistsError(RecordError):
    """Something is already at the record path (``create`` without ``overwrite``)."""


# -- where records go ---------------------------------------------------------------------------


def new_folder(folder: Path | None, kind: str, target: str) -> Path:
    """A new folder for a set of records (a sweep's, a warm-up's): ``folder`` as given, else
    ``KIND-STAMP-TARGET-PID`` under ``record_dir()``; never one that exists already."""
    if folder is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = re.sub(r"[^A-Za-z0-9._=-]+", "-", target.rsplit("/", 1)[-1]).strip("-")[:40]
        folder = record_dir() / f"{kind}-{stamp}-{name or 'target'}-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise RecordError(f"{folder} exists already: give another folder") from None
    except OSError as exc:
        raise RecordError(f"cannot create {folder}: {exc.strerror or exc}") from None
    return folder


def record_dir() -> Path:
    if os.environ.get("WARMSCOPE_RECORD_DIR"):
        folder = Path(os.environ["WARMSCOPE_RECORD_DIR"])
        if folder.exists() and not folder.is_dir():
            raise UsageError(
                f"WARMSCOPE_RECORD_DIR={clean_line(str(folder))}: not a folder; name a folder "
                "for the records (made if missing), or unset it"
            )
        return folder
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "warmscope" / "runs"


def side_file_path(path: Path) -> Path:
    """Where the child's raw stderr goes beside the record ``path``."""
    return path.with_suffix(".stderr.txt")


def _base_name(target: str, mode: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(target.split(":")[-1]).stem or "run")[:40]
    mode = re.sub(r"[^A-Za-z0-9_.-]+", "_", mode)[:20] or "run"
    return f"{stamp}-{name}-{mode}-{os.getpid()}"


def _candidates(target: str, mode: str) -> Iterator[Path]:
    base = _base_name(target, mode)
    folder = record_dir()
    return itertools.chain(
        [folder / f"{base}.jsonl"],
        (folder / f"{base}-{n}.jsonl" for n in range(2, _MAX_SUFFIX + 1)),
    )


def _taken(path: Path) -> bool:
    return os.path.lexists(path) or os.path.lexists(side_file_path(path))


def unique_record_path(target: str, mode: str) -> Path:
    """A default record path that does not exist yet (nor its side file):
    ``{YYYYmmdd-HHMMSS}-{name}-{mode}-{pid}.jsonl`` under ``record_dir()``, with ``-2``, ``-3``,
    ... before ``.jsonl`` when that name is taken.

    Only a hint: another run may take the name before this one creates it. ``create_unique``
    is the safe way (it creates with ``O_EXCL`` and moves to the next suffix on collision).
    """
    for path in _candidates(target, mode):
        if not _taken(path):
            return path
    raise RecordError(f"no free record name in {record_dir()}: clear out old records")


default_record_path = unique_record_path
"""The former name of ``unique_record_path``."""


def create_unique(target: str, mode: str) -> RecordWriter:
    """A writer on a new default-named record: each taken name (by another run, even one in
    the same second and process) moves on to the next suffix; ``O_EXCL`` in ``create`` is what
    makes the name this run's alone. Raises ``RecordError`` when the folder cannot be written."""
    for path in _candidates(target, mode):
        if _taken(path):
            continue
        try:
            return RecordWriter.create(path)
        except RecordExistsError:
            continue  # another run created it between the look and the create
    raise RecordError(f"no free record name in {record_dir()}: clear out old records")


# -- writing --------------------------------------------------------------------------------


def _cannot_write(path: Path, exc: OSError) -> RecordError:
    return RecordError(f"cannot write the record {path}: {exc.strerror or exc}")


def _lock_holder(fd: int) -> int | None:
    """The pid holding an ``flock`` on the file open at ``fd``, from ``/proc/locks``, if any."""
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    exact = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    by_inode = []
    for line in lines:
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK":  # "->" marks a waiter, not a holder
            continue
        try:
            pid = int(parts[4])
        except ValueError:
            continue
        if pid <= 0:
            continue
        if parts[5] == exact:
            return pid
        if parts[5].rsplit(":", 1)[-1] == str(st.st_ino):
            by_inode.append(pid)  # overlay file systems show another device number
    return by_inode[0] if len(set(by_inode)) == 1 else None


def _live_error(path: Path, holder: int | None) -> RecordError:
    who = f" (pid {holder})" if holder else ""
    return RecordError(f"{path} is being written by a live run{who}: choose another --record path")


def _replace_existing(path: Path) -> None:
    """Remove the record at ``path`` for ``--overwrite``: a regular file no live run holds.
    Its lock is held across the removal, so a run that starts on it meanwhile is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # gone meanwhile: nothing to replace
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RecordError(
                f"{path} is a symbolic link: warmscope does not write through links; "
                "choose another --record path"
            ) from None
        raise _cannot_write(path, exc) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise _cannot_write(path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
        if not stat.S_ISREG(mode):
            raise RecordError(f"{path} is not a regular file: --overwrite replaces only records")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _live_error(path, _lock_holder(fd)) from None
        except OSError:
            pass  # a file system without flock: nothing tells a live run
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _cannot_write(path, exc) from None
    finally:
        os.close(fd)


class RecordWriter:
    """Writes one run's record lines: ``write`` buffers, ``flush`` writes what is buffered
    (the session calls it every 250 ms), ``close`` ends it.

    ``RecordWriter(path)`` is ``RecordWriter.create(path)``: see there.
    """

    def __init__(self, path: Path, *, overwrite: bool = False) -> None:
        self.path = path
        self._buffer: list[str] = []
        self._pending = b""  # encoded, not yet written (a failed flush leaves its rest here)
        self._failed = False
        self._fd: int | None = None
        self._fd = self._open(path, overwrite)

    @classmethod
    def create(cls, path: Path, *, overwrite: bool = False) -> RecordWriter:
        """A writer on a new record at ``path``, made with its folder.

        Never follows a symbolic link at ``path`` and never appends to or truncates a file:
        something at ``path`` raises ``RecordExistsError`` unless ``overwrite``, which replaces
        a regular file, except one a live run is still writing (``RecordError``). Any other
        failure to create it (read-only file system, a folder there, no permission) is a
        ``RecordError`` naming the path. The writer holds an exclusive ``flock`` on the record
        until ``close``: ``is_live`` sees it.
        """
        return cls(path, overwrite=overwrite)

    @staticmethod
    def _open(path: Path, overwrite: bool) -> int:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _cannot_write(path, exc) from None
        for attempt in range(2):
            try:
                fd = files.create_new(path)
                break
            except FileExistsError:
                if os.path.isdir(path) and not os.path.islink(path):
                    raise _cannot_write(
                        path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
                    ) from None
                if os.path.islink(path):
                    raise RecordError(
                        f"{path} is a symbolic link: warmscope does not write through links; "
                        "choose another --record path"
                    ) from None
                if attempt:
                    raise RecordExistsError(
                        f"{path} was created again by another run meanwhile: "
                        "choose another --record path"
                    ) from None
                if not overwrite:
                    raise RecordExistsError(
                        f"{path} exists: choose another --record path, "
                        "or pass --overwrite to replace it"
                    ) from None
                _replace_existing(path)
            except OSError as exc:
                raise _cannot_write(path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # Another run's --overwrite opened the new file in the instant before this lock.
            holder = _lock_holder(fd)
            os.close(fd)
            raise _live_error(path, holder) from None
        except OSError:
            pass  # a file system without flock: the record is still this run's (O_EXCL)
        return fd

    @property
    def closed(self) -> bool:
        return self._fd is None

    @property
    def failed(self) -> bool:
        """Whether a flush has failed (disk full, I/O error) since the last one that worked."""
        return self._failed

    def write(self, entry: dict[str, Any]) -> None:
        """Buffer one line (written at the next ``flush``). ``ValueError`` once closed."""
        if self._fd is None:
            raise ValueError(f"the record {self.path} is closed")
        self._buffer.append(json.dumps(entry, separators=(",", ":"), default=str) + "\n")

    def flush(self) -> None:
        """Write what is buffered. Raises ``OSError`` (disk full, I/O error): what could not be
        written stays and is tried again at the next flush, so the lines stay whole and in
        order if the disk frees up."""
        if self._fd is None:
            return  # closed: nothing is buffered
        if self._buffer:
            self._pending += "".join(self._buffer).encode("utf-8")
            self._buffer.clear()
        view = memoryview(self._pending)
        written = 0
        try:
            while written < len(view):
                written += os.write(self._fd, view[written:])
        except OSError:
            self._failed = True
            raise
        finally:
            view.release()
            self._pending = self._pending[written:]
        self._failed = False

    def close(self) -> None:
        """Flush, release the lock, close. Safe to call again. Raises the ``OSError`` of this
        last flush only if no flush failed before it (a failure already raised is not raised
        twice); the file is closed either way."""
        if self._fd is None:
            return
        failed_before = self._failed
        try:
            self.flush()
        except OSError:
            if not failed_before:
                self._close_fd()
                raise
        self._close_fd()

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        self._buffer.clear()
        self._pending = b""
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # drops the flock

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def open_side_file(path: Path, *, overwrite: bool = False) -> BinaryIO:
    """A new file at ``path`` for the child's raw stderr beside the record.

    Never follows a symbolic link and never truncates: something already at ``path`` (a
    leftover, a planted link) raises ``RecordError`` naming it; with ``overwrite`` a regular
    file there is replaced (never a link or a folder)."""
    for attempt in range(2):
        try:
            fd = files.create_new(path)
            return cast(BinaryIO, os.fdopen(fd, "wb"))
        except FileExistsError:
            regular = os.path.isfile(path) and not os.path.islink(path)
            if overwrite and regular and not attempt:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    raise RecordError(f"cannot write {path}: {exc.strerror or exc}") from None
                continue
            what = (
                "is a symbolic link"
                if os.path.islink(path)
                else "exists"
                if regular
                else "exists and is not a regular file"
            )
            raise RecordError(
                f"{path} {what}: warmscope will not write the child's stderr there; "
                "remove it or choose another --record path"
            ) from None
        except OSError as exc:
            raise RecordError(f"cannot write {path}: {exc.strerror or exc}") from None
    raise RecordError(f"{path} keeps reappearing: choose another --record path")
