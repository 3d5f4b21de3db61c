"""The executor knobs: each declared once, with how the agent applies it.

Everything about a knob lives in its ``Knob`` entry: the CLI's ``--set``, validation, the run
record, the TUI's settings form and the agent's application all read it from here. This module
uses only the standard library (and its sibling ``outcome``), because the agent (which may run
under another interpreter) loads it by file path.

A knob whose value is ``None`` is left at torch's own default: the agent does not touch it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .outcome import UsageError

BOOL_WORDS = {
    "1": True,
    "true": True,
    "on": True,
    "yes": True,
    "0": False,
    "false": False,
    "off": False,
    "no": False,
}
DEFAULT_WORDS = {"", "default", "none"}


class KnobError(UsageError):
    """A knob name or value that cannot be used; the message names it."""


STATEMENT = "statement"
"""A recipe's ``prepare`` applies it: the Python statement follows from ``Knob.apply``, the C++
one from ``RecipeForm.cpp``."""
SERVER = "server"
"""Set by the server as it starts (before the model loads or CUDA starts): the recipe's header
names the line, and ``prepare`` warns where the process runs without it."""
STEP = "step"
"""One of the recipe's own steps (scripting, tracing, freezing, compiling, the device, the
inputs, the grad mode around its calls)."""
MEASURE = "measure"
"""How warmscope measures, not how a server runs: nothing to carry."""


@dataclass(frozen=True)
class RecipeForm:
    """How a warm-up recipe carries a knob's value.

    ``cpp``: the C++ statement with ``{value}`` where the value goes (``None``: libtorch has no
    such setting, and ``cpp_refusal`` says whose it is); ``cpp_value`` renders the value as a
    C++ expression where its type alone does not tell how. ``server``: for ``SERVER``, the line a
    server runs with ``{value}`` (Python; the C++ line is ``server_cpp``).
    """

    carry: str
    cpp: str | None = None
    cpp_value: Callable[[Any], str] | None = None
    cpp_refusal: str = ""
    server: str = ""
    server_cpp: str = ""
    step: str = ""
    """For ``STEP``: which of the recipe's steps carries it, as ``warmscope knobs`` says."""
    recipe_applies: bool = False
    """A ``STEP`` the recipe takes itself (freezing): a process that runs a recipe leaves it to
    the recipe, as it leaves every ``STATEMENT``, so what is verified is what the file does."""
    words: tuple[tuple[Any, str], ...] = ()
    """How the recipe's summary says a value (``(False, "profiling executor off")``); a value
    not named here is said ``words_format``, else ``name=value``."""
    words_format: str = ""
    """The summary's words for any value, with ``{value}`` (``fusion {value}``)."""
    why: tuple[str, ...] = ()
    """Why the setting is there: the comment above its statement in a Python recipe."""

    @property
    def left_to_recipe(self) -> bool:
        return self.carry == STATEMENT or self.recipe_applies


