"""The guardian: ends every process of a run when warmscope itself dies, however it dies.

The agent dies with warmscope (parent-death signal), but what the model started, above all
helpers that escaped with ``setsid`` or a double fork, would not. So each run also starts this
small process (standard library + psutil, no torch) in a session of its own. It waits for EOF
on a pipe whose only write end warmscope holds: EOF comes when warmscope closes it at the end of
the run, or when the kernel closes it because warmscope died (SIGKILL included). Then it ends
every process that carries the run id, and exits.

Run as ``python -m warmscope.core.run.guardian RUN_ID [CGROUP] [--also PID:START]`` with that
pipe as its stdin; ``Guardian`` starts and stops it from the run's side. ``--also`` names a
process of the run outside its id (the ``ssh`` of a ``--host`` run, which must not carry it):
its process group is ended too, if it is still the process that started then.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from warmscope.core.run import proctree
from warmscope.core.run.cgroup import RunCgroup


class Guardian:
    """The run's side: the guardian process and the write end of its pipe."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._pipe = -1

    def start(self, run_id: str, cgroup: Path | None = None, also: int | None = None) -> None:
        read_end, write_end = os.pipe()
        os.set_inheritable(write_end, False)
        env = {k: v for k, v in os.environ.items() if k != proctree.RUN_ID_VAR}
        extra = [str(cgroup)] if cgroup is not None else []
        if also is not None:
            with contextlib.suppress(psutil.Error):
                extra += ["--also", f"{also}:{psutil.Process(also).create_time()!r}"]
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "warmscope.core.run.guardian", run_id, *extra],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # out of the terminal's reach: Ctrl-C, SIGHUP
                close_fds=True,
            )
        except OSError:
            os.close(write_end)  # the run goes on; only a SIGKILL of warmscope would leak
        else:
            self._pipe = write_end
        finally:
            os.close(read_end)

    def stop(self) -> None:
        """The run is over: the guardian ends what is left of it, and exits."""
        if self._proc is None:
            return
        with contextlib.suppress(OSError):
            os.close(self._pipe)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(5)
        self._proc = None


def end_also(spec: str) -> None:
    """``PID:START``: that process's group ended, where it is still the process started then
    (a pid is reused once its process is reaped)."""
    pid, _, start = spec.partition(":")
    with contextlib.suppress(psutil.Error, ValueError, OSError):
        proc = psutil.Process(int(pid))
        if proc.create_time() != float(start):
            return
        if os.getpgid(proc.pid) == proc.pid:  # ssh leads a session: its helpers go with it
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()


def main(argv: list[str]) -> int:
    also = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--also"]
    argv = [a for i, a in enumerate(argv) if a != "--also" and (i == 0 or argv[i - 1] != "--also")]
    if len(argv) not in (1, 2) or not argv[0]:
        print(
            "usage: python -m warmscope.core.run.guardian RUN_ID [CGROUP] [--also PID:START]",
            file=sys.stderr,
        )
        return 2
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass  # a broken stdin is as good as EOF: warmscope is gone
    for spec in also:
        end_also(spec)
    if len(argv) == 2:  # the run's cgroup: every process in it, whatever its environment
        RunCgroup(Path(argv[1])).end()
    proctree.end_all(argv[0], None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
