"""Starting processes at the priority warmscope started with, after its UI lowered its own.

Linux keeps a nice value per thread, and a new process takes the nice value of the thread that
forks it. The TUI runs nicer than the child it measures (the UI waits, the child is measured),
and nice values cannot be lowered again without privileges: so children are started by one
thread that keeps the original priority, created before the UI lowers its own.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import threading
from concurrent.futures import Future
from typing import Any

OBSERVER_NICE = 10
"""warmscope's own threads (the UI, the reader, the sampler) run this much nicer than the child:
they wait, it is measured."""

OBSERVER_CPUS_FROM = 4  # with fewer CPUs the child keeps them all

_requests: queue.SimpleQueue[tuple[Future[subprocess.Popen[bytes]], Any, Any]] | None = None
base_nice: int | None = None
"""The nice value warmscope started with, once ``lower_own_priority`` ran; else ``None``."""
ui_nice = 0
"""How much nicer than that the UI runs: what ``lower_own_priority`` applied."""


def lower_own_priority(by: int) -> int:
    """Keep a launcher thread at today's priority, then make the calling thread (and the
    threads it starts from now on) ``by`` nicer. The nice value applied: 0 where it could
    not be (not Linux: nice is per process there, and the children would inherit it)."""
    global _requests, base_nice, ui_nice
    if not hasattr(os, "sched_getaffinity") or _requests is not None:
        return 0  # not Linux, or done already
    base_nice = os.nice(0)
    _requests = queue.SimpleQueue()
    threading.Thread(
        target=_serve, args=(_requests,), name="warmscope-launcher", daemon=True
    ).start()
    try:
        os.nice(by)
    except OSError:
        return 0
    ui_nice = by
    return by


def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen``, from the launcher thread when there is one."""
    if _requests is None:
        return subprocess.Popen(*args, **kwargs)
    done: Future[subprocess.Popen[bytes]] = Future()
    _requests.put((done, args, kwargs))
    return done.result()


def nicer_than_start(by: int) -> None:
    """Make the calling thread ``by`` nicer than warmscope started (not ``by`` more than it is
    now: a thread started by an already lowered UI is there already)."""
    start = os.nice(0) if base_nice is None else base_nice
    with contextlib.suppress(OSError):
        now = os.nice(0)
        if now < start + by:
            os.nice(start + by - now)


def observe(cpus: list[int] | None) -> None:
    """In a thread of warmscope's: lower its priority, and keep it to the observer's CPUs."""
    nicer_than_start(OBSERVER_NICE)  # on Linux: this thread only
    if cpus:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setaffinity(0, cpus)  # 0: this thread


def _serve(requests: queue.SimpleQueue[tuple[Future[subprocess.Popen[bytes]], Any, Any]]) -> None:
    while True:
        done, args, kwargs = requests.get()
        try:
            done.set_result(subprocess.Popen(*args, **kwargs))
        except BaseException as exc:  # handed to the caller, raised there
            done.set_exception(exc)


def place_observer(child_pid: int) -> dict[str, Any]:
    """Keep warmscope's own threads out of the measured child's way: where the machine has
    the cores, the child gets all but one CPU and the observer's threads the last one
    (they inherit it from here, as the child's threads inherit its set). The reader and
    the sampler also lower their own priority (``OBSERVER_NICE``) as they start. What was
    done goes into the record."""
    placed: dict[str, Any] = {"nice": OBSERVER_NICE}
    if ui_nice:
        placed["ui_nice"] = ui_nice  # the TUI lowered its own threads as well
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return placed
    if len(cpus) >= OBSERVER_CPUS_FROM:
        child, observer = cpus[:-1], cpus[-1:]
        try:
            os.sched_setaffinity(child_pid, child)
            placed["child_cpus"], placed["observer_cpus"] = child, observer
        except OSError as exc:
            placed["affinity_error"] = str(exc)
    else:
        placed["affinity"] = f"not set: {len(cpus)} CPUs, the child needs them all"
    return placed
