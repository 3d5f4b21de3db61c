"""A warm-up recipe: what to set, compile and call before serving, and its Python file.

Pure: no torch, no processes. ``Recipe`` says what a warm-up does; ``emit_python`` writes it as
a file that imports only torch and the standard library and defines ``prepare(model) ->
model``. ``warmscope warmup`` verifies candidates by running that very file (``--recipe``) in
fresh processes, so what is verified is what the user gets.
"""

from __future__ import annotations

import inspect
import shlex
import textwrap
from dataclasses import asdict, dataclass, field
from typing import Any

from warmscope.core.base.code_text import c_string, comment_text, py_literal
from warmscope.core.child import input_spec, inputs
from warmscope.core.child.knobs import KNOB_BY_NAME, KNOBS, SERVER, Knob, show_value
from warmscope.core.output.warmup_verdict import NOT_VERIFIED

ARTIFACT_SUFFIX = ".cache.bin"
"""The compile-cache artifact is written beside the recipe: ``NAME.py`` -> ``NAME.cache.bin``."""
LEGACY_FIELDS = {
    "threads": "intra_op_threads",
    "profiling_executor": "profiling_executor",
    "num_profiled_runs": "num_profiled_runs",
    "fusion_strategy": "fusion_strategy",
    "cudnn_benchmark": "cudnn_benchmark",
    "cuda_module_loading": "cuda_module_loading",
}


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
    eval: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    """The process-wide knobs the runs were given, by name, each carried as its declaration
    says (``knobs.RecipeForm``): applied in ``prepare``, or named in the header as the
    server's to set at start (and checked in ``prepare``)."""
    freeze: bool = False
    optimize_for_inference: bool = False
    trace_strict: bool | None = None
    """``torch.jit.trace``'s ``strict`` as traced (``None``: torch's default)."""
    given: str = "module"
    """What the target was (``targets.Target.kind``): what ``prepare`` takes (``takes``)."""
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
        # Documents written before the knobs were carried by their declarations kept a few as
        # fields of their own.
        settings = dict(values.get("settings") or {})
        for old, name in LEGACY_FIELDS.items():
            if values.get(old) is not None:
                settings[name] = values[old]
            values.pop(old, None)
        values["settings"] = settings
        return cls(**values)

    def setting(self, name: str) -> Any:
        return self.settings.get(name)

    @property
    def warmup_calls(self) -> int:
        return sum(c.count for c in self.calls)

    def summary(self) -> str:
        """``profiling executor off; each shape ×1``: the recipe in a few words."""
        parts = []
        for name, value in self.settings.items():
            parts.append(setting_words(name, value))
        if self.freeze:
            parts.append("freeze")
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


def setting_words(name: str, value: Any) -> str:
    """``profiling executor off``, ``intra_op_threads=1``: one carried setting in a few words,
    as its knob's ``RecipeForm`` says it."""
    form = KNOB_BY_NAME[name].recipe if name in KNOB_BY_NAME else None
    if form is not None:
        for said, words in form.words:
            if said == value:
                return words
        if form.words_format:
            return form.words_format.format(value=show_value(value))
    return f"{name}={show_value(value)}"


# -- the verdict in the header ----------------------------------------------------------------


@dataclass
class Provenance:
    """What a recipe file's header says of it: the verdict as measured and where it came from.

    ``outcome`` empty: a candidate warmscope is still verifying (the file it runs). ``runtime``:
    where the verified processes ran it (``python`` or ``cpp``); a C++ file derived from a
    Python warm-up says it never ran in C++."""

    outcome: str = ""
    verdict: str = ""
    """Why, where there is more to say than the outcome: ``L=32's first call is 1.21× its
    steady p50, 141 µs over: …``."""
    figures: list[str] = field(default_factory=list)
    """Per shape: its first call's excess over steady before and after the recipe."""
    command: list[str] = field(default_factory=list)
    torch: str = ""
    runtime: str = "python"
    processes: int = 0


