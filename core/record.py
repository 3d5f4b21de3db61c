"""The run record: JSONL appended as the run goes, readable after any crash.

Each line is one JSON object with a ``type`` (listed in ``fold``, which applies them). Lines are
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

Reading. A record may come from someone else: ``read_run`` raises nothing but ``RecordError``
(one line, exit code 2) for a file it cannot read, a record of a newer version, or a line of the
wrong shape, naming the file and the line.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import math
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from warmscope.core import outcome
from warmscope.core.fold import apply_line, mode_from_settings
from warmscope.core.outcome import UsageError
from warmscope.core.run import Event, RunData
from warmscope.core.safe_text import clean_line
from warmscope.core.settings import RunSettings

FORMAT = "warmscope-record"
VERSION = 2
"""2: iterations packed (``packing``); 1: iterations as plain lists. Both are read."""

_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_SUFFIX = 10_000  # ``create_unique`` gives up after this many taken names


class RecordError(UsageError):
    """A record that cannot be read or written; the message, one line, names the file."""

    def __init__(self, message: str) -> None:
        super().__init__(clean_line(message))


class RecordExistsError(RecordError):
    """Something is already at the record path (``create`` without ``overwrite``)."""


# -- where records go ---------------------------------------------------------------------------


def record_dir() -> Path:
    if os.environ.get("WARMSCOPE_RECORD_DIR"):
        return Path(os.environ["WARMSCOPE_RECORD_DIR"])
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


def is_live(path: Path) -> bool:
    """Whether a live run's writer holds the record at ``path`` (its ``flock``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # also drops the shared lock, if taken
    return False


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
                fd = os.open(path, _CREATE_FLAGS, 0o644)
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
            fd = os.open(path, _CREATE_FLAGS, 0o644)
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


# -- reading --------------------------------------------------------------------------------


class _Shape(ValueError):
    """A record line or document of the wrong shape; the message says what is wrong."""


_FOLD_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        text = f"missing {exc}"
    elif type(exc) in (_Shape, ValueError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 160 else text[:157] + "..."


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise _Shape(what)


def _field(
    d: dict[str, Any],
    key: str,
    check: Callable[[Any], bool],
    expected: str,
    *,
    optional: bool = True,
) -> None:
    if key not in d:
        _need(optional, f"no {key!r}")
        return
    value = d[key]
    _need(check(value), f"{key!r} is {_kind(value)}, expected {expected}")


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_opt_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def _is_opt_int(v: Any) -> bool:
    return v is None or _is_int(v)


def _is_opt_num(v: Any) -> bool:
    return v is None or _is_num(v)


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


Fields = tuple[tuple[str, Callable[[Any], bool], str], ...]
"""``(key, check, what it must be)`` for each field a line may have."""

_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "str": (_is_str, "a string"),
    "str?": (_is_opt_str, "a string"),
    "int?": (_is_opt_int, "an integer"),
    "num": (_is_num, "a number"),
    "num?": (_is_opt_num, "a number"),
    "dict": (_is_dict, "an object"),
    "dict?": (lambda v: v is None or isinstance(v, dict), "an object"),
    "strs": (_is_str_list, "a list of strings"),
}


def _spec(text: str) -> Fields:
    """``"kind:str iteration:int?"``: each field and the type its value must have (``?``: or
    null)."""
    return tuple((key, *_TYPES[kind]) for key, kind in (f.split(":") for f in text.split()))


RUN_FIELDS = _spec(
    "settings:dict target:dict mode:str? started:str command:strs stderr_file:str? run_id:str?"
)
EVENT_FIELDS = _spec(
    "kind:str title:str text:str iteration:int? phase:str? ms:num? t:num data:dict?"
)


def _fields(d: dict[str, Any], fields: Fields) -> None:
    for key, check, expected in fields:
        _field(d, key, check, expected)


