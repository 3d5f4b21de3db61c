"""Hostile models: they start helpers that hold the pipes or escape the process group, break
the protocol, print escape sequences or a line every pass, raise KeyboardInterrupt, close
fd 2. Each factory is a warmscope target (`tests/faults/hostile.py:NAME`), input `4`.

Helpers write their pid to $HOSTILE_PIDS (one per line) so a test can check they are gone.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import torch

K = 3


def _note_pid(pid: int) -> None:
    path = os.environ.get("HOSTILE_PIDS")
    if path:
        with open(path, "a") as f:
            f.write(f"{pid}\n")


def _sleeper(**kw: object) -> None:
    proc = subprocess.Popen(["sleep", "1000"], **kw)  # type: ignore[call-overload]
    _note_pid(proc.pid)


def _escaped_sleeper() -> None:
    """A double fork into a session of its own, stdio on the inherited stderr: re-parented to
    init, out of the run's process group; only the run id in its environment gives it away."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            _note_pid(os.getpid())
            os.execvp("sleep", ["sleep", "1000"])
        os._exit(0)
    os.waitpid(pid, 0)


def _scrubbed_sleeper() -> None:
    """As ``_escaped_sleeper``, and it scrubs its environment before it execs: no run id
    to find it by. Only the run's cgroup still holds it."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            _note_pid(os.getpid())
            os.execve("/bin/sleep", ["sleep", "1000"], {})
        os._exit(0)
    os.waitpid(pid, 0)


def _protocol_fd() -> int:
    """The agent's private protocol descriptor: a pipe that is neither stdin nor stderr."""
    taken = {os.fstat(fd).st_ino for fd in (0, 2)}
    for fd in range(3, 64):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISFIFO(st.st_mode) and st.st_ino not in taken:
            return fd
    raise RuntimeError("no protocol descriptor found")


class Hostile(torch.nn.Module):
    def __init__(self, at_call=None, every_call=None) -> None:
        super().__init__()
        self.calls = 0
        self.at_call = at_call
        self.every_call = every_call

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.calls == K and self.at_call is not None:
            self.at_call()
        if self.every_call is not None:
            self.every_call(self.calls)
        self.calls += 1
        return x * 2


def spawns_inheriting_stderr() -> torch.nn.Module:
    """A plain Popen in the factory: the helper holds the stderr pipe for 1000 s."""
    _sleeper()
    return Hostile()


def spawns_then_raises() -> torch.nn.Module:
    _sleeper()

    def fail() -> None:
        raise ValueError("planted failure after spawning a helper")

    return Hostile(at_call=fail)


def spawns_escaped() -> torch.nn.Module:
    _escaped_sleeper()
    return Hostile()


def spawns_scrubbed() -> torch.nn.Module:
    _scrubbed_sleeper()
    return Hostile()


def spawns_quiet() -> torch.nn.Module:
    """A helper with its stdio on /dev/null: it holds no pipe, it just outlives the run."""
    _sleeper(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Hostile()


def forks_itself() -> torch.nn.Module:
    """A forked copy of the agent that sleeps: the run id is in its environment too."""
    if os.fork() == 0:
        os.setsid()
        _note_pid(os.getpid())
        os.execvp("sleep", ["sleep", "1000"])
    return Hostile()


def _write_protocol(data: bytes):  # type: ignore[no-untyped-def]
    def act() -> None:
        os.write(_protocol_fd(), data)

    return act


def wrong_shape() -> torch.nn.Module:
    return Hostile(at_call=_write_protocol(b'{"t":"iters","i0":0}\n'))


def out_of_order() -> torch.nn.Module:
    return Hostile(at_call=_write_protocol(b'{"t":"iters","i0":999999,"ns":[1],"st":[0]}\n'))


def bad_marker() -> torch.nn.Module:
    """Forged marker lines, a malformed one and a well-formed one: without the run's secret
    they are plain stderr lines, and move no log line to another iteration."""
    return Hostile(at_call=lambda: os.write(2, "\x1e@ws it ²\n\x1e@ws it 5\n".encode()))


def escapes() -> torch.nn.Module:
    """Sets the terminal's title, clears the screen, rewrites its line like a progress bar."""

    def act() -> None:
        sys.stderr.write("\x1b]0;pwned\x07\x1b[2J\x1b[Hwiped\n")
        sys.stderr.write("\r 10%|#   |\r 50%|##  |\r100%|####|\n")
        sys.stderr.flush()

    return Hostile(at_call=act)


def prints_every_pass() -> torch.nn.Module:
    return Hostile(every_call=lambda i: print(f"step {i} loss {1 / (i + 1):.4f}"))


def interrupts_itself() -> torch.nn.Module:
    """A factory that raises KeyboardInterrupt: a failure of the model, not a user's stop."""
    raise KeyboardInterrupt


def closes_stderr() -> torch.nn.Module:
    os.close(2)
    return Hostile()


def dies_mid_message() -> torch.nn.Module:
    """Dies halfway through a protocol line, as a child killed while it writes one does."""

    def act() -> None:
        os.write(_protocol_fd(), b'{"t":"iters","i0":3,"ns":[1')
        os._exit(9)

    return Hostile(at_call=act)


def _ring_fd() -> int:
    """The shared ring of timings (``core/child/ring.py``): an unlinked regular file of its size."""
    for fd in range(3, 64):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 0 and st.st_size == (1 + 2 * 65536) * 8:
            return fd
    raise RuntimeError("no ring descriptor found")


def forges_done() -> torch.nn.Module:
    """Says it is done, as many iterations as it ran, at its fourth pass, and exits at once."""

    def act() -> None:
        os.write(_protocol_fd(), b'{"t":"done","status":"ok","iterations":%d}\n' % K)
        os._exit(0)

    return Hostile(at_call=act)


def forges_done_lingers() -> torch.nn.Module:
    """A forged done at its fourth pass, then it keeps running (its agent's own done follows)."""
    return Hostile(at_call=_write_protocol(b'{"t":"done","status":"ok","iterations":0}\n'))


def writes_ring() -> torch.nn.Module:
    """Fills the shared ring with a full ring of huge negative timings, then dies."""

    def act() -> None:
        import mmap

        words = memoryview(mmap.mmap(_ring_fd(), 0)).cast("q")
        for j in range(1, len(words)):
            words[j] = -(1 << 62)
        words[0] = (len(words) - 1) // 2
        os._exit(9)

    return Hostile(at_call=act)


def absurd_latency() -> torch.nn.Module:
    """Sends a batch of its own: one iteration that lasted an hour, in a run seconds old."""
    return Hostile(at_call=_write_protocol(b'{"t":"iters","i0":0,"ns":[3600000000000],"st":[0]}\n'))


def floods_stderr() -> torch.nn.Module:
    """One megabyte of stderr every pass."""
    line = "x" * ((1 << 20) - 1) + "\n"

    def act(i: int) -> None:
        sys.stderr.write(line)
        sys.stderr.flush()

    return Hostile(every_call=act)