def header_lines(recipe: Recipe, provenance: Provenance | None, target: str) -> list[str]:
    """The header's lines (plain text; each already escaped): what the file is, its verdict,
    where it came from, what the server sets, what was observed without it."""
    p = provenance or Provenance()
    out = [f"Warm-up recipe: {comment_text(recipe.summary())}.", ""]
    if not p.outcome:
        out.append("Verdict: none yet: a candidate that warmscope is verifying.")
    else:
        where = f"torch {comment_text(p.torch or 'unknown')}, {p.runtime} runtime"
        if p.processes:
            where += f", {p.processes} fresh processes"
        head = "NOT verified" if p.outcome == NOT_VERIFIED else p.outcome
        out.append(f"Verdict: {comment_text(head)} (warmscope, {where})")
        out.extend(f"  {comment_text(line)}" for line in textwrap.wrap(p.verdict, 90))
        for line in p.figures:
            out.append(f"  {comment_text(line)}")
    if p.command:
        out.append(f"Derived by: {comment_text(shlex.join(p.command))}")
    if target:
        out.append(f"Target: {comment_text(target)}")
    server = server_lines(recipe)
    if server:
        out.append("")
        out.append("Set by the server as it starts, before the model loads (verified with):")
        out.extend(f"    {comment_text(line)}" for line in server)
    if recipe.notes:
        out.append("")
        out.append("Without it:")
        out.extend(f"  {comment_text(note)}" for note in recipe.notes)
    return out


def server_lines(recipe: Recipe, cpp: bool = False) -> list[str]:
    """The lines a server runs at start for the settings a recipe cannot set once the model is
    loaded (``RecipeForm.server``), each with its value as a literal."""
    out = []
    for k in KNOBS:
        value = recipe.settings.get(k.name)
        if value is None or k.recipe.carry != SERVER:
            continue
        if cpp:
            out.append(k.recipe.server_cpp.format(value=cpp_literal(k, value)))
        else:  # repr: single quotes, which a docstring keeps as they are
            out.append(k.recipe.server.format(value=repr(k.torch_value(value))))
    return out


def split_header(text: str) -> tuple[str, str]:
    """A recipe file as its header and its body: the docstring (Python), the leading ``//``
    lines (C++). The body is what was verified; an emitted file gets a new header only."""
    if text.startswith('"""'):
        end = text.index('\n"""\n') + 5
        return text[:end], text[end:]
    lines = text.splitlines(keepends=True)
    n = 0
    while n < len(lines) and lines[n].startswith("//"):
        n += 1
    return "".join(lines[:n]), "".join(lines[n:])


# -- the Python file ----------------------------------------------------------------------------

INPUT_MAKER = (
    "INPUT_TABLE = {\n"
    + "".join(f"    {py_literal(k)}: {py_literal(v)},\n" for k, v in input_spec.TABLE.items())
    + "}\n\n\n"
    + inspect.getsource(inputs.build_inputs)
    + '''

def make_inputs(dims):
    """One call's arguments for a shape, as the measured runs made them (same seed, values)."""
    return build_inputs(torch, SPECS, DEVICE, DTYPE, dims, SEED)
'''
)
"""The agent's own maker of inputs (``core/child/inputs.py``) and the rule's table it reads
(``core/child/input_spec.py``), carried whole by the file: the same seed and specs make the
same tensors in the measured runs and in the server."""

GRAD = {
    "no_grad": "torch.no_grad()",
    "inference_mode": "torch.inference_mode()",
    "enabled": "contextlib.nullcontext()",
}

PREPARE_HEAD = (
    "",
    "",
    "def prepare(model, example_inputs=None):",
    '    """Set the process-wide settings, compile, run the warm-up calls; the model to serve.',
    "",
    "    example_inputs: ``(args, kwargs)``, only where SPECS is empty (the model brought its",
    '    own inputs)."""',
)
"""``prepare``'s signature and docstring, after two blank lines."""


def emit_python(recipe: Recipe, *, target: str = "", provenance: Provenance | None = None) -> str:
    """The recipe as a Python file: imports torch and the standard library only. Every value
    from a path, record, model or warning is a literal (``py_literal``) or escaped text in a
    comment (``comment_text``)."""
    head = header_lines(recipe, provenance, target)
    lines: list[str] = ['"""' + head[0], *head[1:]]
    lines.extend(["", "Use before serving:", "", "    model = prepare(model)", ""])
    lines.extend(textwrap.wrap(f"model: {comment_text(takes(recipe))}.", 96))
    lines.append('"""')
    lines.append("")
    lines.extend(_python_body(recipe))
    return "\n".join(lines)