def _check_run_fields(d: dict[str, Any]) -> None:
    """The fields a header (or a ``--json`` document) gives the whole run."""
    _fields(d, RUN_FIELDS)
    settings = d.get("settings", {})
    _field(settings, "knobs", _is_dict, "an object in settings")
    _field(settings, "inputs", lambda v: v is None or isinstance(v, list), "a list in settings")
    target = d.get("target", {})
    _field(target, "default_inputs", lambda v: v is None or isinstance(v, list), "a list")


def _check_version(d: dict[str, Any], path: Path) -> None:
    version = d.get("version", 1)
    _need(_is_int(version), f"'version' is {_kind(version)}, expected an integer")
    if version > VERSION:
        raise RecordError(
            f"{path} is a warmscope record of version {version}; "
            f"this warmscope reads version {VERSION} (upgrade warmscope)"
        )


def _check_event(d: Any) -> None:
    _need(isinstance(d, dict), f"an event is {_kind(d)}, expected an object")
    _fields(d, EVENT_FIELDS)


SAMPLE_FIELDS = ("cpu", "rss_mb", "threads", "procs", "sys_cpu", "t", "iteration")


def _check_sample(d: Any) -> None:
    _need(isinstance(d, dict), f"a sample is {_kind(d)}, expected an object")
    for key in d:
        if key in SAMPLE_FIELDS or key.startswith("gpu_"):
            _field(d, key, _is_opt_num, "a number")


def _check_profile(d: Any) -> None:
    _need(isinstance(d, dict), f"a profile is {_kind(d)}, expected an object")
    _field(d, "iteration", _is_int, "an integer", optional=False)
    for key in ("wall_ms", "ops_ms", "unaccounted_ms"):
        _field(d, key, _is_num, "a number")
    _field(d, "trace", _is_opt_str, "a string")
    _field(d, "ops", lambda v: isinstance(v, list), "a list")
    for op in d.get("ops", []):
        _need(isinstance(op, dict), f"an operator is {_kind(op)}, expected an object")
        _field(op, "name", _is_str, "a string", optional=False)
        _field(op, "self_ms", _is_num, "a number", optional=False)
        _field(op, "calls", _is_int, "an integer")


def _check_error(d: dict[str, Any]) -> None:
    for key in ("message", "traceback", "exception", "where"):
        _field(d, key, _is_opt_str, "a string")
    _field(d, "iteration", _is_opt_int, "an integer")


def _check_latencies(ms: Any, start_ms: Any, names: tuple[str, str]) -> None:
    for value, name in zip((ms, start_ms), names, strict=True):
        _need(isinstance(value, list), f"{name!r} is {_kind(value)}, expected a list of numbers")
    _need(len(ms) == len(start_ms), f"{names[0]!r} and {names[1]!r} differ in length")
    try:
        total = math.fsum(ms) + math.fsum(start_ms)
    except TypeError:
        raise _Shape("a latency that is not a number") from None
    except (OverflowError, ValueError):  # huge values, or inf and -inf
        total = math.inf
    _need(math.isfinite(total), "a latency that is not a finite number")


