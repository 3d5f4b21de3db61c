"""Reading the records the app was opened with: short ones at once, long ones in a thread
worker whose messages tell the loading screen how far it has got, then what it read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message
from textual.worker import get_current_worker

from warmscope.tui.messages import RecordsLoading, RecordsRead

if TYPE_CHECKING:
    from warmscope.core.data.record import Progress, RecordError
    from warmscope.core.data.run import RunData


class _Cancelled(Exception):
    """The app quit while a record was being read."""


def any_long(items: list[Path | RunData]) -> bool:
    """Whether reading ``items`` takes long enough to show a loading screen over the frame."""
    # the record reader loads after the first frame, with the first record read
    from warmscope.core.data.record import QUICK_READ_BYTES

    return any(isinstance(i, Path) and _size(i) > QUICK_READ_BYTES for i in items)


def read_all(items: list[Path | RunData]) -> list[RunData | RecordError]:
    return [_read(item) for item in items]


def read_in_worker(items: list[Path | RunData], post: Callable[[Message], object]) -> None:
    """In a worker thread: read every record, posting how far it has got (``RecordsLoading``)
    and, at the end, what it read (``RecordsRead``) with ``post`` (the loading screen's)."""
    worker = get_current_worker()
    read: list[RunData | RecordError] = []
    for n, item in enumerate(items, 1):
        what = f"reading {item.name if isinstance(item, Path) else 'a run'} ({n}/{len(items)})"

        def told(fraction: float, what: str = what) -> None:
            if worker.is_cancelled:
                raise _Cancelled
            post(RecordsLoading(what, fraction))

        try:
            read.append(_read(item, told))
        except _Cancelled:
            return
    if not worker.is_cancelled:
        post(RecordsRead(read))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # read_run says what is wrong with it


def _read(item: Path | RunData, progress: Progress | None = None) -> RunData | RecordError:
    # as in any_long: after the first frame
    from warmscope.core.data.record import RecordError, read_run

    if not isinstance(item, Path):
        return item
    try:
        return read_run(item, progress, ms=False)  # the view converts what it shows
    except RecordError as exc:
        return exc