def _python_body(recipe: Recipe) -> list[str]:
    """Everything after the docstring: imports, constants, the input maker, ``prepare``."""
    server = [k for k in KNOBS if k.recipe.carry == SERVER and recipe.settings.get(k.name)]
    lines = [*_imports(recipe, server), *_constants(recipe, server)]
    if recipe.specs:
        lines.extend(["", "", *INPUT_MAKER.strip("\n").splitlines()])
    lines.extend(PREPARE_HEAD)
    lines.extend(f"    {line}" if line else "" for line in _prepare_steps(recipe, server))
    lines.append("")
    return lines


def _imports(recipe: Recipe, server: list[Knob]) -> list[str]:
    """The file's imports: the standard library modules its steps use, then torch."""
    stdlib = (
        (["contextlib"] if recipe.grad_mode == "enabled" else [])
        + (
            ["os"]
            if recipe.cache_artifact or any(k.read.startswith("env:") for k in server)
            else []
        )
        + (["warnings"] if server else [])
    )
    lines: list[str] = []
    if recipe.specs:  # the input maker's annotations
        lines.extend(["from __future__ import annotations", ""])
    lines.extend(f"import {name}" for name in stdlib)
    if recipe.specs:
        lines.append("from typing import Any")
    if stdlib or recipe.specs:
        lines.append("")
    return [*lines, "import torch", ""]


def _constants(recipe: Recipe, server: list[Knob]) -> list[str]:
    """The module's constants, each value a literal: the inputs' specs and shapes, seed, device,
    dtype, the artifact's path, and each server-set knob's value and the line that sets it."""
    lines = [
        f"SPECS = {py_literal(recipe.specs)}",
        f"SHAPES = {py_literal(recipe.shapes)}",
        f"SEED = {py_literal(int(recipe.seed))}",
        f"DEVICE = {py_literal(recipe.device)}",
        f"DTYPE = {py_literal(recipe.dtype)}",
    ]
    if recipe.cache_artifact:
        lines.append("# Beside this file, named after it: NAME.py -> NAME.cache.bin.")
        lines.append(
            f"ARTIFACT = os.path.splitext(os.path.abspath(__file__))[0] + {py_literal(ARTIFACT_SUFFIX)}"
        )
    for k in server:
        value = recipe.settings[k.name]
        lines.append(f"{k.name.upper()} = {py_literal(k.torch_value(value))}")
    for k, line in zip(server, server_lines(recipe), strict=True):
        lines.append(f"{k.name.upper()}_LINE = {py_literal(line)}")
    return lines


def _prepare_steps(recipe: Recipe, server: list[Knob]) -> list[str]:
    """The statements of ``prepare``, unindented, in the order it runs them."""
    return [
        *_server_checks(server),
        *_setting_steps(recipe),
        *_placement_steps(recipe),
        *_input_steps(recipe),
        *_jit_steps(recipe),
        *_compile_steps(recipe),
        *_mark_dynamic_steps(recipe),
        *_warmup_call_steps(recipe),
        *_after_warmup_steps(recipe),
        "return model",
    ]


def _server_checks(server: list[Knob]) -> list[str]:
    """A warning for each server-set knob whose value in force is not the one verified."""
    out: list[str] = []
    for k in server:
        # Read back, not set: these take effect only at start, where the server sets them.
        out.append(f"if {_read_expression(k)} != {k.name.upper()}:")
        out.append(f'    warnings.warn("verified with " + {k.name.upper()}_LINE + " at start")')
    return out


def _setting_steps(recipe: Recipe) -> list[str]:
    """The statements that set the knobs ``prepare`` can set, each after the reason it is set."""
    out: list[str] = []
    for k in KNOBS:
        value = recipe.settings.get(k.name)
        statement = k.python_statement
        if value is None or statement is None:
            continue
        out.extend(f"# {line}" for line in k.recipe.why)
        out.append(statement.format(value=py_literal(k.torch_value(value))))
    return out


def _placement_steps(recipe: Recipe) -> list[str]:
    """Eval mode, then the model moved to the recipe's device and dtype."""
    out: list[str] = []
    if recipe.eval:
        out.append("try:")
        out.append("    model.eval()")
        out.append("except NotImplementedError:  # an exported program runs as it was exported")
        out.append("    pass")
    if recipe.device != "cpu" or recipe.dtype:
        out.append('if not isinstance(model, torch.jit.ScriptModule) and hasattr(model, "to"):')
        out.append("    model = model.to(DEVICE)")
        if recipe.dtype:
            out.append("    model = model.to(getattr(torch, DTYPE))")
    return out


