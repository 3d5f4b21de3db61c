"""Whether a live run is writing a record: its writer holds the record's ``flock`` as long as
the run goes on (``record``), and whoever reads the record asks (``reading``)."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path


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
