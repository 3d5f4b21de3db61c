"""``warmscope warmup``: derive a warm-up recipe from what the runs show, verify it, hand it over.

Four steps, each in fresh processes:

- **observe**: the baseline, no recipe, every declared shape served in the serve order;
  where each shape became steady and why its first call was slow (its events).
- **propose**: candidate recipes (``recipe.Recipe``): warm-up calls for each shape (as many as
  the slowest shape took to become steady, plus a margin), settings that remove warm-up work instead (the
  profiling executor off; for compile ``dynamic=True``), a compile-cache artifact.
- **verify**: each candidate's file runs as ``--recipe`` in fresh processes (a ``Sweep``,
  interleaved), serving the shapes in an order its warm-up did not use; per shape the first
  call against that shape's steady p50, a median with a 95% interval across processes.
- **answer**: the cheapest verified recipe by start-up cost, and the table.

With an executor (``--executor ray``) every process of every step is one of its tasks, a whole
node each; the document names each process's node.

The candidates: ``warmup_candidates``; what the processes measured: ``warmup_facts``; the
steps run and told: ``warmup_progress``; the file handed over: ``warmup_handover``. When a shape
passes, and which candidate is chosen: ``warmscope.core.output.warmup_verdict``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from warmscope.core.child import outcome
from warmscope.core.data.record import RecordError, new_folder
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.compile_cache import YOURS, warmup_compile_caches
from warmscope.core.data.sweep_state import Cell, Process
from warmscope.core.data.targets import parse_dim
from warmscope.core.output.recipe import ARTIFACT_SUFFIX, Recipe, dims_text
from warmscope.core.output.warmup_verdict import (
    MAX_RATIO,
    NOT_VERIFIED,
    answer,
    choose,
    contended,
    judge,
)
from warmscope.core.run import compile_cache, remote_target, warmup_candidates
from warmscope.core.run.session import RunSession
from warmscope.core.run.sweep import Sweep
from warmscope.core.run.warmup_candidates import Candidate, Proposer
from warmscope.core.run.warmup_facts import (
    cell_facts,
    load_of,
    observe,
    ok_runs,
    torch_version,
)
from warmscope.core.run.warmup_handover import emitted_text
from warmscope.core.run.warmup_progress import Progress, StepRunner, duration_text, plan_text

FORMAT = "warmscope-warmup"
VERSION = 1
DEFAULT_REPEAT = 6
COMPILE_REPEAT = 2
"""A compile warm-up's processes per cell by default: each compiles (tens of seconds for a
small transformer), so the whole takes a few compile-and-serve processes, not dozens."""
DEFAULT_TOLERANCE_MS = 0.5
"""What a served first call may keep over its steady p50 and still be ``verified within``: a
compiled tiny GPT's first calls, cured of 18 s, kept 140–260 µs over 0.35–0.6 ms calls (1.2–2×)
in warmscope's processes and in plain ones alike; half a millisecond is below what a request
notices, and the verdict names the residual whatever it is."""
SERVES = ("reverse", "cycle", "random")
YOUR_CACHE = " · your cache"
"""A cell measured in the user's own compile cache, beside the cold one the verdicts are on."""


class WarmupFailed(RuntimeError):
    """No recipe can be verified: the baseline itself failed (exit code 1)."""


class UsageAbort(RuntimeError):
    """The child refused the target or its inputs (exit code 2)."""