def _input_steps(recipe: Recipe) -> list[str]:
    """Each declared shape's inputs made once, before anything traces or calls the model."""
    if not recipe.specs:
        return []
    return [
        "",
        "inputs = {}",
        "for dims in SHAPES or [{}]:",
        "    inputs[tuple(sorted(dims.items()))] = make_inputs(dims)",
    ]


def _compile_steps(recipe: Recipe) -> list[str]:
    """``torch.compile`` with the recipe's options, after loading the cache artifact if any."""
    if recipe.mode != "compile":
        return []
    out: list[str] = []
    step = out.append
    if recipe.cache_artifact:
        step("# Compiled code from an earlier process: the compiles below read it back.")
        step("loaded = False")
        step("if os.path.exists(ARTIFACT):")
        step('    if not hasattr(torch.compiler, "load_cache_artifacts"):')
        step("        raise RuntimeError(")
        step('            f"torch {torch.__version__} has no torch.compiler.load_cache_artifacts"')
        step("        )")
        step('    with open(ARTIFACT, "rb") as f:')
        step("        torch.compiler.load_cache_artifacts(f.read())")
        step("    loaded = True")
    options = ", ".join(f"{_keyword(k)}={py_literal(v)}" for k, v in recipe.compile_options.items())
    why = (
        "one graph for every size"
        if recipe.compile_options.get("dynamic")
        else "a graph per size seen below"
    )
    step(f"model = torch.compile(model{', ' + options if options else ''})  # {why}")
    return out


def _mark_dynamic_steps(recipe: Recipe) -> list[str]:
    """``torch._dynamo.mark_dynamic`` on the warm-up inputs for each declared range."""
    if not recipe.mark_dynamic:
        return []
    return [
        "# One symbolic size for the declared range (size 1 would specialize: left out).",
        f"for mark in {py_literal(recipe.mark_dynamic)}:",
        "    for args, kwargs in inputs.values():",
        "        values = args + list(kwargs.values())",
        "        torch._dynamo.mark_dynamic(",
        '            values[mark["input"]], mark["axis"], min=mark["min"], max=mark["max"]',
        "        )",
    ]


def _warmup_call_steps(recipe: Recipe) -> list[str]:
    """The warm-up calls, shape by shape, under the recipe's grad mode."""
    out = ["", f"with {GRAD.get(recipe.grad_mode, 'torch.no_grad()')}:"]
    if not recipe.calls:
        out.append("    pass")
    for call in recipe.calls:
        what = dims_text(call.dims)
        if call.why:
            out.append(f"    # {comment_text(what or 'the input')}: {comment_text(call.why)}")
        out.append(f"    {_arguments(recipe, call.dims)}")
        out.append(f"    for _ in range({int(call.count)}):")
        out.append("        model(*args, **kwargs)")
    return out


def _after_warmup_steps(recipe: Recipe) -> list[str]:
    """What follows the calls: a CUDA sync, the cache artifact saved, recompiles made errors."""
    out: list[str] = []
    step = out.append
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
    return out


def _keyword(name: str) -> str:
    """A ``torch.compile`` keyword from a recipe's options: an identifier, or refused."""
    if not name.isidentifier():
        raise ValueError(f"not a keyword argument: {name!r}")
    return name


def _read_expression(k: Knob) -> str:
    """The expression that reads a server-set knob's value in force (``Knob.read``)."""
    how, _, path = k.read.partition(":")
    if how == "env":
        return f"os.environ.get({py_literal(path)})"
    if how == "call":
        return f"{path}()"
    if how == "attr":
        return path
    raise ValueError(f"{k.name}: no read-back for a server setting ({k.read!r})")


def cpp_literal(k: Knob, value: Any) -> str:
    """A knob's value as a C++ expression: its declared rendering, else by its type."""
    if k.recipe.cpp_value is not None:
        return k.recipe.cpp_value(k.torch_value(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    return c_string(str(value))


def _arguments(recipe: Recipe, dims: dict[str, int]) -> str:
    """The line that picks one call's arguments: the shape's inputs, or the caller's."""
    if recipe.specs:
        return f"args, kwargs = inputs[{py_literal(tuple(sorted(dims.items())))}]"
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
            step(f"            strict={py_literal(bool(recipe.trace_strict))},")
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
