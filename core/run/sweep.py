"""``warmscope sweep`` and ``run --repeat``: cells × fresh processes, interleaved, one document.

A *cell* is one set of settings (a preset, knob values from ``--vary``, or both). Each cell
runs ``repeat`` times, each time in a fresh process with its own record, and the processes
are interleaved (A B A B …, not A A B B) so that drift on a shared machine spreads over every
cell. After every process the sweep document is written again: a sweep stopped half way (or
killed) keeps every finished process, and its document says ``"stopped": true``.

An *adaptive* sweep (``--adaptive``; ``repeat`` is then the cap per cell) looks after each
round from the third on: a cell beyond noise worse than the best is dropped from further
rounds, and the sweep stops once one cell is left, beyond noise better than every other
(``racing``: exact rank tests whose error budget is split over the looks).

The statistics across processes and the answer are computed in ``sweep_digest`` (the digest
of a sweep); the CLI, ``compare`` and ``report`` only lay them out.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from warmscope.core.base.files import atomic_write
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.record import new_folder
from warmscope.core.data.run import RunData, Update
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.compile_cache import compile_cache_mode, compiles
from warmscope.core.data.sweep_schema import MAX_CELLS
from warmscope.core.data.sweep_state import Cell, Process, SweepState
from warmscope.core.output.settings_diff import settings_line
from warmscope.core.output.sweep_digest import process_facts, sweep_document
from warmscope.core.output.sweep_stats import objective_metric
from warmscope.core.run import remote_target
from warmscope.core.run.ray_executor import data_from_lines
from warmscope.core.run.run_plan import PlannedRun, drive, start_run, warm_cache


def grid(
    base: RunSettings,
    presets: Sequence[str],
    varies: Sequence[tuple[str, Sequence[str]]],
) -> list[Cell]:
    """The sweep's cells, for the command line and the TUI alike: every preset applied to
    ``base`` (``RunSettings.apply_preset``: its knobs, the others as ``base`` has them) ×
    every combination of the varied knobs' values, in the order given; without presets or
    varied knobs, ``base`` alone. Each cell's compile cache is a repeated process's."""
    cells = []
    chosen: list[str | None] = list(presets) or [None]
    for preset in chosen:
        for combo in itertools.product(*[[(k, v) for v in vs] for k, vs in varies]):
            settings = base.copy()
            if preset is not None:
                settings.apply_preset(preset)
            for key, value in combo:
                settings.set(f"{key}={value}")
            parts = [preset] if preset else []
            parts += [f"{k}={v}" for k, v in combo]
            label = " ".join(parts) or settings_line(settings.to_json())
            cells.append(Cell(label, settings))
    if len(cells) > MAX_CELLS:
        raise UsageError(f"the sweep has {len(cells)} cells; at most {MAX_CELLS}")
    for cell in cells:
        cell.settings.compile_cache = compile_cache_mode(cell.settings, repeated=True)
    return cells


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "-", text).strip("-")[:60] or "cell"


class Sweep(SweepState):
    """Runs the cells' processes, interleaved; writes the document after each one."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for cell in self.cells:
            remote_target.resolve(cell.settings)  # every cell is checked before any process runs

    def _look(self, n: int) -> bool:
        """After process ``n`` of the plan: at the end of a round, an adaptive sweep's look.
        True when the answer is decided (the sweep stops)."""
        r = self.plan[n][1]
        if not self.adaptive or (n + 1 < len(self.plan) and self.plan[n + 1][1] == r):
            return False
        dropped = self.race.look(r + 1, self.values())
        if self.race.decided:
            self.plan = self.plan[: n + 1]
        elif dropped:
            later = [
                (cell, rr)
                for rr in range(r + 1, self.repeat)
                for cell in self.race.live
                if cell not in self.given_up
            ]
            self.plan = self.plan[: n + 1] + later
        return self.race.decided

    def _give_up(self, process: Process, keep: int) -> None:
        """Where the cell of a process that just finished has now failed the same way twice,
        its processes after the plan's first ``keep`` (those not started) leave the plan."""
        c, data = process.cell, process.data
        if data.status == outcome.OK or self.stopped or c in self.given_up:
            return
        same = [
            p
            for p in self.processes
            if p.cell == c
            and (p.data.status, p.data.status_detail) == (data.status, data.status_detail)
        ]
        if len(same) >= 2:
            self.given_up[c] = (
                f"{data.status}: {data.status_detail}" if data.status_detail else data.status
            )
            self.plan = self.plan[:keep] + [x for x in self.plan[keep:] if x[0] != c]

    def prepare_folder(self) -> Path:
        """A new folder for the sweep's records and document (never one that exists)."""
        self.folder = new_folder(self.folder, "sweep", self.target)
        return self.folder

    @property
    def document_path(self) -> Path:
        assert self.folder is not None
        return self.folder / "sweep.json"

    def run(
        self,
        on_update: Callable[[Sweep, int, Any, Update], None] | None = None,
        on_done: Callable[[Sweep, Process], None] | None = None,
        hung_up: Callable[[], bool] | None = None,
    ) -> dict[str, Any]:
        """Every process of the plan, interleaved (an adaptive sweep: until decided or at its
        cap). Ctrl-C (``KeyboardInterrupt``) stops the process in progress (quickly once
        ``hung_up()``), keeps what finished, and ends the sweep ``stopped``. ``on_update(sweep,
        n, run, update)``: the n-th process of ``plan`` goes on; ``on_done(sweep, process)``:
        it finished (an adaptive sweep's look, if its round ended, is already taken)."""
        if self.folder is None or not self.folder.exists():
            self.prepare_folder()
        assert self.folder is not None
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        if self.executor is not None:
            return self._run_elsewhere(on_done)
        t0 = time.monotonic()
        warm: dict[int, Path] = {}
        try:
            n = -1
            while n + 1 < len(self.plan):  # an adaptive sweep shortens the plan as it goes
                n += 1
                c, r = self.plan[n]
                cell = self.cells[c]
                if (
                    cell.settings.compile_cache == "warm"
                    and c not in warm
                    and compiles(cell.settings)
                ):
                    tw = time.monotonic()
                    warm[c] = warm_cache(cell.settings, self.folder)  # once per cell
                    self.warming_s += time.monotonic() - tw
                path = self.folder / f"c{c}-{_slug(cell.label)}-r{r}.jsonl"
                session = start_run(
                    cell.settings,
                    record_path=path,
                    command=[*self.command, f"# cell {c} repeat {r}"],
                    warmed=warm.get(c),
                )

                def show(update: Update, n: int = n, session: PlannedRun = session) -> None:
                    if on_update is not None:
                        on_update(self, n, session, update)

                if drive(session, on_update=show if on_update else None, hung_up=hung_up):
                    self.stopped = True
                process = Process(c, r, session.data, objective_value(session.data, self))
                self.processes.append(process)
                self._give_up(process, n + 1)
                self.wall_s = time.monotonic() - t0
                decided = not self.stopped and self._look(n)
                self.save()
                if on_done is not None:
                    on_done(self, process)
                if session.data.exit_code == outcome.EXIT_USAGE:
                    # A target or input the child refused: every other process would too.
                    error = session.data.error
                    self.aborted = str(error["message"] if error else session.data.status_detail)
                    break
                if self.stopped or decided:
                    break
        except KeyboardInterrupt:  # between two processes
            self.stopped = True
        finally:
            self.wall_s = time.monotonic() - t0
            for folder in warm.values():
                shutil.rmtree(folder, ignore_errors=True)
            self.save()
        return self.document()

    def record_path(self, c: int, r: int) -> Path:
        assert self.folder is not None
        return self.folder / f"c{c}-{_slug(self.cells[c].label)}-r{r}.jsonl"

    def _run_elsewhere(self, on_done: Callable[[Sweep, Process], None] | None) -> dict[str, Any]:
        """The plan on the executor's machines, one process per free machine, handed out in
        the plan's order. An adaptive sweep starts a round only once the round before it is
        looked at (every process of it finished). Looks are taken in the plan's order whatever
        order the processes finish in. Each machine's compile cache is its own: a ``warm``
        cell warms it in each process's own plan."""
        executor = self.executor
        t0 = time.monotonic()
        done: dict[int, Process] = {}

        def take(finished: Any) -> Process:
            c, r = self.plan[finished.n]
            data = data_from_lines(self.record_path(c, r), self.cells[c].settings, finished)
            process = Process(c, r, data, objective_value(data, self), finished.node)
            self.processes.append(process)
            self._give_up(process, submitted)
            self.wall_s = time.monotonic() - t0
            return process

        submitted = 0
        looked = 0  # the plan's processes looked at so far, in order
        try:
            while True:
                while (
                    not self.stopped
                    and submitted < len(self.plan)
                    and executor.free()
                    and (
                        not self.adaptive
                        or looked >= len(self.plan)
                        or self.plan[submitted][1] <= self.plan[looked][1]
                    )
                ):
                    c, r = self.plan[submitted]
                    executor.submit(
                        submitted,
                        c,
                        self.cells[c].settings,
                        self.record_path(c, r),
                        [*self.command, f"# cell {c} repeat {r}"],
                    )
                    submitted += 1
                if not executor.running:
                    break
                finished = executor.next_finished()
                if finished is None:
                    continue
                process = take(finished)
                done[finished.n] = process
                decided = False
                while looked in done and not decided:
                    decided = self._look(looked)
                    looked += 1
                self.save()
                if on_done is not None:
                    on_done(self, process)
                if process.data.exit_code == outcome.EXIT_USAGE:
                    # A target or input the child refused: every other process would too.
                    error = process.data.error
                    self.aborted = str(error["message"] if error else process.data.status_detail)
                if decided or self.aborted:
                    break
        except KeyboardInterrupt:
            self.stopped = True
        finally:
            if executor.running:
                executor.cancel()  # each task stops its child; what they sent is kept
                while (finished := executor.next_finished(0.0)) is not None:
                    take(finished)
            self.wall_s = time.monotonic() - t0
            self.save()
        return self.document()

    def document(self) -> dict[str, Any]:
        return sweep_document(self)

    def save(self) -> None:
        """The document, in the sweep's folder and at ``--json``; each write is atomic."""
        text = json.dumps(self.document(), indent=1, default=str) + "\n"
        if self.folder is not None and self.folder.exists():
            atomic_write(self.document_path, text, parents=False)
        if self.json_path is not None:
            atomic_write(self.json_path, text, parents=False)


def objective_value(data: RunData, sweep: Sweep) -> float | None:
    """A finished process's figure on the sweep's ranking objective."""
    if data.status != outcome.OK:
        return None
    value = process_facts(data, sweep.k).get(objective_metric(sweep.objective))
    return float(value) if isinstance(value, (int, float)) else None
