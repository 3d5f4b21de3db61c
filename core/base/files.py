"""Files written whole or not at all: beside, then renamed (exports, documents, recipes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TextIO


@contextmanager
def beside(path: Path, *, parents: bool = True, newline: str | None = None) -> Iterator[TextIO]:
    """A new ``PATH.tmp`` to write, renamed onto ``path`` when the block ends without error.

    On any failure (writing, encoding, renaming) the ``.tmp`` file is removed: nothing is
    left behind. A leftover ``.tmp`` of an earlier crash is replaced, never written through
    (``O_EXCL``: a link planted there is not followed). ``parents`` creates missing folders.
    """
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: Path, text: str, *, parents: bool = True) -> None:
    """Write beside, then rename: a reader never sees half a file, and a failed write leaves
    no ``.tmp`` behind. ``parents``: create missing folders (else a missing one is an error)."""
    with beside(path, parents=parents) as f:
        f.write(text)