@dataclass(frozen=True)
class Knob:
    """One executor setting.

    ``apply`` tells the agent what to do with a value that is not ``None``:
    ``call:dotted.path`` calls the function with the value, ``attr:dotted.path`` assigns it,
    ``env:NAME`` sets an environment variable of the child before torch is imported, and
    ``agent`` means the agent's loop reads the value itself (mode, device, grad mode, ...).
    """

    name: str
    type: str  # "bool" | "int" | "str" | "choice"
    default: Any
    help: str
    apply: str
    choices: tuple[str, ...] = ()
    group: str = "torchscript"
    minimum: int | None = None
    convert: Callable[[Any], Any] | None = None
    """Checks a value beyond its type (``KnobError`` names what is wrong) and returns what torch
    takes: ``fusion_strategy``'s text becomes torch's list of stages."""
    recipe: RecipeForm = RecipeForm(STEP)
    read: str = ""
    """How torch tells the value in force: ``call:PATH`` (a getter), ``attr:PATH``,
    ``swap:PATH`` (a setter that returns the value it replaces), ``env:NAME``; what a recipe's
    test reads back after ``prepare``."""

    @property
    def python_statement(self) -> str | None:
        """``torch.set_num_threads({value})``: the Python form of ``apply`` (``None`` where
        the recipe does not apply it in ``prepare``)."""
        if self.recipe.carry != STATEMENT:
            return None
        how, _, path = self.apply.partition(":")
        return f"{path}({{value}})" if how == "call" else f"{path} = {{value}}"

    def parse(self, text: str) -> Any:
        """Turn a command-line or form value into this knob's typed value."""
        raw = text.strip()
        if raw.lower() in DEFAULT_WORDS and self.default is None:
            return None
        if self.type == "bool":
            word = raw.lower()
            if word not in BOOL_WORDS:
                raise KnobError(f"{self.name}: expected on/off (or default), got {text!r}")
            return BOOL_WORDS[word]
        if self.type == "int":
            try:
                value = int(raw)
            except ValueError:
                raise KnobError(f"{self.name}: expected an integer, got {text!r}") from None
            return self.check(value)
        if self.type == "choice":
            return self.check(raw)
        return self.check(raw)

    def check(self, value: Any) -> Any:
        """Validate an already-typed value (from JSON, a preset or ``parse``)."""
        if value is None:
            return None
        if self.type == "bool" and not isinstance(value, bool):
            raise KnobError(f"{self.name}: expected on/off, got {value!r}")
        if self.type == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise KnobError(f"{self.name}: expected an integer, got {value!r}")
            if self.minimum is not None and value < self.minimum:
                raise KnobError(f"{self.name}: must be at least {self.minimum}, got {value}")
        if self.type == "choice" and value not in self.choices:
            raise KnobError(f"{self.name}: {value!r} is not one of {', '.join(self.choices)}")
        if self.type == "str" and not isinstance(value, str):
            raise KnobError(f"{self.name}: expected text, got {value!r}")
        if self.convert is not None:
            self.convert(value)
        return value

    def torch_value(self, value: Any) -> Any:
        """The value as the torch function or attribute it sets takes it."""
        return self.convert(value) if self.convert is not None else value

    def show(self, value: Any) -> str:
        """A value as a person would type it back."""
        return show_value(value)


def show_value(value: Any) -> str:
    """A setting's value as a person would type it: ``on``/``off``, ``default`` for ``None``."""
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def check_device(value: str) -> str:
    head, _, index = value.partition(":")
    if head not in ("cpu", "cuda") or (index and not index.isdigit()) or (head == "cpu" and index):
        raise KnobError(f"device: expected cpu, cuda or cuda:N, got {value!r}")
    return value


def parse_fusion_strategy(value: str) -> list[tuple[str, int]]:
    """``STATIC,2;DYNAMIC,10`` -> ``[("STATIC", 2), ("DYNAMIC", 10)]``, as torch.jit takes it."""
    stages: list[tuple[str, int]] = []
    for part in value.split(";"):
        kind, _, depth = part.strip().partition(",")
        kind = kind.strip().upper()
        if kind not in ("STATIC", "DYNAMIC") or not depth.strip().isdigit():
            raise KnobError(
                f"fusion_strategy: expected stages like STATIC,2;DYNAMIC,10, got {value!r}"
            )
        stages.append((kind, int(depth)))
    return stages


def cpp_fusion_strategy(stages: list[tuple[str, int]]) -> str:
    """torch's stages as libtorch's ``FusionStrategy`` (kinds checked by the parser above)."""
    parts = ", ".join(
        f"{{torch::jit::FusionBehavior::{kind}, {int(depth)}}}" for kind, depth in stages
    )
    return f"torch::jit::FusionStrategy{{{parts}}}"


QUANTIZED_ENGINES_CPP = {"x86": "X86", "fbgemm": "FBGEMM", "qnnpack": "QNNPACK", "onednn": "ONEDNN"}


def cpp_quantized_engine(value: str) -> str:
    return f"at::QEngine::{QUANTIZED_ENGINES_CPP[value]}"


MEASURED = RecipeForm(MEASURE)

RUNTIMES = ("python", "cpp")

