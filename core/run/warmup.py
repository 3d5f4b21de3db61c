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

When a shape passes, and which candidate is chosen: ``warmscope.core.output.warmup_verdict``.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from warmscope.core.base.files import atomic_write, copy_beside
from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.base.units import num3
from warmscope.core.child import outcome
from warmscope.core.child.knobs import KNOB_BY_NAME, KNOBS, SERVER, STATEMENT, compile_options
from warmscope.core.child.outcome import UsageError
from warmscope.core.data import env_keys
from warmscope.core.data.cpp_runtime import is_cpp
from warmscope.core.data.intervals import median_interval
from warmscope.core.data.record import RecordError, new_folder
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.compile_cache import YOURS, warmup_compile_caches
from warmscope.core.data.sweep_state import Cell, Process
from warmscope.core.data.targets import parse_dim
from warmscope.core.output.recipe import (
    ARTIFACT_SUFFIX,
    Call,
    Provenance,
    Recipe,
    dims_text,
    dynamic_marks,
    emit_python,
    split_header,
)
from warmscope.core.output.recipe_cpp import CppRecipeError, emit_cpp
from warmscope.core.output.sweep_stats import stat_json
from warmscope.core.output.verdicts import other_load
from warmscope.core.output.warmup_verdict import (
    MAX_RATIO,
    NOT_VERIFIED,
    answer,
    choose,
    contended,
    cured_text,
    judge,
)
from warmscope.core.output.warmup_verdict import worst_shape as worst_shape
from warmscope.core.run import compile_cache, cpp_build, remote_target
from warmscope.core.run.run_plan import QUICK_GRACE_S
from warmscope.core.run.session import RunSession
from warmscope.core.run.sweep import Sweep

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
MARGIN = 1
"""Warm-up calls per shape beyond the calls the slowest shape took to become steady (the upper
median across baseline processes)."""
MAX_CALLS = 10
SERVES = ("reverse", "cycle", "random")
RECIPE_PHASE = "recipe"
YOUR_CACHE = " · your cache"
"""A cell measured in the user's own compile cache, beside the cold one the verdicts are on."""


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


class WarmupFailed(RuntimeError):
    """No recipe can be verified: the baseline itself failed (exit code 1)."""


