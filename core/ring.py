"""A shared-memory ring of iteration timings: what a crash cannot take away.

The agent sends iterations in batches (every 50 ms), so a child that segfaults or calls
``os._exit`` would take its last unsent iterations with it. It also stores every iteration in
this ring, an anonymous file it shares with the parent by descriptor: a few hundred nanoseconds
a pass, no system call. After the child dies, the parent reads what it had not yet received.
The counter also tells the parent, live, which iteration is running.

Layout: int64 words. Word 0: iterations completed. Then ``slots`` pairs (duration ns, start ns
from the loop's start); iteration ``i`` lives in pair ``i % slots``. The agent flushes batches
well within ``slots`` iterations, so the unsent tail always fits.
"""

from __future__ import annotations

import mmap
import os
import tempfile

SLOTS = 1 << 16
WORD = 8


class IterationRing:
    def __init__(self, fd: int, slots: int) -> None:
        self.fd = fd
        self.slots = slots
        self._map: mmap.mmap | None = mmap.mmap(fd, (1 + 2 * slots) * WORD)
        self._words = memoryview(self._map).cast("q")

    @classmethod
    def create(cls, slots: int = SLOTS) -> IterationRing:
        """A zeroed ring in an already-unlinked file: nothing is left on disk, whatever happens."""
        with tempfile.TemporaryFile(prefix="warmscope-ring-") as f:
            fd = os.dup(f.fileno())
        os.ftruncate(fd, (1 + 2 * slots) * WORD)
        return cls(fd, slots)

    def completed(self) -> int:
        return int(self._words[0]) if self._map is not None else 0

    def read(self, first: int) -> tuple[list[float], list[float]]:
        """Milliseconds and start offsets of iterations ``first`` .. completed - 1."""
        done = self.completed()
        if done - first > self.slots:  # cannot happen with batches within the ring; be safe
            first = done - self.slots
        ms: list[float] = []
        start_ms: list[float] = []
        for i in range(first, done):
            j = 1 + 2 * (i % self.slots)
            ms.append(self._words[j] / 1e6)
            start_ms.append(self._words[j + 1] / 1e6)
        return ms, start_ms

    def close(self) -> None:
        if self._map is None:
            return
        self._words.release()
        self._map.close()
        self._map = None
        os.close(self.fd)