KNOBS: tuple[Knob, ...] = (
    # How the model runs.
    Knob(
        "runtime",
        "choice",
        "python",
        "the child that runs the model: python (the Python agent), or cpp (a libtorch "
        "program built on demand against the same torch: TorchScript archives and "
        "AOTInductor packages, without Python)",
        "agent",
        RUNTIMES,
        group="run",
        recipe=MEASURED,
    ),
    Knob(
        "mode",
        "choice",
        None,
        "how the module runs: as is (eager), torch.jit.script, "
        "torch.jit.trace or torch.compile; default: the target's own (a .pt archive is "
        "scripted, a factory runs eager, a sample uses its suggested mode)",
        "agent",
        ("eager", "script", "trace", "compile"),
        group="run",
        recipe=RecipeForm(STEP, step="scripts, traces or compiles the module given"),
    ),
    Knob(
        "device",
        "str",
        "cpu",
        "device for the model and inputs: cpu, cuda or cuda:N",
        "agent",
        group="run",
        convert=check_device,
        recipe=RecipeForm(STEP, step="moves the module and makes its inputs there"),
    ),
    Knob(
        "device_time",
        "bool",
        None,
        "CUDA events around each call: device time beside host time (on CUDA runs by "
        "default; off times the host alone)",
        "agent",
        group="run",
        recipe=MEASURED,
    ),
    Knob(
        "dtype",
        "choice",
        None,
        "cast the model's floating parameters and float inputs",
        "agent",
        ("float32", "float16", "bfloat16", "float64"),
        group="run",
        recipe=RecipeForm(STEP, step="casts the module and makes its inputs so"),
    ),
    Knob(
        "grad_mode",
        "choice",
        "no_grad",
        "autograd mode around each forward pass",
        "agent",
        ("no_grad", "inference_mode", "enabled"),
        group="run",
        recipe=RecipeForm(STEP, step="the warm-up calls run under it; serve under it too"),
    ),
    Knob(
        "eval",
        "bool",
        True,
        "call model.eval() before running (dropout, batch-norm stats)",
        "agent",
        group="run",
        recipe=RecipeForm(STEP, step="model.eval()"),
    ),
    Knob(
        "intra_op_threads",
        "int",
        None,
        "torch.set_num_threads: threads inside one operator",
        "call:torch.set_num_threads",
        group="run",
        minimum=1,
        recipe=RecipeForm(STATEMENT, cpp="at::set_num_threads({value});"),
        read="call:torch.get_num_threads",
    ),
    Knob(
        "inter_op_threads",
        "int",
        None,
        "torch.set_num_interop_threads: threads across operators (set before any parallel work)",
        "call:torch.set_num_interop_threads",
        group="run",
        minimum=1,
        recipe=RecipeForm(
            SERVER,
            server="torch.set_num_interop_threads({value})",
            server_cpp="at::set_num_interop_threads({value});",
        ),
        read="call:torch.get_num_interop_threads",
    ),
    Knob(
        "matmul_precision",
        "choice",
        None,
        "torch.set_float32_matmul_precision",
        "call:torch.set_float32_matmul_precision",
        ("highest", "high", "medium"),
        group="run",
        recipe=RecipeForm(STATEMENT, cpp="at::globalContext().setFloat32MatmulPrecision({value});"),
        read="call:torch.get_float32_matmul_precision",
    ),
    # TorchScript executor.
    Knob(
        "profiling_executor",
        "bool",
        None,
        "the profiling executor: profile the first "
        "run(s), then optimize and specialize (off: the legacy executor)",
        "call:torch._C._jit_set_profiling_executor",
        recipe=RecipeForm(
            STATEMENT,
            cpp="torch::jit::getExecutorMode() = {value};",
            words=((False, "profiling executor off"),),
            why=(
                "The profiling executor's profiling and optimizing runs are the slow first calls;",
                "off, the legacy executor optimizes once, for every shape alike.",
            ),
        ),
        read="swap:torch._C._jit_set_profiling_executor",
    ),
    Knob(
        "graph_optimizer",
        "bool",
        None,
        "graph executor optimizations (the Python form of "
        "C++ GraphOptimizerEnabledGuard); off: run the graph as scripted",
        "call:torch._C._set_graph_executor_optimize",
        recipe=RecipeForm(STATEMENT, cpp="torch::jit::setGraphExecutorOptimize({value});"),
        read="call:torch._C._get_graph_executor_optimize",
    ),
    Knob(
        "num_profiled_runs",
        "int",
        None,
        "how many runs the profiling executor profiles before it optimizes",
        "call:torch._C._jit_set_num_profiled_runs",
        minimum=0,
        recipe=RecipeForm(
            STATEMENT,
            cpp="torch::jit::getNumProfiledRuns() = {value};",
            why=("Fewer profiled runs before the optimized graph takes over.",),
        ),
        read="call:torch._C._jit_get_num_profiled_runs",
    ),
    Knob(
        "fusion_strategy",
        "str",
        None,
        "torch.jit.set_fusion_strategy, e.g. STATIC,2;DYNAMIC,10: "
        "how many re-specializations for new shapes",
        "call:torch.jit.set_fusion_strategy",
        convert=parse_fusion_strategy,
        recipe=RecipeForm(
            STATEMENT,
            # setFusionStrategy takes an lvalue: a block with a local of its own.
            cpp="{{ auto stages = {value}; torch::jit::setFusionStrategy(stages); }}",
            cpp_value=cpp_fusion_strategy,
            words_format="fusion {value}",
            why=("How many shape specializations the fuser makes before it goes dynamic.",),
        ),
        read="swap:torch._C._jit_set_fusion_strategy",
    ),
    Knob(
        "texpr_fuser",
        "bool",
        None,
        "the TensorExpr (NNC) fuser",
        "call:torch._C._jit_set_texpr_fuser_enabled",
        recipe=RecipeForm(STATEMENT, cpp="torch::jit::setTensorExprFuserEnabled({value});"),
        read="call:torch._C._jit_texpr_fuser_enabled",
    ),
    Knob(
        "cpu_fusion",
        "bool",
        None,
        "allow fusion on CPU (torch._C._jit_override_can_fuse_on_cpu)",
        "call:torch._C._jit_override_can_fuse_on_cpu",
        recipe=RecipeForm(STATEMENT, cpp="torch::jit::overrideCanFuseOnCPU({value});"),
        read="call:torch._C._jit_can_fuse_on_cpu",
    ),
    Knob(
        "onednn_fusion",
        "bool",
        None,
        "oneDNN graph fusion (torch.jit.enable_onednn_fusion)",
        "call:torch.jit.enable_onednn_fusion",
        recipe=RecipeForm(STATEMENT, cpp_refusal="torch.jit.enable_onednn_fusion"),
        read="call:torch.jit.onednn_fusion_enabled",
    ),
    Knob(
        "trace_strict",
        "bool",
        None,
        "torch.jit.trace strict: off lets a traced model return dicts or lists "
        "(transformers outputs)",
        "agent",
        recipe=RecipeForm(STEP, step="torch.jit.trace(strict=...)", cpp_refusal="torch.jit.trace"),
    ),
    Knob(
        "freeze",
        "bool",
        False,
        "torch.jit.freeze the scripted/traced module (inlines weights and attributes)",
        "agent",
        recipe=RecipeForm(STEP, step="torch.jit.freeze", recipe_applies=True),
    ),
    Knob(
        "optimize_for_inference",
        "bool",
        False,
        "torch.jit.optimize_for_inference (freezes first)",
        "agent",
        recipe=RecipeForm(STEP, step="torch.jit.optimize_for_inference", recipe_applies=True),
    ),
    # Backends.
    Knob(
        "cudnn_benchmark",
        "bool",
        None,
        "cuDNN autotuning: slower first passes per shape, faster afterwards",
        "attr:torch.backends.cudnn.benchmark",
        group="backends",
        recipe=RecipeForm(
            STATEMENT,
            cpp="at::globalContext().setBenchmarkCuDNN({value});",
            words=((True, "cuDNN autotuning on"), (False, "cuDNN autotuning off")),
            why=(
                "cuDNN autotuning: on, each shape's first call benchmarks its convolutions (the",
                "warm-up calls below pay that for every declared shape); off, cuDNN's heuristics "
                "choose.",
            ),
        ),
        read="attr:torch.backends.cudnn.benchmark",
    ),
    Knob(
        "quantized_engine",
        "choice",
        None,
        "torch.backends.quantized.engine",
        "attr:torch.backends.quantized.engine",
        ("x86", "fbgemm", "qnnpack", "onednn"),
        group="backends",
        recipe=RecipeForm(
            SERVER,
            server="torch.backends.quantized.engine = {value}",
            server_cpp="at::globalContext().setQEngine({value});",
            cpp_value=cpp_quantized_engine,
        ),
        read="attr:torch.backends.quantized.engine",
    ),
    Knob(
        "cuda_module_loading",
        "choice",
        None,
        "CUDA_MODULE_LOADING: LAZY loads kernels on "
        "first use (slower first passes), EAGER at CUDA init",
        "env:CUDA_MODULE_LOADING",
        ("LAZY", "EAGER"),
        group="backends",
        recipe=RecipeForm(
            SERVER,
            server="os.environ['CUDA_MODULE_LOADING'] = {value}",
            server_cpp='setenv("CUDA_MODULE_LOADING", {value}, 1);',
        ),
        read="env:CUDA_MODULE_LOADING",
    ),
    # torch.compile.
    Knob(
        "compile_backend",
        "str",
        "inductor",
        "torch.compile backend (inductor, eager, aot_eager, ...)",
        "agent",
        group="compile",
        recipe=RecipeForm(STEP, step="torch.compile(backend=...)", cpp_refusal="torch.compile"),
    ),
    Knob(
        "compile_mode",
        "choice",
        None,
        "torch.compile mode",
        "agent",
        ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
        group="compile",
        recipe=RecipeForm(STEP, step="torch.compile(mode=...)", cpp_refusal="torch.compile"),
    ),
    Knob(
        "compile_dynamic",
        "bool",
        None,
        "torch.compile dynamic shapes (default: automatic)",
        "agent",
        group="compile",
        recipe=RecipeForm(STEP, step="torch.compile(dynamic=...)", cpp_refusal="torch.compile"),
    ),
    Knob(
        "compile_fullgraph",
        "bool",
        False,
        "torch.compile fullgraph: a graph break is an error",
        "agent",
        group="compile",
        recipe=RecipeForm(STEP, step="torch.compile(fullgraph=...)", cpp_refusal="torch.compile"),
    ),
)

