"""A warm-up recipe: what to set, compile and call before serving, and its Python file.

Pure: no torch, no processes. ``Recipe`` says what a warm-up does; ``emit_python`` writes it as
a file that imports only torch and the standard library and defines ``prepare(model) ->
model``. ``warmscope warmup`` verifies candidates by running that very file (``--recipe``) in
fresh processes, so what is verified is what the user gets.
"""

from __future__ import annotations

import inspect
import json
import textwrap
from dataclasses import asdict, dataclass, field
from typing import Any

from warmscope.core.child import inputs

ARTIFACT_SUFFIX = ".cache.bin"
"""The compile-cache artifact is written beside the recipe: ``NAME.py`` -> ``NAME.cache.bin``."""


@dataclass
class Call:
    """``count`` warm-up calls with the inputs of one declared shape (``{}``: the one shape)."""

    dims: dict[str, int]
    count: int
    why: str = ""
    """What this shape's first call cost without a warm-up, for the file's comment."""


@dataclass
class Recipe:
    """What a warm-up does, in the order the file does it."""

    label: str
    mode: str
    """How the served module runs, as it ran where the recipe was derived: ``script``,
    ``trace`` or ``compile`` (the recipe makes that call on the module it is given, as loaded),
    or ``eager``."""
    specs: list[dict[str, Any]]
    """The runs' input specs (``InputSpec.to_json()``); empty: the caller passes example inputs."""
    shapes: list[dict[str, int]]
    """Every declared shape (``--dim``); a run serving another is refused."""
    calls: list[Call]
    device: str = "cpu"
    dtype: str | None = None
    grad_mode: str = "no_grad"
    seed: int = 0
    threads: int | None = None
    profiling_executor: bool | None = None
    num_profiled_runs: int | None = None
    fusion_strategy: str | None = None
    freeze: bool = False
    optimize_for_inference: bool = False
    trace_strict: bool | None = None
    """``torch.jit.trace``'s ``strict`` as traced (``None``: torch's default)."""
    given: str = "module"
    """What the target was (``targets.Target.kind``): what ``prepare`` takes (``takes``)."""
    cudnn_benchmark: bool | None = None
    """``torch.backends.cudnn.benchmark`` as verified (``None``: left as torch has it)."""
    cuda_module_loading: str | None = None
    """The ``CUDA_MODULE_LOADING`` the recipe was verified under, kept in force: set where CUDA
    has not started yet, a warning where it started with another."""
    compile_options: dict[str, Any] = field(default_factory=dict)
    """``torch.compile`` keyword arguments (``backend``, ``mode``, ``dynamic``, ``fullgraph``)."""
    mark_dynamic: list[dict[str, Any]] = field(default_factory=list)
    """``{"input": i, "axis": a, "min": lo, "max": hi}``: ``torch._dynamo.mark_dynamic`` on the
    warm-up inputs, so one graph covers the declared sizes."""
    cache_artifact: bool = False
    """Load ``torch.compiler`` cache artifacts written beside the recipe (save them when absent)."""
    guard_recompile: bool = False
    """After warm-up, ``torch.compiler.set_stance("fail_on_recompile")``: an unwarmed shape fails."""
    notes: list[str] = field(default_factory=list)
    """Lines for the file's header: what was observed without the recipe."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recipe:
        values = dict(data)
        values["calls"] = [Call(**c) for c in data.get("calls", [])]
        return cls(**values)

    @property
    def warmup_calls(self) -> int:
        return sum(c.count for c in self.calls)

    def summary(self) -> str:
        """``profiling executor off; each shape ×1``: the recipe in a few words."""
        parts = []
        if self.profiling_executor is False:
            parts.append("profiling executor off")
        if self.num_profiled_runs is not None:
            parts.append(f"num_profiled_runs={self.num_profiled_runs}")
        if self.fusion_strategy:
            parts.append(f"fusion {self.fusion_strategy}")
        if self.freeze:
            parts.append("freeze")
        if self.cudnn_benchmark is not None:
            parts.append(f"cuDNN autotuning {'on' if self.cudnn_benchmark else 'off'}")
        if self.mode == "compile":
            dyn = self.compile_options.get("dynamic")
            parts.append("compile" + ("" if dyn is None else f"(dynamic={dyn})"))
        if self.mark_dynamic:
            parts.append("mark_dynamic")
        if self.cache_artifact:
            parts.append("cache artifact")
        counts = sorted({c.count for c in self.calls})
        if len(self.calls) > 1 and len(counts) == 1:
            parts.append(f"each shape ×{counts[0]}")
        elif self.calls:
            parts.append(" ".join(f"{dims_text(c.dims) or 'input'}×{c.count}" for c in self.calls))
        return "; ".join(parts) or "no warm-up"


def takes(recipe: Recipe) -> str:
    """What ``prepare(model)`` is given, as the header says it: the module as the target
    loaded it, which the recipe then scripts, traces or compiles as it was derived."""
    if recipe.given == "archive":
        return "the TorchScript module as torch.jit.load(PATH) gives it"
    if recipe.given == "export":
        return "the exported program's module, torch.export.load(PATH).module()"
    if recipe.given == "aoti":
        return "the package as torch._inductor.aoti_load_package(PATH) loads it"
    return {
        "script": "the eager module; this recipe scripts it (torch.jit.script), or takes it "
        "scripted already",
        "trace": "the eager module; this recipe traces it with its first warm-up inputs "
        "(torch.jit.trace), or takes it traced already (torch.jit.load)",
        "compile": "the eager module; this recipe compiles it (torch.compile)",
    }.get(recipe.mode, "the eager module")


def dims_text(dims: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in dims.items())


# -- the Python file ----------------------------------------------------------------------------

INPUT_MAKER = (
    inspect.getsource(inputs.build_inputs)
    + '''

def make_inputs(dims):
    """One call's arguments for a shape, as the measured runs made them (same seed, values)."""
    return build_inputs(torch, SPECS, DEVICE, DTYPE, dims, SEED)
