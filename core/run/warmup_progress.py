"""A warm-up's steps run and told: ``Progress`` (what it is doing, told from the thread that
runs it), the ``StepRunner`` that runs each step's processes (a sweep, or one process alone)
stoppable from any other thread, and the plan and its time in words.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from warmscope.core.run.run_plan import QUICK_GRACE_S
from warmscope.core.run.sweep import Sweep
from warmscope.core.run.warmup_facts import cell_facts, ok_runs


@dataclass
class Progress:
    """What a warm-up is doing, told to ``Warmup.on_progress`` from the thread that runs it: a
    step begins (``cells``: its cells in order; ``propose``: every candidate), or a process of
    ``cell`` started (``facts`` ``None``) or ended (``facts``: its cell's figures so far)."""

    phase: str
    """``plan`` (the processes to come, before the first), ``observe``, ``estimate`` (the
    whole warm-up's time, once the first process has met every shape), ``propose``,
    ``artifact`` (a cache-artifact recipe's one process), ``verify``, ``again`` (a contended
    verification process run once more)."""
    cells: list[str] = field(default_factory=list)
    cell: str = ""
    repeat: int = -1
    facts: dict[str, Any] | None = None
    note: str = ""
    """``plan`` and ``estimate``: the line to show."""


class StepRunner:
    """Runs a warm-up's processes one step at a time and tells its progress; ``stop`` (from
    any thread) ends the process in progress quickly and starts nothing after it: the step
    raises ``KeyboardInterrupt``, as Ctrl-C makes it.

    ``tell``: where progress goes. ``on_done``: each finished process of a sweep, as the
    sweep hands it over. ``on_met``: once, when the first process has called every one of
    ``shapes`` (compiled each), with when it started and how long that took."""

    def __init__(
        self,
        tell: Callable[[Progress], None],
        on_done: Callable[[Sweep, Any], None],
        on_met: Callable[[float, float], None],
        shapes: int,
    ) -> None:
        self.tell = tell
        self.on_done = on_done
        self.on_met = on_met
        self.shapes = shapes
        self.met = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._live: Any = None  # the process in progress: a PlannedRun or a RunSession

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            live = self._live
        if live is not None:
            live.stop(QUICK_GRACE_S)

    def stopped(self) -> bool:
        return self._stop.is_set()

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` once stopped."""
        if self._stop.is_set():
            raise KeyboardInterrupt

    def run_sweep(self, sweep: Sweep, phase: str) -> None:
        """``sweep.run`` with the progress told and a stop honoured between polls."""
        self.check()
        self.tell(Progress(phase, cells=[c.label for c in sweep.cells]))
        started: dict[int, float] = {}

        def update(s: Sweep, n: int, run: Any, news: Any) -> None:
            with self._lock:
                self._live = run
            self.check()  # ``drive`` stops the process, quickly since ``hung_up``
            if n not in started:
                started[n] = time.monotonic()
                c, r = s.plan[n]
                self.tell(Progress(phase, cell=s.cells[c].label, repeat=r))
            elif (
                not self.met
                and news is not None
                and news.first + len(news.ms) >= max(1, self.shapes)
            ):
                # Once the first process has called every shape (compiled each), its time so
                # far is what every process costs: the estimate, before it ends.
                self.met = True
                self.on_met(started[n], time.monotonic() - started[n])

        def done(s: Sweep, process: Any) -> None:
            self.on_done(s, process)
            facts = cell_facts(ok_runs(s, process.cell), s, process.cell)
            label = s.cells[process.cell].label
            self.tell(Progress(phase, cell=label, repeat=process.repeat, facts=facts))
            self.check()  # the sweep ends ``stopped``

        sweep.run(on_update=update, on_done=done, hung_up=self._stop.is_set)
        with self._lock:
            self._live = None
        if sweep.stopped:
            raise KeyboardInterrupt

    def run_alone(self, session: Any) -> None:
        """One ``RunSession`` to its end, stoppable as the sweep's processes are."""
        with self._lock:
            self.check()
            self._live = session
            session.start()
        try:
            session.wait()
        except KeyboardInterrupt:
            session.kill()
            session.wait()
            raise
        finally:
            with self._lock:
                self._live = None
        self.check()


def plan_text(plan: dict[str, int], per_cell: int, twin: bool, mode: str) -> str:
    """``9 processes: 2 observe, 1 makes a cache artifact, 6 verify 3 candidates; each
    compiles: the time once the first has met every shape``."""
    total = plan["observe"] + plan["artifact"] + plan["verify"]
    candidates = plan["verify"] // per_cell // (2 if twin else 1)
    parts = [f"{plan['observe']} observe"]
    if plan["artifact"]:
        parts.append(
            f"{plan['artifact']} make{'s' if plan['artifact'] == 1 else ''} a cache artifact"
        )
    parts.append(f"{plan['verify']} verify {candidates} candidate{'s' if candidates != 1 else ''}")
    text = f"{total} processes: {', '.join(parts)}"
    if plan["yours"]:
        text += (
            f"; {plan['yours']} of them in your own compile cache, which has entries "
            "(--compile-cache cold skips those)"
        )
    if mode == "compile":
        text += "; each compiles: the time once the first has compiled every shape"
    return text


def duration_text(seconds: float) -> str:
    """``3 min 40 s``, ``48 s``: a time as a person plans with it."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"