def _check_line(entry: dict[str, Any]) -> None:
    """What ``apply_line`` and every reader after it rely on, for the kinds this version
    knows; fields it does not know are left alone (a newer writer may add them)."""
    kind = entry.get("type")
    if kind == "header":
        _check_run_fields(entry)
    elif kind == "spawned":
        _field(entry, "pid", _is_int, "an integer", optional=False)
    elif kind == "env":
        _field(entry, "env", _is_dict, "an object")
    elif kind == "phase":
        _field(entry, "name", _is_str, "a string", optional=False)
        _field(entry, "ms", _is_num, "a number", optional=False)
    elif kind == "iters":
        _field(entry, "i0", lambda v: _is_int(v) and v >= 0, "an iteration number", optional=False)
        if "z" in entry:  # packed: ``packing.unpack`` checks that it decodes to its count
            _field(entry, "z", _is_str, "a string")
            _field(entry, "n", lambda v: _is_int(v) and v > 0, "a count", optional=False)
            _field(entry, "s0", _is_int, "an integer", optional=False)
        elif "ns" in entry:
            _check_latencies(entry["ns"], entry.get("st"), ("ns", "st"))
        else:
            _check_latencies(entry.get("ms"), entry.get("start_ms"), ("ms", "start_ms"))
        if "sh" in entry:
            sh = entry["sh"]
            _need(
                isinstance(sh, list) and all(_is_int(v) and -1 <= v < 2**15 for v in sh),
                "'sh' is not a list of shape indices",
            )
            _need(
                len(sh) == len(entry.get("ns") or entry.get("ms") or []), "'sh' differs in length"
            )
    elif kind == "shapes":
        _need(_is_str_list(entry.get("keys")), "'keys' is not a list of strings")
        _need(
            isinstance(entry.get("dims", []), list)
            and all(_is_dict(d) for d in entry.get("dims", [])),
            "'dims' is not a list of objects",
        )
    elif kind == "inputs":
        _need(_is_str_list(entry.get("inputs", [])), "'inputs' is not a list of strings")
    elif kind == "idle_probe":
        results = entry.get("results", [])
        _need(isinstance(results, list), "'results' is not a list")
        for r in results:
            _need(isinstance(r, dict) and _is_num(r.get("idle_s")), "an idle probe without idle_s")
            _need(
                isinstance(r.get("ms"), list) and all(_is_num(v) for v in r["ms"]),
                "an idle probe's 'ms' is not a list of numbers",
            )
    elif kind == "event":
        _check_event(entry)
    elif kind == "sample":
        _check_sample(entry)
    elif kind == "profile":
        _check_profile(entry)
    elif kind == "graphs":
        for key, value in entry.items():
            _need(isinstance(value, str), f"graph {key!r} is {_kind(value)}, expected a string")
    elif kind == "error":
        _check_error(entry)
    elif kind == "end":
        _field(entry, "status", _is_str, "a string")
        _field(entry, "detail", _is_str, "a string")
        _field(entry, "exit_code", _is_opt_int, "an integer")


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
                return _from_document(_load_document(f, path), path)
            size = os.fstat(f.fileno()).st_size
            return _from_lines(f, path, progress if size else None, size, ms)
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
        _check_version(entry, path)
    except _Shape as exc:
        raise RecordError(f"{path}:1: not a valid record line ({_describe(exc)})") from None
    return size