@dataclass
class Warmup:
    """One ``warmscope warmup``: its settings, folder and each step's results."""

    settings: RunSettings
    serve: str = "reverse"
    repeat: int | None = None
    """Processes per cell; ``None``: ``COMPILE_REPEAT`` for a compile (each process compiles),
    else ``DEFAULT_REPEAT``."""
    folder: Path | None = None
    command: list[str] = field(default_factory=list)
    guard: bool = False
    on_done: Any = None
    on_progress: Callable[[Progress], None] | None = None
    baseline: Sweep | None = None
    verify: Sweep | None = None
    candidates: list[Candidate] = field(default_factory=list)
    started: float = 0.0
    wall_s: float = 0.0
    executor: Any = None
    """Runs every process elsewhere (``ray_executor.RayExecutor``, started); ``None``: here."""
    caches: list[str] = field(default_factory=list)
    """The compile caches measured (``warmup_compile_caches``): the verdicts' first."""
    cache_artifact: bool | None = None
    """A compile candidate that loads a compile-cache artifact saved beside the recipe; ``None``:
    on a GPU only. On a CPU (tiny_gpt over two sizes) its processes started in 20.8 s where
    compiling took 22.4 s, for three more processes: import and tracing remain."""
    tolerance_ms: float = DEFAULT_TOLERANCE_MS
    """``--tolerance``: a first call at most this much over its steady p50 is ``verified
    within`` even beyond ``MAX_RATIO`` (the residual named in the verdict)."""

    def __post_init__(self) -> None:
        if self.serve not in SERVES:
            raise RecordError(f"--serve {self.serve}: one of {', '.join(SERVES)}")
        self.target = remote_target.resolve(self.settings)
        self.mode = self.settings.effective_mode(self.target)
        self.declared = self.settings.shape_plan(self.target)
        self.served = serve_settings(self.settings, self.serve)
        if self.repeat is None:
            self.repeat = COMPILE_REPEAT if self.mode == "compile" else DEFAULT_REPEAT
        self.estimate_s: float | None = None
        self.again: Sweep | None = None
        self.replaced: dict[str | None, Process] = {}
        """A contended verification process's record -> the process that ran it again."""
        self.plan: dict[str, int] = {}
        self.started_at = 0.0
        self.steps = StepRunner(self._tell, self._done, self._estimate, len(self.declared))

    # -- stopping from another thread ------------------------------------------------------

    def stop(self) -> None:
        """From any thread: the process in progress ends quickly (a graceful stop), nothing
        starts after it, and ``run`` raises ``KeyboardInterrupt`` as Ctrl-C makes it."""
        self.steps.stop()
        if self.executor is not None:  # each task stops its child; the sweep ends stopped
            self.executor.cancel(wait_s=0.0)

    def _tell(self, progress: Progress) -> None:
        (self.on_progress or (lambda _p: None))(progress)

    def _done(self, sweep: Sweep, process: Any) -> None:
        if self.on_done is not None:
            self.on_done(sweep, process)

    # -- what it costs ---------------------------------------------------------------------

    @property
    def per_cell(self) -> int:
        """Processes per cell, as resolved from ``repeat``."""
        return self.repeat or DEFAULT_REPEAT

    def plan_text(self) -> str:
        """``9 processes: 2 observe, 1 makes a cache artifact, 6 verify 3 candidates; each
        compiles: the time once the first has met every shape``."""
        return plan_text(self.plan, self.per_cell, self.twin, self.mode)

    def _estimate(self, first_started: float, process_s: float) -> None:
        """The whole warm-up's time from its first process: each process as long as that one
        took to meet every shape (the rest of its calls are steady ones), told once."""
        total = self.plan["observe"] + self.plan["artifact"] + self.plan["verify"]
        before = first_started - self.started_at
        self.estimate_s = before + process_s * total
        self._tell(
            Progress(
                "estimate",
                note=f"about {duration_text(self.estimate_s)} in all: {total} processes, each "
                f"about {duration_text(process_s)} (the first, to its last new shape)",
            )
        )

    def planned_processes(self) -> dict[str, int]:
        """How many processes each step runs, as planned before the first starts:
        ``observe``, ``artifact`` (a cache-artifact recipe's one process), ``verify``, and of
        those the ``yours`` ones (again in the user's own compile cache)."""
        recipes = self.proposer.recipes([])
        twins = 2 if self.twin else 1
        return {
            "observe": self.per_cell * twins,
            "artifact": sum(r.cache_artifact for r in recipes),
            "verify": len(recipes) * self.per_cell * twins,
            "yours": (1 + len(recipes)) * self.per_cell if self.twin else 0,
        }

    # -- the steps -----------------------------------------------------------------------

    def prepare_folder(self) -> Path:
        self.folder = new_folder(self.folder, "warmup", self.settings.target)
        return self.folder

    def choose_caches(self) -> None:
        """A compile is measured on a cold cache, and on the user's own beside it where they
        keep one here (another machine's cache, over ``--host`` or an executor, is not
        looked at)."""
        here = self.executor is None and not self.settings.host and self.mode == "compile"
        yours = (
            here
            and self.settings.compile_cache is None
            and compile_cache.user_has_entries({**os.environ, **self.settings.env})
        )
        self.caches = warmup_compile_caches(self.settings, user_has_entries=bool(yours))
        if self.caches:
            self.served.compile_cache = self.caches[0]

    @property
    def twin(self) -> bool:
        """Every cell measured a second time, in the user's own compile cache."""
        return YOURS in self.caches[1:]

    def with_yours(self, cells: list[Cell]) -> list[Cell]:
        """``cells``, then (``twin``) each again in the user's own compile cache."""
        if not self.twin:
            return cells
        yours = []
        for cell in cells:
            settings = cell.settings.copy()
            settings.compile_cache = YOURS
            yours.append(Cell(cell.label + YOUR_CACHE, settings))
        return cells + yours

    def _sweep(self, cells: list[Cell], folder: str, repeat: int | None = None) -> Sweep:
        assert self.folder is not None
        return Sweep(
            target=self.settings.target,
            cells=cells,
            repeat=self.per_cell if repeat is None else repeat,
            command=self.command,
            folder=self.folder / folder,
            executor=self.executor,
        )

    def run(self) -> dict[str, Any]:
        if self.folder is None or not self.folder.exists():
            self.prepare_folder()
        assert self.folder is not None
        t0 = self.started_at = time.monotonic()
        self.choose_caches()
        self.plan = self.planned_processes()
        self._tell(Progress("plan", note=self.plan_text()))
        observed = self.run_baseline()
        self.steps.check()
        self.candidates = self.propose(observed)
        self._tell(Progress("propose", cells=[c.recipe.label for c in self.candidates]))
        self.make_artifacts()
        self.build_recipes()
        live = [c for c in self.candidates if not c.note]
        if live:
            cells = [Cell(c.recipe.label, self.candidate_settings(c)) for c in live]
            self.verify = self._sweep(self.with_yours(cells), "verify")
            self.steps.run_sweep(self.verify, "verify")
            self.repeat_contended(live)
        self.wall_s = time.monotonic() - t0
        return self.document(observed)

    def run_baseline(self) -> list[dict[str, Any]]:
        """The baseline's processes, no recipe: what each shape showed (``observe``)."""
        self.baseline = self._sweep(self.with_yours([Cell("no recipe", self.served)]), "observe")
        self.steps.run_sweep(self.baseline, "observe")
        if self.baseline.aborted:
            raise UsageAbort(self.baseline.aborted)
        runs = ok_runs(self.baseline)
        if not runs:
            detail = (
                self.baseline.processes[0].data.status_detail if self.baseline.processes else ""
            )
            raise WarmupFailed(
                f"no recipe can be verified: every baseline process failed ({detail}); "
                f"records in {self.folder}"
            )
        return observe(runs)

    @property
    def proposer(self) -> Proposer:
        """What the candidates are made from, as this warm-up stands."""
        return Proposer(
            self.settings,
            self.target,
            self.mode,
            self.declared,
            self.serve,
            guard=self.guard,
            cache_artifact=self.cache_artifact,
        )

    def plan_recipes(self, observed: list[dict[str, Any]]) -> list[Recipe]:
        """The candidate recipes (``Proposer.recipes``), from the baseline once it ran."""
        baseline = ok_runs(self.baseline) if self.baseline is not None else None
        return self.proposer.recipes(observed, baseline)

    def propose(self, observed: list[dict[str, Any]]) -> list[Candidate]:
        """The candidate recipes, written as files in the folder."""
        assert self.folder is not None
        return self.proposer.write(self.plan_recipes(observed), self.folder / "recipes")

    @property
    def cpp(self) -> bool:
        """``--runtime cpp``: the candidates are C++ files, verified in the C++ agent."""
        return self.proposer.cpp

    @property
    def on_gpu(self) -> bool:
        return self.proposer.on_gpu

    def build_recipes(self) -> None:
        """``--runtime cpp``: each candidate's file built (``warmup_candidates.build``)."""
        live = [c for c in self.candidates if not c.note]
        if not self.cpp or not live:
            return
        self._tell(Progress("build"))
        warmup_candidates.build(live, self.settings.python, self.steps.stopped)
        self.steps.check()

    def candidate_settings(self, candidate: Candidate) -> RunSettings:
        return self.proposer.candidate_settings(self.served, candidate)

    def make_artifacts(self) -> None:
        """Run each cache-artifact recipe once, unrecorded in the statistics: it compiles,
        warms up and saves what it compiled beside itself for the verified processes."""
        assert self.folder is not None
        for c in self.candidates:
            if not c.recipe.cache_artifact:
                continue
            settings = self.candidate_settings(c)
            settings.iters, settings.duration, settings.compile_cache = 1, None, "cold"
            self._tell(Progress("artifact", cell=c.recipe.label, repeat=0))
            if self.executor is None:
                session = RunSession(
                    settings, record_path=self.folder / f"{c.path.stem}-artifact.jsonl"
                )
                self.steps.run_alone(session)
                data = session.data
            else:
                data = self._artifact_elsewhere(c, settings)
            artifact = c.path.with_name(c.path.stem + ARTIFACT_SUFFIX)
            if data.status != outcome.OK:
                error = data.error
                why = str(error["message"]) if error else data.status_detail
                c.note = f"the process that writes its artifact {data.status}: {why}"
            elif not artifact.exists():
                c.note = "torch saved no cache artifact (nothing compiled, or no artifact support)"

    def _artifact_elsewhere(self, c: Candidate, settings: RunSettings) -> RunData:
        """The artifact's process as a one-process sweep on the executor, not here: the
        artifact is compiled code for the machine that compiles it, so it is made on a node,
        as the verified processes that load it run on nodes (and the machine that runs
        warmscope may have no GPU, or another torch). The executor ships the recipe and brings
        back the artifact it saved, beside the local recipe, from where each verification
        task takes it."""
        self.steps.check()
        sweep = self._sweep([Cell(c.recipe.label, settings)], f"{c.path.stem}-artifact", 1)
        sweep.run(hung_up=self.steps.stopped)
        if sweep.stopped or not sweep.processes:
            raise KeyboardInterrupt
        self.steps.check()
        c.artifact_node = sweep.processes[0].node
        return sweep.processes[0].data

    def repeat_contended(self, live: list[Candidate]) -> None:
        """A verification process out of bound while other processes kept the machine's cores
        busy measured them, not the recipe: each such process runs once more, and its figures
        replace the contended one's (which the document keeps, named). Once: a machine busy
        throughout gives the verdict it gives."""
        assert self.verify is not None and self.folder is not None
        redo: list[tuple[int, Process]] = []
        for index in range(len(live)):
            runs = ok_runs(self.verify, index)
            found = contended(cell_facts(runs, self.verify, index))
            redo.extend(
                (index, p)
                for p in self.verify.processes
                if p.cell == index and p.data.record_path in found
            )
        if not redo:
            return
        cells = [
            Cell(f"{live[i].recipe.label} · again", self.candidate_settings(live[i]))
            for i, _ in redo
        ]
        self.again = self._sweep(cells, "verify-again", 1)
        self.steps.run_sweep(self.again, "again")
        for n, (index, old) in enumerate(redo):
            new = next((p for p in self.again.processes if p.cell == n), None)
            if new is not None:
                self.replaced[old.data.record_path] = Process(
                    index, old.repeat, new.data, new.value, new.node
                )

    def verified_processes(self, index: int) -> Any:
        """Candidate ``index``'s processes as the verdict counts them: each contended one
        replaced by its repeat (a sweep-shaped view for ``cell_facts``)."""
        assert self.verify is not None
        processes = [
            self.replaced.get(p.data.record_path, p)
            for p in self.verify.processes
            if p.cell == index
        ]
        return SimpleNamespace(processes=processes)

    # -- the document -----------------------------------------------------------------------

    def document(self, observed: list[dict[str, Any]]) -> dict[str, Any]:
        assert self.baseline is not None and self.folder is not None
        base_runs = ok_runs(self.baseline)
        baseline = cell_facts(base_runs, self.baseline, None)
        live = [c for c in self.candidates if not c.note]
        cands = [self._candidate_entry(c, live, baseline) for c in self.candidates]
        chosen = choose(cands)
        doc: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "target": self.settings.target,
            "command": self.command,
            "executor": getattr(self.executor, "name", "local"),
            "mode": self.mode,
            "serve": self.serve,
            "served_order": [dims_text(d) for d in self.served.shape_plan(self.target)],
            "repeat": self.per_cell,
            "iters": self.settings.iters,
            "max_ratio": MAX_RATIO,
            "compile_cache": self.caches[0] if self.caches else None,
            "wall_s": round(self.wall_s, 3),
            "estimate_s": None if self.estimate_s is None else round(self.estimate_s, 3),
            "planned_processes": self.plan,
            "folder": str(self.folder),
            "observed": observed,
            "baseline": baseline,
            "candidates": cands,
            "chosen": None if chosen is None else chosen["label"],
            "verdict": chosen["verdict"] if chosen else NOT_VERIFIED,
            "tolerance_ms": self.tolerance_ms,
            "torch": torch_version(ok_runs(self.verify) if self.verify else base_runs),
            "runtime": "cpp" if self.cpp else "python",
        }
        if self.twin:
            mine = ok_runs(self.baseline, 1)
            doc["your_cache"] = {
                "baseline": cell_facts(mine, self.baseline, 1),
                "observed": observe(mine),
            }
        if chosen is not None:
            doc["recipe"] = {
                "label": chosen["label"],
                "file": chosen["file"],
                "text": Path(chosen["file"]).read_text(encoding="utf-8"),
            }
        doc["answer"] = answer(doc, chosen, baseline)
        if chosen is not None:  # the file as handed over: its header states the verdict
            doc["recipe"]["text"] = emitted_text(doc, chosen, doc["runtime"])
        return doc

    def _candidate_entry(
        self, c: Candidate, live: list[Candidate], baseline: dict[str, Any]
    ) -> dict[str, Any]:
        """A candidate as the document has it: its recipe, and its verified figures and
        verdict (or why it was not verified)."""
        entry: dict[str, Any] = {
            "label": c.recipe.label,
            "summary": c.recipe.summary(),
            "file": str(c.path),
            "recipe": c.recipe.to_json(),
        }
        if c.artifact_node is not None:
            entry["artifact_node"] = c.artifact_node
        if c.note:
            entry.update(verdict=NOT_VERIFIED, why=c.note, processes=[], cured=[])
            return entry
        assert self.verify is not None
        index = live.index(c)
        view = self.verified_processes(index)
        runs = [p.data for p in view.processes]
        facts = cell_facts([r for r in runs if r.status == outcome.OK], view, index)
        entry.update(facts)
        entry.update(judge(facts, baseline, self.tolerance_ms))
        entry["contended"] = [
            {
                "record": old,
                "load": load_of(self.verify, old),
                "again": p.data.record_path,
            }
            for old, p in self.replaced.items()
            if p.cell == index
        ]
        if self.twin:
            yours = index + len(live)
            entry["your_cache"] = cell_facts(ok_runs(self.verify, yours), self.verify, yours)
        return entry


def serve_settings(settings: RunSettings, serve: str) -> RunSettings:
    """The settings that serve every declared shape in the ``serve`` order."""
    served = settings.copy()
    # Traffic brings new tensors: a first call's input is new, so every call's is (else the
    # steady p50 would be measured on inputs already in the caches, the first call not).
    served.fresh_inputs = True
    if serve == "random":
        served.schedule = "random"
    else:
        served.schedule = "cycle"
    if serve == "reverse":
        dims = []
        for text in settings.dims:
            name, sizes = parse_dim(text)
            dims.append(f"{name}={','.join(str(v) for v in reversed(sizes))}")
        served.dims = dims
    return served