'''
)
"""The agent's own maker of inputs (``core/child/inputs.py``), carried whole by the file: the
same seed and specs make the same tensors in the measured runs and in the server."""

GRAD = {
    "no_grad": "torch.no_grad()",
    "inference_mode": "torch.inference_mode()",
    "enabled": "contextlib.nullcontext()",
}


def _literal(value: Any) -> str:
    """A Python literal in the style a formatter leaves alone: double quotes, ``True``."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


def emit_python(recipe: Recipe, *, target: str = "", artifact_name: str = "") -> str:
    """The recipe as a Python file: imports torch and the standard library only."""
    lines: list[str] = []
    add = lines.append
    add(f'"""Warm-up recipe: {recipe.summary()}.')
    add("")
    if target:
        add(f"Derived and verified by warmscope for {target}. Use before serving:")
    else:
        add("Use before serving:")
    add("")
    add("    model = prepare(model)")
    add("")
    lines.extend(textwrap.wrap(f"model: {takes(recipe)}.", 96))
    if recipe.notes:
        add("")
        add("Without it:")
        for note in recipe.notes:
            add(f"  {note}")
    add('"""')
    add("")
    stdlib = (
        (["contextlib"] if recipe.grad_mode == "enabled" else [])
        + (["os"] if recipe.cache_artifact or recipe.cuda_module_loading else [])
        + (["warnings"] if recipe.cuda_module_loading else [])
    )
    if recipe.specs:  # the input maker's annotations
        add("from __future__ import annotations")
        add("")
    for name in stdlib:
        add(f"import {name}")
    if recipe.specs:
        add("from typing import Any")
    if stdlib or recipe.specs:
        add("")
    add("import torch")
    add("")
    add(f"SPECS = {_literal(recipe.specs)}")
    add(f"SHAPES = {_literal(recipe.shapes)}")
    add(f"SEED = {recipe.seed}")
    add(f"DEVICE = {_literal(recipe.device)}")
    add(f"DTYPE = {_literal(recipe.dtype)}")
    if recipe.cache_artifact:
        name = artifact_name or "recipe" + ARTIFACT_SUFFIX
        add(
            f"ARTIFACT = os.path.join(os.path.dirname(os.path.abspath(__file__)), {_literal(name)})"
        )
    if recipe.specs:
        add("")
        add("")
        lines.extend(INPUT_MAKER.strip("\n").splitlines())
    add("")
    add("")
    add("def prepare(model, example_inputs=None):")
    add('    """Set the process-wide settings, compile, run the warm-up calls; the model to serve.')
    add("")
    add("    example_inputs: ``(args, kwargs)``, only where SPECS is empty (the model brought its")
    add('    own inputs)."""')
    body: list[str] = []
    step = body.append
    if recipe.threads is not None:
        step(f"torch.set_num_threads({recipe.threads})  # as measured")
    if recipe.profiling_executor is False:
        step("# The profiling executor's profiling and optimizing runs are the slow first calls;")
        step("# the legacy executor optimizes once, for every shape alike.")
        step("torch._C._jit_set_profiling_executor(False)")
    if recipe.num_profiled_runs is not None:
        step("# Fewer profiled runs before the optimized graph takes over.")
        step(f"torch._C._jit_set_num_profiled_runs({recipe.num_profiled_runs})")
    if recipe.fusion_strategy:
        stages = [
            (kind.strip().upper(), int(depth))
            for kind, _, depth in (p.partition(",") for p in recipe.fusion_strategy.split(";"))
        ]
        step("# How many shape specializations the fuser makes before it goes dynamic.")
        step(f"torch.jit.set_fusion_strategy({_literal(stages)})")
    if recipe.cuda_module_loading:
        mode = _literal(recipe.cuda_module_loading)
        step(
            f"# Verified with CUDA_MODULE_LOADING={recipe.cuda_module_loading}. CUDA reads it as it"
        )
        step("# starts: set it in the server's environment (here only where CUDA has not started).")
        step("if not torch.cuda.is_initialized():")
        step(f'    os.environ["CUDA_MODULE_LOADING"] = {mode}')
        step(f'elif os.environ.get("CUDA_MODULE_LOADING") != {mode}:')
        step("    warnings.warn(")
        step(
            f'        f"verified with CUDA_MODULE_LOADING={recipe.cuda_module_loading}; CUDA started'
            " with {os.environ.get('CUDA_MODULE_LOADING')}\""
        )
        step("    )")
    if recipe.cudnn_benchmark is not None:
        if recipe.cudnn_benchmark:
            step("# cuDNN autotuning on: each shape's first call benchmarks its convolutions;")
            step("# the warm-up calls below pay that for every declared shape.")
        else:
            step("# cuDNN autotuning off: no shape's first call benchmarks (cuDNN's heuristics")
            step("# choose the algorithms), at the steady cost verified.")
        step(f"torch.backends.cudnn.benchmark = {recipe.cudnn_benchmark}")
    step("try:")
    step("    model.eval()")
    step("except NotImplementedError:  # an exported program runs as it was exported")
    step("    pass")
    if recipe.device != "cpu" or recipe.dtype:
        step('if not isinstance(model, torch.jit.ScriptModule) and hasattr(model, "to"):')
        step("    model = model.to(DEVICE)")
        if recipe.dtype:
            step("    model = model.to(getattr(torch, DTYPE))")
    if recipe.specs:
        step("")
        step("inputs = {}")
        step("for dims in SHAPES or [{}]:")
        step("    inputs[tuple(sorted(dims.items()))] = make_inputs(dims)")
    body.extend(_jit_steps(recipe))
    if recipe.mode == "compile":
        if recipe.cache_artifact:
            step("# Compiled code from an earlier process: the compiles below read it back.")
            step("loaded = False")
            step("if os.path.exists(ARTIFACT):")
            step('    if not hasattr(torch.compiler, "load_cache_artifacts"):')
            step("        raise RuntimeError(")
            step(
                '            f"torch {torch.__version__} has no torch.compiler.load_cache_artifacts"'
            )
            step("        )")
            step('    with open(ARTIFACT, "rb") as f:')
            step("        torch.compiler.load_cache_artifacts(f.read())")
            step("    loaded = True")
        options = ", ".join(f"{k}={_literal(v)}" for k, v in recipe.compile_options.items())
        why = (
            "one graph for every size"
            if recipe.compile_options.get("dynamic")
            else "a graph per size seen below"
        )
        step(f"model = torch.compile(model{', ' + options if options else ''})  # {why}")
    if recipe.mark_dynamic:
        step("# One symbolic size for the declared range (size 1 would specialize: left out).")
        step(f"for mark in {_literal(recipe.mark_dynamic)}:")
        step("    for args, kwargs in inputs.values():")
        step("        values = args + list(kwargs.values())")
        step("        torch._dynamo.mark_dynamic(")
        step('            values[mark["input"]], mark["axis"], min=mark["min"], max=mark["max"]')
        step("        )")
    step("")
    step(f"with {GRAD.get(recipe.grad_mode, 'torch.no_grad()')}:")
    if not recipe.calls:
        step("    pass")
    for call in recipe.calls:
        what = dims_text(call.dims)
        if call.why:
            step(f"    # {what or 'the input'}: {call.why}")
        step(f"    {_arguments(recipe, call.dims)}")
        step(f"    for _ in range({call.count}):")
        step("        model(*args, **kwargs)")
    if recipe.device.startswith("cuda"):
        step("torch.cuda.synchronize()")
    if recipe.cache_artifact:
        step("if not loaded:")
        step('    if not hasattr(torch.compiler, "save_cache_artifacts"):')
        step("        raise RuntimeError(")
        step('            f"torch {torch.__version__} has no torch.compiler.save_cache_artifacts"')
        step("        )")
        step("    saved = torch.compiler.save_cache_artifacts()")
        step("    if saved is not None:")
        step('        with open(ARTIFACT, "wb") as f:')
        step("            f.write(saved[0])")
    if recipe.guard_recompile:
        step("# From here a recompile is an error: a shape the warm-up did not cover fails loudly.")
        step('if not hasattr(torch.compiler, "set_stance"):')
        step(
            '    raise RuntimeError(f"torch {torch.__version__} has no torch.compiler.set_stance")'
        )
        step('torch.compiler.set_stance("fail_on_recompile")')
    step("return model")
    for line in body:
        add(f"    {line}" if line else "")
    add("")
    return "\n".join(lines)


def _arguments(recipe: Recipe, dims: dict[str, int]) -> str:
    """The line that picks one call's arguments: the shape's inputs, or the caller's."""
    if recipe.specs:
        return f"args, kwargs = inputs[{_literal(tuple(sorted(dims.items())))}]"
    return "args, kwargs = example_inputs"


def _jit_steps(recipe: Recipe) -> list[str]:
    """Script or trace the module given (one given scripted or traced already is kept), then
    freeze it: as the runs did, so the recipe holds on the module as loaded."""
    out: list[str] = []
    step = out.append
    if recipe.mode == "script":
        step("if not isinstance(model, torch.jit.ScriptModule):")
        step("    model = torch.jit.script(model)")
    elif recipe.mode == "trace":
        first = recipe.calls[0].dims if recipe.calls else (recipe.shapes or [{}])[0]
        strict = recipe.trace_strict is not None
        step("if not isinstance(model, torch.jit.ScriptModule):")
        step(
            "    # Traced as the runs traced it: with the first warm-up inputs, one path baked in."
        )
        step(f"    {_arguments(recipe, first)}")
        step(f"    with {GRAD.get(recipe.grad_mode, 'torch.no_grad()')}:")
        step("        model = torch.jit.trace(")
        step("            model,")
        step("            tuple(args) or None,")
        step("            example_kwarg_inputs=dict(kwargs) or None,")
        step("            check_trace=False,")
        if strict:
            step(f"            strict={recipe.trace_strict},")
        step("        )")
    if recipe.freeze:
        step("# Frozen: weights and attributes inlined, the graph optimized once.")
        step("model = torch.jit.freeze(model)")
    if recipe.optimize_for_inference:
        step("model = torch.jit.optimize_for_inference(model)")
    return out


def artifact_path_for(recipe_path: str) -> str:
    """Where a recipe's compile-cache artifact lives: beside it, ``NAME.cache.bin``."""
    stem = recipe_path[:-3] if recipe_path.endswith(".py") else recipe_path
    return stem + ARTIFACT_SUFFIX


def dynamic_marks(
    specs: list[dict[str, Any]], shapes: list[dict[str, int]]
) -> list[dict[str, Any]]:
    """``mark_dynamic`` for each input axis a declared dimension sizes, its range the declared
    sizes. Inputs are counted as the call takes them: positional ones, then keyword ones. A
    range that starts at 1 is left out: dynamo specializes sizes 0 and 1 whatever the mark."""
    ordered = [s for s in specs if not s.get("name")] + [s for s in specs if s.get("name")]
    marks = []
    for i, spec in enumerate(ordered):
        for axis, dim in enumerate(spec["shape"]):
            if isinstance(dim, str):
                sizes = [d[dim] for d in shapes if dim in d]
                if sizes and min(sizes) >= 2 and len(set(sizes)) > 1:
                    marks.append({"input": i, "axis": axis, "min": min(sizes), "max": max(sizes)})
    return marks
