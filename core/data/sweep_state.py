"""A sweep's state, as data: its cells, the order of its processes, the processes that
finished, and what the sweep's digest reads of it.

``run.sweep.Sweep`` runs a sweep and is a ``SweepState``; the digest of a sweep
(``output.sweep_digest``, ``output.sweep_hosts``) takes a ``SweepState``, so what is shown
depends on data, never on what runs processes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warmscope.core.child.outcome import UsageError
from warmscope.core.data.racing import MIN_PROCESSES, Race
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings


@dataclass
class Cell:
    """One set of settings the sweep runs ``repeat`` times."""

    label: str
    settings: RunSettings


@dataclass
class Process:
    """One finished process of the sweep, as the sweep digest needs it."""

    cell: int
    repeat: int
    data: RunData
    value: float | None = None
    """The ranking objective's figure (``None``: failed, or none to give)."""
    node: dict[str, Any] | None = None
    """Where it ran, for an executor with several machines (``node_id``, ``hostname``)."""


def schedule(cells: int, repeat: int) -> list[tuple[int, int]]:
    """``(cell, repeat)`` in execution order: every cell once, then every cell again…"""
    return [(c, r) for r in range(repeat) for c in range(cells)]


def parse_rank_by(text: str, iters: int | None) -> tuple[str, int | None]:
    """``first``, ``warmup``, ``steady`` or ``total@K``: the objective and K."""
    if text in ("first", "warmup", "steady"):
        return text, None
    name, at, k = text.partition("@")
    if name == "total" and at and k.isdigit() and int(k) >= 1:
        if iters is not None and int(k) > iters:
            raise UsageError(f"--rank-by {text}: the runs have only {iters} iterations")
        return "total", int(k)
    raise UsageError(f"bad --rank-by {text!r}: first, warmup, steady or total@K")


@dataclass
class SweepState:
    """A sweep as it stands: its cells, the plan of its processes, those that finished, and
    how it ended so far (``sweep.Sweep`` runs it; the sweep digest reads it)."""

    target: str
    cells: list[Cell]
    repeat: int
    rank_by: str = "first"
    command: list[str] = field(default_factory=list)
    folder: Path | None = None
    json_path: Path | None = None
    processes: list[Process] = field(default_factory=list)
    stopped: bool = False
    started: str = ""
    wall_s: float = 0.0
    aborted: str | None = None
    """Why the sweep ended early on a usage error (a bad target found by the child)."""
    warming_s: float = 0.0
    """Time spent in unrecorded processes that fill ``warm`` compile caches."""
    adaptive: bool = False
    """Rounds stop once the answer is decided; ``repeat`` is the cap per cell."""
    min_processes: int = MIN_PROCESSES
    """Processes per cell before an adaptive sweep's first look."""
    executor: Any = None
    """Runs the processes elsewhere (``ray_executor.RayExecutor``, started); ``None``: here,
    one at a time."""
    ran_in: str = field(default_factory=os.getcwd)
    """The folder the sweep ran in: its records' relative paths are from there."""
    given_up: dict[int, str] = field(default_factory=dict)
    """Cells whose processes failed the same way twice, with that failure: the rest of their
    processes are not run (a third would fail it again)."""
    # Made from the fields above (``__post_init__``):
    objective: str = field(init=False)
    """What ranks the cells (``--rank-by``: first, warmup, steady, total)."""
    k: int | None = field(init=False)
    """``total@K``'s K."""
    plan: list[tuple[int, int]] = field(init=False)
    """``(cell, repeat)`` in execution order: the processes that ran, then those still planned
    (an adaptive sweep shortens it as cells drop out)."""
    race: Race = field(init=False)

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise UsageError(f"--repeat must be at least 1, got {self.repeat}")
        if self.min_processes < 1:
            raise UsageError(f"the first look needs at least 1 process, got {self.min_processes}")
        iters = self.cells[0].settings.iters if self.cells else None
        self.objective, self.k = parse_rank_by(self.rank_by, iters)
        self.plan = schedule(len(self.cells), self.repeat)
        self.race = Race(
            len(self.cells), self.repeat, adaptive=self.adaptive, first=self.min_processes
        )

    def values(self) -> list[list[float]]:
        """Each cell's objective figures so far (its finished processes that have one)."""
        out: list[list[float]] = [[] for _ in self.cells]
        for p in self.processes:
            if p.value is not None:
                out[p.cell].append(p.value)
        return out

    @property
    def rounds(self) -> int:
        """Rounds begun: the most processes any cell ran."""
        counts = [0] * len(self.cells)
        for p in self.processes:
            counts[p.cell] += 1
        return max(counts, default=0)