@dataclass
class Candidate:
    recipe: Recipe
    path: Path
    note: str = ""
    """Why the candidate was dropped before verification (empty: it was verified)."""
    artifact_node: dict[str, Any] | None = None
    """Where an executor's process made its cache artifact."""


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
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._live: Any = None  # the process in progress: a PlannedRun or a RunSession

    # -- stopping from another thread ------------------------------------------------------

    def stop(self) -> None:
        """From any thread: the process in progress ends quickly (a graceful stop), nothing
        starts after it, and ``run`` raises ``KeyboardInterrupt`` as Ctrl-C makes it."""
        with self._lock:
            self._stop.set()
            live = self._live
        if live is not None:
            live.stop(QUICK_GRACE_S)
        if self.executor is not None:  # each task stops its child; the sweep ends stopped
            self.executor.cancel(wait_s=0.0)

    def _check(self) -> None:
        if self._stop.is_set():
            raise KeyboardInterrupt

    def _tell(self, progress: Progress) -> None:
        (self.on_progress or (lambda _p: None))(progress)

    def _run_sweep(self, sweep: Sweep, phase: str) -> None:
        """``sweep.run`` with the progress told and a stop honoured between polls."""
        self._check()
        self._tell(Progress(phase, cells=[c.label for c in sweep.cells]))
        started: dict[int, float] = {}

        def update(s: Sweep, n: int, run: Any, news: Any) -> None:
            with self._lock:
                self._live = run
            self._check()  # ``drive`` stops the process, quickly since ``hung_up``
            if n not in started:
                started[n] = time.monotonic()
                c, r = s.plan[n]
                self._tell(Progress(phase, cell=s.cells[c].label, repeat=r))
            elif (
                self.estimate_s is None
                and news is not None
                and news.first + len(news.ms) >= max(1, len(self.declared))
            ):
                # Once the first process has called every shape (compiled each), its time so
                # far is what every process costs: the estimate, before it ends.
                self._estimate(started[n], time.monotonic() - started[n])

        def done(s: Sweep, process: Any) -> None:
            if self.on_done is not None:
                self.on_done(s, process)
            facts = cell_facts(ok_runs(s, process.cell), s, process.cell)
            label = s.cells[process.cell].label
            self._tell(Progress(phase, cell=label, repeat=process.repeat, facts=facts))
            self._check()  # the sweep ends ``stopped``

        sweep.run(on_update=update, on_done=done, hung_up=self._stop.is_set)
        with self._lock:
            self._live = None
        if sweep.stopped:
            raise KeyboardInterrupt

    def _run_alone(self, session: Any) -> None:
        """One ``RunSession`` to its end, stoppable as the sweep's processes are."""
        with self._lock:
            self._check()
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
        self._check()

    # -- what it costs ---------------------------------------------------------------------

    @property
    def per_cell(self) -> int:
        """Processes per cell, as resolved from ``repeat``."""
        return self.repeat or DEFAULT_REPEAT

    def plan_text(self) -> str:
        """``9 processes: 2 observe, 1 makes a cache artifact, 6 verify 3 candidates; each
        compiles: the time once the first has met every shape``."""
        plan = self.plan
        total = plan["observe"] + plan["artifact"] + plan["verify"]
        candidates = plan["verify"] // self.per_cell // (2 if self.twin else 1)
        parts = [f"{plan['observe']} observe"]
        if plan["artifact"]:
            parts.append(
                f"{plan['artifact']} make{'s' if plan['artifact'] == 1 else ''} a cache artifact"
            )
        parts.append(
            f"{plan['verify']} verify {candidates} candidate{'s' if candidates != 1 else ''}"
        )
        text = f"{total} processes: {', '.join(parts)}"
        if plan["yours"]:
            text += (
                f"; {plan['yours']} of them in your own compile cache, which has entries "
                "(--compile-cache cold skips those)"
            )
        if self.mode == "compile":
            text += "; each compiles: the time once the first has compiled every shape"
        return text

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

    def run(self) -> dict[str, Any]:
        if self.folder is None or not self.folder.exists():
            self.prepare_folder()
        assert self.folder is not None
        t0 = self.started_at = time.monotonic()
        self.choose_caches()
        self.plan = self.planned_processes()
        self._tell(Progress("plan", note=self.plan_text()))
        self.baseline = Sweep(
            target=self.settings.target,
            cells=self.with_yours([Cell("no recipe", self.served)]),
            repeat=self.per_cell,
            command=self.command,
            folder=self.folder / "observe",
            executor=self.executor,
        )
        self._run_sweep(self.baseline, "observe")
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
        observed = observe(runs)
        self._check()
        self.candidates = self.propose(observed)
        self._tell(Progress("propose", cells=[c.recipe.label for c in self.candidates]))
        self.make_artifacts()
        self.build_recipes()
        live = [c for c in self.candidates if not c.note]
        if live:
            self.verify = Sweep(
                target=self.settings.target,
                cells=self.with_yours(
                    [Cell(c.recipe.label, self.candidate_settings(c)) for c in live]
                ),
                repeat=self.per_cell,
                command=self.command,
                folder=self.folder / "verify",
                executor=self.executor,
            )
            self._run_sweep(self.verify, "verify")
            self.repeat_contended(live)
        self.wall_s = time.monotonic() - t0
        return self.document(observed)

    def plan_recipes(self, observed: list[dict[str, Any]]) -> list[Recipe]:
        """The candidate recipes (pure: what the baseline observed decides their counts and
        notes, never which candidates there are, so their number is known before it runs)."""
        order = [dict(d) for d in self.declared] or [{}]
        if self.serve == "cycle":
            order.reverse()  # never warm up in the order the verification serves
        by_key = {o["key"]: o for o in observed}
        base = self.base_recipe()
        recipes: list[Recipe] = []
        # The same count for every shape: whichever shape the warm-up meets first pays for the
        # process's warm-up (the profiling run…), and that need not be the one served first.
        slowest = max((o["calls_to_steady"] for o in observed), default=0)

        def calls(count: int | None) -> list[Call]:
            n = count if count is not None else slowest + MARGIN
            return [
                Call(
                    dims, max(1, min(MAX_CALLS, n)), by_key.get(dims_text(dims), {}).get("why", "")
                )
                for dims in order
            ]

        if self.mode == "compile":
            dynamic = len(order) > 1
            options = dict(base.compile_options, **({"dynamic": True} if dynamic else {}))
            twice = calls(2)
            if dynamic:
                # torch.compile as the runs called it, then one call of each declared size: a
                # graph per size, or one that dynamo makes dynamic as the sizes change.
                recipes.append(self.variant(base, "compile, then each size", calls(1)))
            marks = dynamic_marks(base.specs, self.declared)
            if dynamic and marks:
                # One symbolic size over the declared range: what dynamic=True does, bounded.
                marked = self.variant(base, "compile mark_dynamic", twice)
                marked.mark_dynamic = marks
                recipes.append(marked)
            else:
                recipes.append(
                    self.variant(base, "compile dynamic" if dynamic else "compile", twice, options)
                )
            if self.cache_artifact is True or (self.cache_artifact is None and self.on_gpu):
                art = self.variant(base, "compile + cache artifact", twice, options)
                art.cache_artifact = True
                recipes.append(art)
        else:
            recipes.append(self.variant(base, "warm-up calls", calls(None)))
            if self.on_gpu and base.setting("cudnn_benchmark"):
                # Autotuning makes each new shape's first call benchmark its convolutions; off,
                # cuDNN's heuristics choose: no benchmark to warm up, a steady cost to weigh
                # (the verdict's break-even says past how many calls it costs more).
                off = self.variant(base, "cuDNN autotuning off", calls(None))
                off.settings["cudnn_benchmark"] = False
                recipes.append(off)
            if self.mode in ("script", "trace") and self.settings.knobs.get(
                "profiling_executor"
            ) in (None, True):
                off = self.variant(base, "profiling off", calls(1))
                off.settings["profiling_executor"] = False
                recipes.append(off)
        for recipe in recipes:
            recipe.guard_recompile = self.guard and self.mode == "compile"
            recipe.notes = [o["note"] for o in observed if o.get("note")]
        return recipes

    def planned_processes(self) -> dict[str, int]:
        """How many processes each step runs, as planned before the first starts:
        ``observe``, ``artifact`` (a cache-artifact recipe's one process), ``verify``, and of
        those the ``yours`` ones (again in the user's own compile cache)."""
        recipes = self.plan_recipes([])
        twins = 2 if self.twin else 1
        return {
            "observe": self.per_cell * twins,
            "artifact": sum(r.cache_artifact for r in recipes),
            "verify": len(recipes) * self.per_cell * twins,
            "yours": (1 + len(recipes)) * self.per_cell if self.twin else 0,
        }

    def propose(self, observed: list[dict[str, Any]]) -> list[Candidate]:
        """The candidate recipes, written as files in the folder."""
        assert self.folder is not None
        recipes = self.plan_recipes(observed)
        folder = self.folder / "recipes"
        folder.mkdir(exist_ok=True)
        out = []
        for n, recipe in enumerate(recipes):
            if self.cpp:  # the C++ file is what the C++ agent runs, and what --emit-cpp hands over
                path = folder / f"recipe{n}.cpp"
                try:
                    atomic_write(path, emit_cpp(recipe.to_json(), self.settings.target))
                except CppRecipeError as exc:
                    out.append(Candidate(recipe, path, note=f"no libtorch form: {exc}"))
                    continue
                out.append(Candidate(recipe, path))
                continue
            path = folder / f"recipe{n}.py"
            atomic_write(path, emit_python(recipe, target=self.settings.target))
            out.append(Candidate(recipe, path))
        return out

    @property
    def cpp(self) -> bool:
        """``--runtime cpp``: the candidates are C++ files, verified in the C++ agent."""
        return is_cpp(self.settings)

    def build_recipes(self) -> None:
        """``--runtime cpp``: each candidate's file built into the library its processes load,
        two at a time (a compiler keeps one core busy); one that does not build is not
        verified, the compiler's line saying why."""
        live = [c for c in self.candidates if not c.note]
        if not self.cpp or not live:
            return
        self._tell(Progress("build"))

        def one(c: Candidate) -> None:
            try:
                cpp_build.child_for(self.settings.python, str(c.path)).build(
                    cancelled=self._stop.is_set
                )
            except UsageError as exc:
                c.note = f"did not build: {exc}"

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(one, live))
        self._check()

    def base_recipe(self) -> Recipe:
        """The recipe every candidate starts from: the runs' settings, each knob carried as
        its declaration says (``knobs.RecipeForm``), whatever the runtime."""
        knobs = self.settings.knobs
        specs = [s.to_json() for s in self.settings.input_specs(self.target)]
        options = compile_options(knobs) if self.mode == "compile" else {}
        carried = {
            k.name: knobs[k.name]
            for k in KNOBS
            if k.recipe.carry in (STATEMENT, SERVER) and knobs.get(k.name) is not None
        }
        if "cuda_module_loading" not in carried and self.on_gpu and self.baseline is not None:
            # The mode CUDA started with in every baseline process, kept in force.
            seen = {
                env_keys.cuda_device(d.env).get("module_loading") for d in ok_runs(self.baseline)
            }
            loading = next(iter(seen)) if len(seen) == 1 else None
            if isinstance(loading, str) and loading in KNOB_BY_NAME["cuda_module_loading"].choices:
                carried["cuda_module_loading"] = loading
        return Recipe(
            label="",
            mode=self.mode,
            given=self.target.kind,
            settings=carried,
            freeze=bool(knobs.get("freeze")),
            optimize_for_inference=bool(knobs.get("optimize_for_inference")),
            trace_strict=knobs.get("trace_strict"),
            eval=knobs.get("eval", True) is not False,
            specs=specs,
            shapes=[dict(d) for d in self.declared],
            calls=[],
            device=knobs.get("device") or "cpu",
            dtype=knobs.get("dtype"),
            grad_mode=knobs.get("grad_mode") or "no_grad",
            seed=self.settings.seed,
            compile_options=options,
        )

    @staticmethod
    def variant(
        base: Recipe, label: str, calls: list[Call], options: dict[str, Any] | None = None
    ) -> Recipe:
        recipe = Recipe.from_json(base.to_json())
        recipe.label, recipe.calls = label, calls
        if options is not None:
            recipe.compile_options = options
        return recipe

    def candidate_settings(self, candidate: Candidate) -> RunSettings:
        settings = self.served.copy()
        settings.recipe = str(candidate.path)
        # The recipe applies these itself: its processes verify the file, not warmscope's own
        # application of the same settings (a setting the file left out would show).
        settings.knobs = {
            name: (KNOB_BY_NAME[name].default if KNOB_BY_NAME[name].recipe.left_to_recipe else v)
            for name, v in settings.knobs.items()
        }
        # On a GPU any call after a pause is slower (the device's clocks after idle), warm or
        # not: each first call is also held to its own call replayed warm after the same pause.
        settings.replay_opening = self.on_gpu
        return settings

    @property
    def on_gpu(self) -> bool:
        return str(self.settings.knobs.get("device") or "cpu").startswith("cuda")

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
                self._run_alone(session)
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
        assert self.folder is not None
        self._check()
        sweep = Sweep(
            target=self.settings.target,
            cells=[Cell(c.recipe.label, settings)],
            repeat=1,
            command=self.command,
            folder=self.folder / f"{c.path.stem}-artifact",
            executor=self.executor,
        )
        sweep.run(hung_up=self._stop.is_set)
        if sweep.stopped or not sweep.processes:
            raise KeyboardInterrupt
        self._check()
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
        self.again = Sweep(
            target=self.settings.target,
            cells=[
                Cell(f"{live[i].recipe.label} · again", self.candidate_settings(live[i]))
                for i, _ in redo
            ],
            repeat=1,
            command=self.command,
            folder=self.folder / "verify-again",
            executor=self.executor,
        )
        self._run_sweep(self.again, "again")
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
        cands = []
        live = [c for c in self.candidates if not c.note]
        for c in self.candidates:
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
            else:
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
                    entry["your_cache"] = cell_facts(
                        ok_runs(self.verify, yours), self.verify, yours
                    )
            cands.append(entry)
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


