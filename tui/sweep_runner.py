"""A sweep started from the TUI: its cells, and core's ``Sweep`` run on a worker thread.

core's ``SweepPlan`` is what the settings screen asks for: N fresh processes of one setting,
or the chosen presets and knob values (the cells, built by core's ``grid`` as ``warmscope
sweep`` builds them). ``SweepRunner`` runs the plan's ``Sweep`` on a thread and keeps what the sweep
screen draws, for the UI thread to take on its own timer: each process as it starts (the app
adopts it as a run of the session, tagged with its cell), its first iteration as soon as it
is measured, and the sweep document after every process. No Textual here.

Stopping (``stop``, from any thread) ends the process in progress gracefully and starts none
after it: the callbacks raise ``KeyboardInterrupt``, which ``Sweep.run`` takes as Ctrl-C, so
the finished processes are kept and the document says ``stopped``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warmscope.core.child import outcome
from warmscope.core.child.knobs import KNOBS
from warmscope.core.child.outcome import UsageError, WarmscopeError
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.sweep_plan import SweepPlan
from warmscope.core.run.ending import one_line

if TYPE_CHECKING:
    from warmscope.core.data.run import LiveRun, Update
    from warmscope.core.data.sweep_state import Process
    from warmscope.core.run.sweep import Sweep


@dataclass
class Started:
    """A process of the sweep that has started: the app adopts it as a run of its session."""

    session: LiveRun
    cell: int
    label: str
    repeat: int


@dataclass
class Point:
    """One process's first iteration, as the chart shows it (``done`` once it ended)."""

    cell: int
    repeat: int
    first_ms: float | None = None
    done: bool = False
    status: str = "running"


@dataclass
class RunnerState:
    """A consistent copy of what the screen draws, taken under the runner's lock."""

    doc: dict[str, Any]
    points: list[Point]
    current: tuple[int, int] | None
    """The cell and repeat of the process in progress."""
    finished: int
    planned: int
    ended: bool
    stopping: bool
    error: str


@dataclass
class SweepRunner:
    """Runs one ``Sweep`` on a thread (``run``); ``state`` and ``take_started`` from the UI."""

    sweep: Sweep
    plan: SweepPlan
    error: str = ""
    ended: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _points: dict[tuple[int, int], Point] = field(default_factory=dict)
    _started: list[Started] = field(default_factory=list)
    _seen: set[int] = field(default_factory=set)
    _live: LiveRun | None = None
    _current: tuple[int, int] | None = None
    _doc: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._doc = self.sweep.document()  # before any process: the cells and the plan

    @property
    def folder(self) -> Path | None:
        return self.sweep.folder

    # -- the worker thread ---------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Every process of the plan (on a worker thread); the final document."""
        try:
            doc = self.sweep.run(
                on_update=self._on_update, on_done=self._on_done, hung_up=self._stop.is_set
            )
            if self.sweep.aborted:
                self.error = self.sweep.aborted
        except (WarmscopeError, OSError) as exc:  # a warming process that failed, a disk full
            self.error = one_line(str(exc) or repr(exc))
            doc = self.sweep.document()
        except Exception as exc:  # whatever ends the sweep is said on its screen, one line
            self.error = one_line(f"{type(exc).__name__}: {exc}")
            doc = self.sweep.document()
        with self._lock:
            self._doc = doc
            self._current = None
            self._live = None
            self.ended = True
            for point in self._points.values():
                if not point.done:
                    point.done, point.status = True, "stopped"
        return doc

    def _on_update(self, sweep: Sweep, n: int, session: Any, update: Update) -> None:
        c, r = sweep.plan[n]
        with self._lock:
            if n not in self._seen:
                self._seen.add(n)
                self._live, self._current = session, (c, r)
                self._points[(c, r)] = Point(c, r)
                self._started.append(Started(session, c, sweep.cells[c].label, r))
            point = self._points[(c, r)]
            if point.first_ms is None and update.first == 0 and len(update.ms):
                point.first_ms = float(update.ms[0])
        if self._stop.is_set():
            raise KeyboardInterrupt  # ``drive`` stops the process: quickly, as ``hung_up``

    def _on_done(self, sweep: Sweep, process: Process) -> None:
        doc = sweep.document()
        data = process.data
        with self._lock:
            point = self._points.setdefault(
                (process.cell, process.repeat), Point(process.cell, process.repeat)
            )
            if point.first_ms is None and data.count:
                point.first_ms = float(data.ms[0])
            point.done, point.status = True, data.status
            self._live, self._current = None, None
            self._doc = doc
        if data.status == outcome.STOPPED:
            self._stop.set()  # stopped from outside (the app quitting, a hang-up): none after it
        if self._stop.is_set():
            raise KeyboardInterrupt  # between two processes: ``Sweep.run`` ends ``stopped``

    # -- any thread ---------------------------------------------------------------------------

    def stop(self) -> None:
        """End the process in progress gracefully; start none after it."""
        # as in make_runner: core's run plans load with the first sweep
        from warmscope.core.run.run_plan import QUICK_GRACE_S

        self._stop.set()
        with self._lock:
            live = self._live
        if live is not None:
            live.stop(QUICK_GRACE_S)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def take_started(self) -> list[Started]:
        """The processes started since the last call, oldest first."""
        with self._lock:
            started, self._started = self._started, []
        return started

    def state(self) -> RunnerState:
        with self._lock:
            return RunnerState(
                doc=self._doc,
                points=[Point(**vars(p)) for p in self._points.values()],
                current=self._current,
                finished=len(self.sweep.processes),
                planned=len(self.sweep.plan),
                ended=self.ended,
                stopping=self._stop.is_set(),
                error=self.error,
            )


def make_runner(settings: RunSettings, plan: SweepPlan, folder: Path | None = None) -> SweepRunner:
    """The sweep of ``plan`` over ``settings``, its cells checked and its folder made now (a bad
    cell or a folder that cannot be made is one line, nothing runs)."""
    # core's sweep (its run plans and digest) loads with the first sweep asked for, not with
    # the settings form that imports this module
    from warmscope.core.run.sweep import Sweep, grid

    if settings.profile_iters:
        # The profiler slows the iterations it profiles: a cold start measured under it is not
        # the cold start (``warmscope sweep`` refuses it too).
        raise UsageError(
            "profiled iterations do not go with repeats or a sweep: p clears them, and a run of "
            "its own profiles"
        )
    cells = grid(settings, plan.presets, plan.varies)
    shared = settings.copy()
    if plan.presets:  # each cell's preset resets the executor knobs: the command leaves them out
        shared.preset = None
        shared.knobs.update({k.name: k.default for k in KNOBS if k.group != "run"})
    word = "sweep" if plan.sweeps else "run"  # one setting repeated: ``run --repeat N``
    command = ["warmscope", word, *shared.command_line()[2:]]
    if plan.presets:
        command += ["--preset", ",".join(plan.presets)]
    for key, values in plan.varies:
        command += ["--vary", f"{key}={','.join(values)}"]
    command += ["--repeat", str(plan.repeat)] + (["--adaptive"] if plan.adaptive else [])
    sweep = Sweep(
        target=settings.target,
        cells=cells,
        repeat=plan.repeat,
        command=command,
        folder=folder,
        adaptive=plan.adaptive,
    )
    sweep.prepare_folder()
    return SweepRunner(sweep, plan)
