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
COUNT_WORD = 0
"""The word that holds how many iterations are complete."""


def slot_of(iteration: int, slots: int) -> int:
    """The word index of ``iteration``'s duration; its start offset is the next word."""
    return 1 + 2 * (iteration % slots)


def size_of(slots: int) -> int:
    return (1 + 2 * slots) * WORD


class IterationRing:
    def __init__(self, fd: int, slots: int) -> None:
        self.fd = fd
        self.slots = slots
        self._map: mmap.mmap | None = mmap.mmap(fd, size_of(slots))
        self._words = memoryview(self._map).cast("q")

    @classmethod
    def create(cls, slots: int = SLOTS) -> IterationRing:
        """A zeroed ring in an already-unlinked file: nothing is left on disk, whatever happens."""
        with tempfile.TemporaryFile(prefix="warmscope-ring-") as f:
            fd = os.dup(f.fileno())
        os.ftruncate(fd, size_of(slots))
        return cls(fd, slots)

    def completed(self) -> int:
        return int(self._words[COUNT_WORD]) if self._map is not None else 0

    def read_ns(self, first: int) -> tuple[list[int], list[int]]:
        """Durations and start offsets (integer ns) of iterations ``first`` .. completed - 1."""
        done = self.completed()
        if done - first > self.slots:  # cannot happen with batches within the ring; be safe
            first = done - self.slots
        ns: list[int] = []
        st: list[int] = []
        for i in range(first, done):
            j = slot_of(i, self.slots)
            ns.append(int(self._words[j]))
            st.append(int(self._words[j + 1]))
        return ns, st

    def close(self) -> None:
        if self._map is None:
            return
        self._words.release()
        self._map.close()
        self._map = None
        os.close(self.fd)
