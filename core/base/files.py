"""Every file warmscope writes goes through here: never through a link, never half.

Four ways to write, each refusing a link planted at the path (``O_NOFOLLOW``, or ``O_EXCL`` on a
name of warmscope's own making):

- ``beside``/``atomic_write``/``atomic_write_bytes``/``copy_beside``: a whole file written
  beside the path and renamed onto it (exports, documents, recipes, shipped files, a recipe's
  cache artifact): a reader never sees half of it;
- ``create_new``: a file that must not exist yet (a record, its stderr side file);
- ``appending``: more lines at the end of a file that exists, or that this creates (a finished
  record's explanation, a task's notes in its stderr side file).

The child side (``core/child``, loaded by path, standard library only) and the kernel's own
files (cgroupfs, ``/dev/null``) are the only writers elsewhere; ``test_one_writer`` keeps it so.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, BinaryIO, TextIO, cast

NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
"""A new file, never one already there, never through a link."""


def create_new(path: Path, mode: int = 0o644) -> int:
    """A descriptor on a new file at ``path`` (``FileExistsError`` where anything is there,
    a link included)."""
    return os.open(path, NEW, mode)


@contextmanager
def appending(path: Path, *, create: bool = False, binary: bool = False) -> Iterator[IO]:
    """``path`` opened to add at its end, never through a link (``OSError`` where it is one);
    ``create``: made (0644) where missing."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags | (os.O_CREAT if create else 0), 0o644)
    if binary:
        with os.fdopen(fd, "ab") as raw:
            yield raw
    else:
        with os.fdopen(fd, "a", encoding="utf-8") as text:
            yield text


def _beside_name(path: Path, unique: bool) -> Path:
    if unique:  # several processes may write the same path at once: each its own part
        return path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.part")
    return path.with_name(path.name + ".tmp")


@contextmanager
def _written_beside(
    path: Path,
    *,
    parents: bool,
    binary: bool,
    mode: int | None,
    unique: bool,
    newline: str | None,
) -> Iterator[IO]:
    """``mode``: the file's, whatever the umask; ``None``: the umask's (0666 less it)."""
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _beside_name(path, unique)
    with suppress(FileNotFoundError):
        os.unlink(tmp)  # a leftover of a crash (or a link planted there): replaced, not used
    fd = os.open(tmp, NEW, 0o666 if mode is None else mode)
    try:
        if binary:
            with os.fdopen(fd, "wb") as raw:
                yield raw
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as text:
                yield text
        if mode is not None:
            os.chmod(tmp, mode)  # data from elsewhere: neither executable nor more private
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


@contextmanager
def beside(path: Path, *, parents: bool = True, newline: str | None = None) -> Iterator[TextIO]:
    """A new ``PATH.tmp`` to write, renamed onto ``path`` when the block ends without error.

    On any failure (writing, encoding, renaming) the ``.tmp`` file is removed: nothing is
    left behind. A leftover ``.tmp`` of an earlier crash is replaced, never written through
    (``O_EXCL``: a link planted there is not followed). ``parents`` creates missing folders.
    """
    with _written_beside(
        path, parents=parents, binary=False, mode=None, unique=False, newline=newline
    ) as f:
        yield cast(TextIO, f)


def atomic_write(path: Path, text: str, *, parents: bool = True) -> None:
    """Write beside, then rename: a reader never sees half a file, and a failed write leaves
    no ``.tmp`` behind. ``parents``: create missing folders (else a missing one is an error)."""
    with beside(path, parents=parents) as f:
        f.write(text)


def atomic_write_bytes(
    path: Path, data: bytes, *, mode: int = 0o644, unique: bool = False, parents: bool = False
) -> None:
    """``atomic_write`` for bytes, with the file's ``mode`` whatever the umask; ``unique``:
    the part written beside is this thread's own (several processes may write ``path``)."""
    with _written_beside(
        path, parents=parents, binary=True, mode=mode, unique=unique, newline=None
    ) as f:
        cast(BinaryIO, f).write(data)


def copy_beside(source: Path, path: Path) -> None:
    """``source``'s bytes written beside ``path`` and renamed onto it (``shutil.copyfile``
    would write through a link planted at ``path``)."""
    with (
        open(source, "rb") as src,
        _written_beside(
            path, parents=False, binary=True, mode=None, unique=False, newline=None
        ) as dst,
    ):
        shutil.copyfileobj(src, dst)