class UsageAbort(RuntimeError):
    """The child refused the target or its inputs (exit code 2)."""


# -- reading the runs -----------------------------------------------------------------------


def ok_runs(sweep: Sweep, cell: int = 0) -> list[RunData]:
    return [p.data for p in sweep.processes if p.cell == cell and p.data.status == outcome.OK]


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


def calls_to_steady(idx: Any, steady_from: int | None) -> int:
    """How many of a shape's calls came before it was steady (all of them if never)."""
    if steady_from is None:
        return len(idx)
    return bisect.bisect_left(list(idx), steady_from)


def observe(runs: list[RunData]) -> list[dict[str, Any]]:
    """Per shape, across the baseline processes: its first call against its steady p50, how
    many calls it took to become steady, and why its first call was slow (its events)."""
    per: dict[str, dict[str, Any]] = {}
    for data in runs:
        rows = data.shape_rows() if data.shape_keys else [whole_row(data)]
        summaries = data.shape_summaries() if data.shape_keys else None
        for k, row in enumerate(rows):
            entry = per.setdefault(
                row["key"],
                {
                    "key": row["key"],
                    "dims": row["dims"],
                    "ratios": [],
                    "firsts": [],
                    "calls": [],
                    "labels": Counter(),
                    "events": Counter(),
                },
            )
            entry["ratios"].append(row["first_vs_p50"])
            entry["firsts"].append(row["first_ms"])
            if summaries is not None:
                idx, s = summaries[k]
                entry["calls"].append(calls_to_steady(idx, s.steady_from))
            else:
                entry["calls"].append(data.summary().steady_from or 0)
            entry["labels"][row.get("label") or ""] += 1
            for e in row.get("events", []):
                entry["events"][e["title"]] += 1
    out = []
    for key, e in per.items():
        ratio = median_interval([r for r in e["ratios"] if r is not None])
        first = median_interval([f for f in e["firsts"] if f is not None])
        label = next((lab for lab, _ in e["labels"].most_common() if lab), "")
        events = [t for t, _ in e["events"].most_common(2)]
        why = label or ("; ".join(events) if events else "")
        item = {
            "key": key,
            "dims": e["dims"],
            # The upper median across processes: one noisy process does not set the count.
            "calls_to_steady": sorted(e["calls"])[len(e["calls"]) // 2] if e["calls"] else 0,
            "ratio": stat_json(e["ratios"]),
            "first_ms": stat_json(e["firsts"]),
            "why": "",
        }
        if ratio is not None and first is not None and ratio.median > MAX_RATIO:
            reason = f"the {why}" if label else (why or "no event: allocation and caches")
            item["why"] = (
                f"first call {fmt_ms(first.median)}, {num3(ratio.median)}× its steady p50 "
                f"({reason})"
            )
            item["note"] = f"{key or 'the input'}: {item['why']}"
        out.append(item)
    return out


def whole_row(data: RunData) -> dict[str, Any]:
    s = data.summary()
    first = data.latency(0) if data.count else None
    return {
        "key": "",
        "dims": {},
        "first_ms": first,
        "p50_ms": s.p50_ms,
        "p90_ms": s.p90_ms,
        "first_vs_p50": first / s.p50_ms if first is not None and s.p50_ms else None,
        "label": data.label(0) if data.count else None,
        "events": [],
    }


def cell_facts(runs: list[RunData], sweep: Sweep, cell: int | None) -> dict[str, Any]:
    """A cell's figures per shape and its start-up cost, across its finished processes."""
    shapes: dict[str, dict[str, list[Any]]] = {}
    labels: dict[str, Counter[str]] = {}
    held = False
    index = 0 if cell is None else cell
    repeats = {p.data.record_path: p.repeat for p in sweep.processes if p.cell == index}
    each: list[dict[str, Any]] = []
    for data in runs:
        rows = data.shape_rows() if data.shape_keys else [whole_row(data)]
        load = other_load(data)
        mine: dict[str, Any] = {
            "record": data.record_path,
            "repeat": repeats.get(data.record_path),
            "load": None if load is None else round(load, 3),
            "shapes": [],
        }
        each.append(mine)
        for row in rows:
            mine["shapes"].append(
                {
                    "key": row["key"],
                    "first_ms": row["first_ms"],
                    "p50_ms": row["p50_ms"],
                    "p90_ms": row["p90_ms"],
                    "ratio": row.get("first_vs_held", row["first_vs_p50"]),
                }
            )
            slot = shapes.setdefault(
                row["key"],
                {
                    "first_ms": [],
                    "p50_ms": [],
                    "p90_ms": [],
                    "ratio": [],
                    "raw_ratio": [],
                    "replay_ms": [],
                },
            )
            slot["first_ms"].append(row["first_ms"])
            slot["p50_ms"].append(row["p50_ms"])
            slot["p90_ms"].append(row["p90_ms"])
            # Where the opening was replayed, the ratio is against the larger of the steady p50
            # and that call warm after the same pause: what warm-up alone leaves of it.
            held = held or "first_vs_held" in row
            slot["ratio"].append(row.get("first_vs_held", row["first_vs_p50"]))
            slot["raw_ratio"].append(row["first_vs_p50"])
            slot["replay_ms"].append(row.get("replay_ms"))
            labels.setdefault(row["key"], Counter())[row.get("label") or ""] += 1
    if not held:
        for slot in shapes.values():
            del slot["raw_ratio"], slot["replay_ms"]
    processes = [p for p in sweep.processes if p.cell == index]
    return {
        "held_to_replay": held,
        "shapes": [
            {
                "key": key,
                **{name: stat_json(values) for name, values in slot.items()},
                "first_label": next((lab for lab, _ in labels[key].most_common() if lab), ""),
            }
            for key, slot in shapes.items()
        ],
        "startup_ms": stat_json([d.phases.get(RECIPE_PHASE, 0.0) for d in runs]),
        "steady_p50_ms": stat_json([d.summary().p50_ms for d in runs]),
        "warmup_excess_ms": stat_json([d.summary().warmup_excess_ms for d in runs]),
        "processes": [
            {
                "record": p.data.record_path,
                "status": p.data.status,
                "detail": p.data.status_detail,
                "repeat": p.repeat,
                **({"node": p.node} if p.node is not None else {}),
            }
            for p in processes
        ],
        "runs": [d.record_path for d in runs],
        "each": each,
    }


def load_of(sweep: Sweep, record: str | None) -> float | None:
    """The cores other processes kept busy while the process of ``record`` ran."""
    data = next((p.data for p in sweep.processes if p.data.record_path == record), None)
    load = None if data is None else other_load(data)
    return None if load is None else round(load, 3)


def duration_text(seconds: float) -> str:
    """``3 min 40 s``, ``48 s``: a time as a person plans with it."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def torch_version(runs: list[RunData]) -> str:
    """The torch the processes ran (one version, or each of them)."""
    seen = sorted({str(d.env.get("torch")) for d in runs if d.env.get("torch")})
    return ", ".join(seen)


def provenance(doc: dict[str, Any], chosen: dict[str, Any], runtime: str) -> Provenance:
    """What the emitted file's header says: the verdict as the document has it. ``runtime``:
    the file's own language; a C++ file from a Python warm-up says it never ran in C++."""
    verdict, words = chosen["verdict"], chosen.get("why") or ""
    if runtime != doc.get("runtime", "python"):
        said = f"{verdict}: {words}" if words else verdict
        words = (
            f"not run in C++: this file is the same warm-up for libtorch, never run; its Python "
            f"form was {said}"
        )
        verdict = NOT_VERIFIED
    return Provenance(
        outcome=verdict,
        verdict=words,
        figures=[cured_text(row) for row in chosen.get("cured", [])],
        command=[str(c) for c in doc.get("command", [])],
        torch=str(doc.get("torch") or ""),
        runtime=doc.get("runtime", "python"),
        processes=int(doc.get("repeat") or 0),
    )


def emitted_text(doc: dict[str, Any], chosen: dict[str, Any], runtime: str) -> str:
    """The file handed over: the very file its processes verified (its body unchanged), under
    a header that states the verdict as measured."""
    recipe = Recipe.from_json(chosen["recipe"])
    verified = Path(chosen["file"]).read_text(encoding="utf-8")
    proof = provenance(doc, chosen, runtime)
    if runtime == "cpp" and not chosen["file"].endswith(".cpp"):
        # The same warm-up for libtorch, never run in C++: built from the same recipe.
        return emit_cpp(chosen["recipe"], doc["target"], proof)
    if runtime == "cpp":
        header, _ = split_header(emit_cpp(chosen["recipe"], doc["target"], proof))
    else:
        header, _ = split_header(emit_python(recipe, target=doc["target"], provenance=proof))
    _, body = split_header(verified)
    return header + body


def chosen_candidate(doc: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in doc["candidates"] if c["label"] == doc["chosen"]), None)


def copy_recipe(doc: dict[str, Any], target: Path) -> Path | None:
    """The chosen recipe's file at ``--emit`` (its cache artifact beside it, named after it),
    its header stating the verdict."""
    chosen = chosen_candidate(doc)
    if chosen is None:
        return None
    source = Path(chosen["file"])
    atomic_write(target, emitted_text(doc, chosen, "python"), parents=False)
    artifact = source.with_name(source.stem + ARTIFACT_SUFFIX)
    if artifact.exists():
        copy_beside(artifact, target.with_name(target.stem + ARTIFACT_SUFFIX))
    return target