def _open_text(path: Path) -> IO[str]:
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
        return os.fdopen(fd, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def _load_document(f: IO[str], path: Path) -> Any:
    try:
        return json.load(f)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, too many digits, too deep
        raise RecordError(f"{path} is not a warmscope record: {_describe(exc)}") from None


_PROGRESS_EVERY = 1 << 20  # characters (bytes, nearly: records are ASCII but for strings)


def _from_lines(
    lines: IO[str], path: Path, progress: Progress | None = None, size: int = 0, ms: bool = True
) -> RunData:
    data = RunData(record_path=str(path))
    if not ms:
        data.defer_ms()
    seen_header = False
    done = told = 0
    for number, line in enumerate(lines, 1):
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
                _check_version(entry, path)
            except _Shape as exc:
                raise RecordError(
                    f"{path}:{number}: not a valid record line ({_describe(exc)})"
                ) from None
        elif kind == "header":
            raise RecordError(
                f"{path}:{number}: not a valid record line (a second header: "
                "two runs wrote to this file)"
            )
        try:
            _need(isinstance(entry, dict), f"a line that is {_kind(entry)}, expected an object")
            _check_line(entry)
            apply_line(data, entry)
        except RecordError:
            raise
        except _FOLD_ERRORS as exc:
            raise RecordError(
                f"{path}:{number}: not a valid record line ({_describe(exc)})"
            ) from None
    if not seen_header:
        raise RecordError(f"{path} is empty, not a warmscope record")
    if not data.finished:
        data.status = outcome.CRASHED
        data.status_detail = "the record ends before the run did (warmscope itself stopped)"
    return data


def _from_document(doc: Any, path: Path) -> RunData:
    if not isinstance(doc, dict) or doc.get("format") != "warmscope-run":
        raise RecordError(f"{path} is not a warmscope --json document")
    try:
        _check_version(doc, path)
        return _document_data(doc, path)
    except RecordError:
        raise
    except _FOLD_ERRORS as exc:
        raise RecordError(
            f"{path}: not a valid warmscope --json document ({_describe(exc)})"
        ) from None


def _list_of(doc: dict[str, Any], key: str) -> list[Any]:
    _field(doc, key, lambda v: isinstance(v, list), "a list")
    return cast(list[Any], doc.get(key, []))


def _document_data(doc: dict[str, Any], path: Path) -> RunData:
    _check_run_fields(doc)
    _field(doc, "env", _is_dict, "an object")
    _field(doc, "status", _is_str, "a string")
    _field(doc, "status_detail", _is_str, "a string")
    _field(doc, "error", lambda v: v is None or isinstance(v, dict), "an object")
    _field(doc, "exit_code", _is_opt_int, "an integer")
    _field(doc, "graphs", _is_dict, "an object")
    if doc.get("error"):
        _check_error(doc["error"])
    for key, value in doc.get("graphs", {}).items():
        _need(isinstance(value, str), f"graph {key!r} is {_kind(value)}, expected a string")
    data = RunData(
        settings=RunSettings.from_json(doc.get("settings", {})),
        target=doc.get("target", {}),
        env=doc.get("env", {}),
        mode=doc.get("mode") or mode_from_settings(doc.get("settings", {}), doc.get("target", {})),
        status=doc.get("status", outcome.CRASHED),
        status_detail=doc.get("status_detail", ""),
        error=doc.get("error"),
        exit_code=doc.get("exit_code"),
        started=doc.get("started", ""),
        command=doc.get("command", []),
        record_path=str(path),
        stderr_path=doc.get("stderr_file"),
        run_id=doc.get("run_id"),
    )
    for p in _list_of(doc, "phases"):
        _need(isinstance(p, dict), f"a phase is {_kind(p)}, expected an object")
        _field(p, "name", _is_str, "a string", optional=False)
        _field(p, "ms", _is_num, "a number", optional=False)
        data.phases[p["name"]] = p["ms"]
    rows = _list_of(doc, "iterations")
    for r in rows:
        _need(isinstance(r, dict), f"an iteration is {_kind(r)}, expected an object")
    ms = [r["ms"] for r in rows]
    start_ms = [r.get("start_ms", 0.0) for r in rows]
    _check_latencies(ms, start_ms, ("ms", "start_ms"))
    summary: dict[str, Any] = doc["summary"] if isinstance(doc.get("summary"), dict) else {}
    shape_rows = [r for r in summary.get("shapes") or [] if isinstance(r, dict)]
    if shape_rows:
        data.shape_keys = [str(r.get("key", "")) for r in shape_rows]
        data.shape_dims = [r.get("dims") if _is_dict(r.get("dims")) else {} for r in shape_rows]
        index = {k: n for n, k in enumerate(data.shape_keys)}
        data.add_iterations(0, ms, start_ms, [index.get(r.get("shape"), -1) for r in rows])
    else:
        data.add_iterations(0, ms, start_ms)
    for probe in summary.get("idle_probe") or []:
        if isinstance(probe, dict) and _is_num(probe.get("idle_s")):
            data.idle_probe.append({"idle_s": probe["idle_s"], "ms": probe.get("ms", [])})
            if isinstance(probe.get("shape"), str):
                data.idle_probe_shape = probe["shape"]
    data.memory = {
        k: summary[k] for k in ("peak_rss_mb", "cuda_max_allocated_mb") if _is_num(summary.get(k))
    }
    if _is_str_list(doc.get("inputs", [])):
        data.inputs = list(doc.get("inputs", []))
    for e in _list_of(doc, "events"):
        _check_event(e)
        data.add_event(Event.from_json(e))
    samples = _list_of(doc, "samples")
    for s in samples:
        _check_sample(s)
    data.samples = samples
    for p in _list_of(doc, "profiles"):
        _check_profile(p)
        data.profiles[p["iteration"]] = p
    data.graphs = doc.get("graphs", {})
    return data
