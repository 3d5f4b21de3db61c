"""The guardian: ends every process of a run when warmscope itself dies, however it dies.

The agent dies with warmscope (parent-death signal), but what the model started, above all
helpers that escaped with ``setsid`` or a double fork, would not. So each run also starts this
small process (standard library + psutil, no torch) in a session of its own. It waits for EOF
on a pipe whose only write end warmscope holds: EOF comes when warmscope closes it at the end of
the run, or when the kernel closes it because warmscope died (SIGKILL included). Then it ends
every process that carries the run id, and exits.

Run as ``python -m warmscope.core.guardian RUN_ID`` with that pipe as its stdin.
"""

from __future__ import annotations

import os
import sys

from warmscope.core import proctree


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0]:
        print("usage: python -m warmscope.core.guardian RUN_ID", file=sys.stderr)
        return 2
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass  # a broken stdin is as good as EOF: warmscope is gone
    proctree.end_all(argv[0], None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
