"""A warm-up's candidate recipes, proposed from what its baseline observed: warm-up calls for each
shape (as many as the slowest shape took to become steady, plus a margin), settings that remove
warm-up work instead (the profiling executor off, cuDNN autotuning off; for compile
``dynamic=True`` or ``mark_dynamic``), a compile-cache artifact; each written as the file its
processes verify (Python, or C++ for ``--runtime cpp``, built before it runs).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warmscope.core.base.files import atomic_write
from warmscope.core.child.knobs import KNOB_BY_NAME, KNOBS, SERVER, STATEMENT, compile_options
from warmscope.core.child.outcome import UsageError
from warmscope.core.data import env_keys
from warmscope.core.data.cpp_runtime import is_cpp
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.targets import Target
from warmscope.core.output.recipe import Call, Recipe, dims_text, dynamic_marks, emit_python
from warmscope.core.output.recipe_cpp import CppRecipeError, emit_cpp
from warmscope.core.run import cpp_build

MARGIN = 1
"""Warm-up calls per shape beyond the calls the slowest shape took to become steady (the upper
median across baseline processes)."""
MAX_CALLS = 10

CallsOf = Callable[[int | None], list[Call]]
"""A recipe's calls, this many of each shape (``None``: as many as the observed ones need)."""


@dataclass
class Candidate:
    recipe: Recipe
    path: Path
    note: str = ""
    """Why the candidate was dropped before verification (empty: it was verified)."""
    artifact_node: dict[str, Any] | None = None
    """Where an executor's process made its cache artifact."""


@dataclass
class Proposer:
    """What a warm-up's candidates are made from: the runs' settings, their target, mode and
    declared shapes, the order verification serves them in."""

    settings: RunSettings
    target: Target
    mode: str
    declared: list[dict[str, int]]
    serve: str
    guard: bool = False
    """Each compile recipe fails on a recompile (``--guard``)."""
    cache_artifact: bool | None = None
    """A compile candidate that loads a compile-cache artifact; ``None``: on a GPU only."""

    @property
    def on_gpu(self) -> bool:
        return str(self.settings.knobs.get("device") or "cpu").startswith("cuda")

    @property
    def cpp(self) -> bool:
        """``--runtime cpp``: the candidates are C++ files, verified in the C++ agent."""
        return is_cpp(self.settings)

    def recipes(
        self, observed: list[dict[str, Any]], baseline: list[RunData] | None = None
    ) -> list[Recipe]:
        """The candidate recipes (pure: what the baseline observed decides their counts and
        notes, never which candidates there are, so their number is known before it runs).
        ``baseline``: its finished processes, once it ran."""
        order = [dict(d) for d in self.declared] or [{}]
        if self.serve == "cycle":
            order.reverse()  # never warm up in the order the verification serves
        by_key = {o["key"]: o for o in observed}
        base = self.base_recipe(baseline)
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
            recipes = self._compile_recipes(base, calls, dynamic=len(order) > 1)
        else:
            recipes = self._warm_up_recipes(base, calls)
        for recipe in recipes:
            recipe.guard_recompile = self.guard and self.mode == "compile"
            recipe.notes = [o["note"] for o in observed if o.get("note")]
        return recipes

    def _compile_recipes(self, base: Recipe, calls: CallsOf, *, dynamic: bool) -> list[Recipe]:
        """torch.compile's candidates: the compile warmed up on each size, dynamic (or one
        symbolic size), and with a compile-cache artifact."""
        recipes: list[Recipe] = []
        options = dict(base.compile_options, **({"dynamic": True} if dynamic else {}))
        twice = calls(2)
        if dynamic:
            # torch.compile as the runs called it, then one call of each declared size: a
            # graph per size, or one that dynamo makes dynamic as the sizes change.
            recipes.append(variant(base, "compile, then each size", calls(1)))
        marks = dynamic_marks(base.specs, self.declared)
        if dynamic and marks:
            # One symbolic size over the declared range: what dynamic=True does, bounded.
            marked = variant(base, "compile mark_dynamic", twice)
            marked.mark_dynamic = marks
            recipes.append(marked)
        else:
            recipes.append(
                variant(base, "compile dynamic" if dynamic else "compile", twice, options)
            )
        if self.cache_artifact is True or (self.cache_artifact is None and self.on_gpu):
            art = variant(base, "compile + cache artifact", twice, options)
            art.cache_artifact = True
            recipes.append(art)
        return recipes

    def _warm_up_recipes(self, base: Recipe, calls: CallsOf) -> list[Recipe]:
        """The other modes' candidates: warm-up calls, and settings that remove warm-up work
        (cuDNN autotuning off on a GPU, the profiling executor off for TorchScript)."""
        recipes = [variant(base, "warm-up calls", calls(None))]
        if self.on_gpu and base.setting("cudnn_benchmark"):
            # Autotuning makes each new shape's first call benchmark its convolutions; off,
            # cuDNN's heuristics choose: no benchmark to warm up, a steady cost to weigh
            # (the verdict's break-even says past how many calls it costs more).
            off = variant(base, "cuDNN autotuning off", calls(None))
            off.settings["cudnn_benchmark"] = False
            recipes.append(off)
        if self.mode in ("script", "trace") and self.settings.knobs.get("profiling_executor") in (
            None,
            True,
        ):
            off = variant(base, "profiling off", calls(1))
            off.settings["profiling_executor"] = False
            recipes.append(off)
        return recipes

    def base_recipe(self, baseline: list[RunData] | None = None) -> Recipe:
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
        if "cuda_module_loading" not in carried and self.on_gpu and baseline is not None:
            # The mode CUDA started with in every baseline process, kept in force.
            seen = {env_keys.cuda_device(d.env).get("module_loading") for d in baseline}
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

    def write(self, recipes: list[Recipe], folder: Path) -> list[Candidate]:
        """Each recipe as the file its processes run, in ``folder``: C++ for ``--runtime cpp``
        (one with no libtorch form is dropped, saying why), else Python."""
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

    def candidate_settings(self, served: RunSettings, candidate: Candidate) -> RunSettings:
        """The settings a candidate's processes run with: the served ones, its file as the
        recipe."""
        settings = served.copy()
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


def variant(
    base: Recipe, label: str, calls: list[Call], options: dict[str, Any] | None = None
) -> Recipe:
    """A copy of ``base`` named ``label``, making ``calls`` (with its own compile options)."""
    recipe = Recipe.from_json(base.to_json())
    recipe.label, recipe.calls = label, calls
    if options is not None:
        recipe.compile_options = options
    return recipe


def build(candidates: list[Candidate], python: str | None, cancelled: Callable[[], bool]) -> None:
    """``--runtime cpp``: each candidate's file built into the library its processes load,
    two at a time (a compiler keeps one core busy); one that does not build is not verified,
    the compiler's line saying why."""

    def one(c: Candidate) -> None:
        try:
            cpp_build.child_for(python, str(c.path)).build(cancelled=cancelled)
        except UsageError as exc:
            c.note = f"did not build: {exc}"

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(one, candidates))
