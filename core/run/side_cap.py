"""The child's stderr side file, kept up to a cap: a model that floods its stderr (a megabyte
a pass) cannot fill the disk. Past the cap, lines are dropped; the session records the cut
as an event and in the run's detail.
"""

from __future__ import annotations

from typing import BinaryIO

STDERR_CAP_BYTES = 64 << 20
"""The most of the child's stderr kept beside the record."""


def cut_note(cap: int = STDERR_CAP_BYTES) -> str:
    return f"stderr cut at {cap >> 20} MiB: later lines were not kept"


class CappedFile:
    """A side file that takes ``cap`` bytes and drops the rest."""

    def __init__(self, file: BinaryIO, cap: int = STDERR_CAP_BYTES) -> None:
        self.file = file
        self.cap = cap
        self.written = 0
        self.cut = False

    def write(self, text: bytes) -> bool:
        """Write what fits; True once, when this write reached the cap."""
        if self.cut:
            return False
        room = self.cap - self.written
        reached = len(text) > room
        if reached:
            text, self.cut = text[:room], True
        self.written += len(text)
        self.file.write(text)
        return reached

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()