KNOB_BY_NAME: dict[str, Knob] = {k.name: k for k in KNOBS}


def knob(name: str) -> Knob:
    """The knob called ``name``; ``KnobError`` naming the close matches otherwise."""
    try:
        return KNOB_BY_NAME[name]
    except KeyError:
        # only for a misspelt name; the agent loads this module on its way up
        import difflib

        close = difflib.get_close_matches(name, KNOB_BY_NAME, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise KnobError(f"unknown knob {name!r}{hint}; `warmscope knobs` lists them") from None


def changed(values: dict[str, Any], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The knobs in ``values`` that differ from their defaults, in declaration order."""
    return {
        k.name: values.get(k.name)
        for k in KNOBS
        if k.name not in skip and values.get(k.name, k.default) != k.default
    }


def default_values() -> dict[str, Any]:
    return {k.name: k.default for k in KNOBS}


def compile_options(values: dict[str, Any]) -> dict[str, Any]:
    """``torch.compile``'s keyword arguments from the compile knobs (the child's compile call
    and a warm-up recipe's are the same call)."""
    options: dict[str, Any] = {"backend": values.get("compile_backend") or "inductor"}
    if values.get("compile_mode"):
        options["mode"] = values["compile_mode"]
    if values.get("compile_dynamic") is not None:
        options["dynamic"] = values["compile_dynamic"]
    if values.get("compile_fullgraph"):
        options["fullgraph"] = True
    return options
