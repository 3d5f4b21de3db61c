"""Loading in the child: the target's module, its inputs, and the module put in its mode
(scripted, traced, frozen, compiled), each step timed as a setup phase.

Child side: loaded by the agent by path (standard library only at import; torch is passed in).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from . import cpu_waits, pt2
from .channel import Channel, Phases
from .hooks import install_compile_hooks
from .inputs import build_inputs
from .knobs import compile_options
from .outcome import UsageError

Feed = tuple[list[Any], dict[str, Any]]
"""One call's arguments: positional, keyword."""
Examples = Feed | Callable[[], Feed | None] | None
"""A target's own inputs: none, a call's arguments, or how to build them when needed."""


def load_factory_module(target: dict[str, Any]) -> ModuleType:
    if target["kind"] in ("file", "sample"):
        path = Path(target["path"])
        name = f"_warmscope_target_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"cannot load {path} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        # The file's own folder on sys.path, as `python file.py` would have it.
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
        return module
    name = target["module"]
    # The current folder first, as `python -m` has it (the agent's own folder is not on the path).
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise UsageError(f"no module named {exc.name!r} (target {target['spec']})") from None
        raise


def load_model(
    torch: Any, target: dict[str, Any], device: str, channel: Channel
) -> tuple[Any, Examples]:
    """The module to run, and the target's own example inputs if it has any (an AOTInductor
    package's are read only where the run needs them)."""
    kind = target["kind"]
    if kind == "archive":
        try:
            return torch.jit.load(target["path"], map_location=device), None
        except RuntimeError as exc:
            raise UsageError(
                f"{target['path']}: not a loadable TorchScript archive: {exc}"
            ) from None
    if kind == "pickle":
        return torch.load(target["path"], map_location=device, weights_only=False), None
    if kind == "export":
        program = pt2.load_exported(torch, target["path"], channel)
        return program.module(), brought_inputs(torch, lambda: program.example_inputs)
    if kind == "aoti":
        package = pt2.load_aoti(torch, target["path"], device)
        build = pt2.aoti_inputs(torch, target["path"], package)
        return package, lambda: brought_inputs(torch, build)
    module = load_factory_module(target)
    factory_name = target["factory"]
    factory = getattr(module, factory_name, None)
    where = target.get("path") or target.get("module")
    if factory is None:
        raise UsageError(f"{where} defines no {factory_name!r}")
    model = factory() if callable(factory) and not isinstance(factory, torch.nn.Module) else factory
    examples: Feed | None = None
    if isinstance(model, tuple) and len(model) in (2, 3) and isinstance(model[0], torch.nn.Module):
        if len(model) == 3:
            model, args, kwargs = model
            examples = as_feed(torch, args)[0], as_feed(torch, kwargs)[1]
        else:
            model, brought = model
            examples = as_feed(torch, brought)
    else:
        brought = getattr(module, "example_inputs", None)
        brought = brought() if callable(brought) else brought
        examples = None if brought is None else as_feed(torch, brought)
    if not isinstance(model, torch.nn.Module):
        raise UsageError(
            f"{where}:{factory_name} returned {type(model).__name__}, not a torch.nn.Module"
        )
    return model, examples


def brought_inputs(torch: Any, get: Callable[[], Any]) -> Feed | None:
    """Inputs a target records, as a call's arguments; ``None`` where it records none, or
    none this torch can read back."""
    with contextlib.suppress(Exception):
        value = get()
        return None if value is None else as_feed(torch, value)
    return None


def as_feed(torch: Any, value: Any) -> Feed:
    """Example inputs as a call's arguments: a dict is keywords, a tuple/list positional, an
    ``(args, kwargs)`` pair both, anything else (a tensor) the one positional argument."""
    if isinstance(value, dict):
        return [], dict(value)
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], (tuple, list))
        and isinstance(value[1], dict)
    ):
        return list(value[0]), dict(value[1])
    if isinstance(value, (tuple, list)):
        return list(value), {}
    return [value], {}


def to_device(feed: Feed, device: str) -> Feed:
    args, kwargs = feed
    move = lambda t: t.to(device) if hasattr(t, "to") else t  # noqa: E731
    return [move(a) for a in args], {k: move(v) for k, v in kwargs.items()}


def load_inputs_file(torch: Any, path: str, device: str) -> Feed:
    """``--inputs FILE.pt``: loaded with ``weights_only=True`` (no code from the file runs)."""
    try:
        value = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(
            f"--inputs {path}: cannot load it with torch.load(weights_only=True): {first[:300]}"
        ) from None
    if isinstance(value, dict) and not all(isinstance(k, str) for k in value):
        raise UsageError(f"--inputs {path}: a dict of inputs needs string keys (argument names)")
    if not isinstance(value, (dict, tuple, list)) and not isinstance(value, torch.Tensor):
        raise UsageError(
            f"--inputs {path} holds a {type(value).__name__}: expected a tensor, a tuple/list "
            "or a dict of inputs"
        )
    return as_feed(torch, value)


def describe(torch: Any, feed: Feed) -> list[str]:
    """``float32[1,300,40]``, ``attention_mask=int64[1,128]``: what a call is given."""

    def one(value: Any) -> str:
        if isinstance(value, torch.Tensor):
            dtype = str(value.dtype).removeprefix("torch.")
            return f"{dtype}[{','.join(str(d) for d in value.shape)}]"
        return type(value).__name__

    args, kwargs = feed
    return [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]


def make_feeds(torch: Any, cfg: dict[str, Any], examples: Examples, device: str) -> list[Feed]:
    """The arguments of every shape the run uses (one when no dimension is symbolic)."""
    dtype = cfg["knobs"].get("dtype")
    seed = int(cfg.get("seed") or 0)
    if cfg.get("inputs_file"):
        return [load_inputs_file(torch, cfg["inputs_file"], device)]
    if cfg["inputs"]:
        shapes = cfg.get("shapes") or [{}]
        return [build_inputs(torch, cfg["inputs"], device, dtype, dims, seed) for dims in shapes]
    if callable(examples):
        examples = examples()
    if examples is not None:
        return [to_device(examples, device)]
    if cfg["target"]["kind"] == "aoti":
        raise UsageError(
            f"{cfg['target']['spec']}: the AOTInductor package records no fixed input shapes "
            "(no sample inputs, or a dynamic dimension): pass --input SPEC"
        )
    raise UsageError(f"{cfg['target']['spec']} has no example inputs: pass --input SPEC")


def shape_schedule(cfg: dict[str, Any], count: int) -> Callable[[int], int | None] | None:
    """Which shape iteration ``i`` uses; ``None`` from it: the run ends (``once``). ``None``
    itself for a run of one shape."""
    if count <= 1:
        return None
    schedule = cfg.get("schedule") or "cycle"
    if schedule == "random":
        rng = random.Random(int(cfg.get("seed") or 0))
        return lambda i: rng.randrange(count)
    if schedule == "ramp":
        block = max(1, math.ceil(int(cfg["iters"]) / count))
        return lambda i: min(i // block, count - 1)
    if schedule == "once":
        return lambda i: i if i < count else None
    return lambda i: i % count


def shape_key(dims: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in dims.items())


def prepare(
    torch: Any, model: Any, feed: Feed, cfg: dict[str, Any], phase: Phases, channel: Channel
) -> Any:
    """Put the module in the chosen mode; each step timed as its own phase."""
    values = cfg["knobs"]
    mode = cfg["mode"]
    device = values["device"]
    if cfg["target"]["kind"] == "aoti":
        if mode != "eager":
            raise UsageError(
                f"{cfg['target']['spec']} is an AOTInductor package, already compiled: "
                f"--mode {mode} does not apply"
            )
        return model  # compiled for its device and dtypes: nothing to put in a mode
    is_script = isinstance(model, torch.jit.ScriptModule)
    model = _place(torch, model, values, device, is_script, phase)
    if cfg.get("recipe") and mode in ("script", "trace"):
        # The recipe scripts or traces (and freezes) the module itself, as it will where it is
        # served: it is given the module as loaded, and what it takes is what is verified.
        return model
    if mode == "script" and not is_script:
        model = _script(torch, model, phase)
    elif mode == "trace":
        model = _trace(torch, model, feed, values, phase)
    model = _freeze(torch, model, values, mode, phase)
    if mode == "compile":
        install_compile_hooks(torch, channel)
        if not cfg.get("recipe"):  # with a recipe, the recipe makes the torch.compile call
            options = compile_options(values)
            with phase("compile setup"):
                model = torch.compile(model, **options)
    return model


def _place(
    torch: Any, model: Any, values: dict[str, Any], device: str, is_script: bool, phase: Phases
) -> Any:
    """The module in eval mode, then on its device and in its dtype (a TorchScript module is
    left where it was loaded)."""
    if values.get("eval", True):
        # An exported program's module has no eval(): it was exported in its own mode.
        with contextlib.suppress(NotImplementedError):
            model.eval()
    if not is_script:
        with phase("to device"):
            model = model.to(device)
            if values.get("dtype"):
                model = model.to(getattr(torch, values["dtype"]))
    return model


def _script(torch: Any, model: Any, phase: Phases) -> Any:
    """``--mode script``: the module scripted; a refusal said in one line, with what to try."""
    with phase("script"):
        try:
            return torch.jit.script(model)
        except Exception as exc:  # the frontend's NotSupportedError, RuntimeError, ...
            # A refusal of the mode, as trace's is: one line, the next thing to try.
            raise UsageError(
                f"--mode script: torch.jit.script refuses this model: "
                f"{_first_sentence(str(exc)) or type(exc).__name__}; --mode trace traces "
                "it instead (with --set trace_strict=off where it returns dicts), or "
                "--mode eager runs it as it is"
            ) from exc


def _trace(torch: Any, model: Any, feed: Feed, values: dict[str, Any], phase: Phases) -> Any:
    """``--mode trace``: the module traced with the first shape's inputs, under the run's grad
    mode; a strict refusal said as the knob that lifts it."""
    args, kwargs = feed
    if args and kwargs:
        raise UsageError(
            "--mode trace takes positional or keyword inputs, not both "
            "(torch.jit.trace has example_inputs or example_kwarg_inputs)"
        )
    options: dict[str, Any] = {"check_trace": False}
    if values.get("trace_strict") is not None:
        options["strict"] = values["trace_strict"]
    if kwargs:
        options["example_kwarg_inputs"] = kwargs
    with phase("trace"), grad_context(torch, values["grad_mode"]):
        try:
            return torch.jit.trace(model, tuple(args) if args else None, **options)
        except RuntimeError as exc:
            if "strict=False" not in str(exc) or values.get("trace_strict") is False:
                raise
            # torch's own advice ("pass strict=False to trace()") as warmscope's knob.
            raise UsageError(
                f"--mode trace: torch.jit.trace (strict) refuses this model: "
                f"{_first_sentence(str(exc))}; --set trace_strict=off traces it with "
                "strict=False"
            ) from exc


def _freeze(torch: Any, model: Any, values: dict[str, Any], mode: str, phase: Phases) -> Any:
    """``freeze`` and ``optimize_for_inference`` where set, each its own phase; refused on a
    module that is not TorchScript."""
    if not (values.get("freeze") or values.get("optimize_for_inference")):
        return model
    if not isinstance(model, torch.jit.ScriptModule):
        raise UsageError(f"freeze/optimize_for_inference need --mode script or trace, not {mode}")
    if values.get("freeze"):
        with phase("freeze"):
            model = torch.jit.freeze(model)
    if values.get("optimize_for_inference"):
        with phase("optimize_for_inference"):
            model = torch.jit.optimize_for_inference(model)
    return model


def _first_sentence(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first.split(". ")[0].rstrip(".: ")[:200]


def run_recipe(
    torch: Any, model: Any, feeds: list[Feed], cfg: dict[str, Any], phase: Phases
) -> Any:
    """``--recipe FILE.py``: its ``prepare(model)`` (settings, compile, warm-up calls), timed
    as the setup phase ``recipe``: its start-up cost. The module it returns is served.

    A recipe that builds no inputs of its own (the target brought them) is given the first
    shape's arguments as ``example_inputs``. A run that serves a shape the recipe does not
    declare is refused before any call: its first call would not be warmed.
    """
    path = Path(cfg["recipe"])
    spec = importlib.util.spec_from_file_location(f"_warmscope_recipe_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"--recipe {path}: cannot load it as a Python module")
    module = importlib.util.module_from_spec(spec)
    with phase("recipe"):
        spec.loader.exec_module(module)
        prepare_fn = getattr(module, "prepare", None)
        if not callable(prepare_fn):
            raise UsageError(f"--recipe {path} defines no prepare(model)")
        declared = getattr(module, "SHAPES", None)
        served = [shape_key(d) for d in cfg.get("shapes") or []]
        if declared:
            known = [shape_key(d) for d in declared]
            missing = [k for k in served if k not in known]
            if missing:
                raise UsageError(
                    f"--recipe {path} warms up {'; '.join(known)}; the run serves "
                    f"{'; '.join(missing)}, which it does not declare"
                )
        if getattr(module, "SPECS", None):
            model = prepare_fn(model)
        else:
            model = prepare_fn(model, example_inputs=feeds[0])
    if model is None:
        raise UsageError(f"--recipe {path}: prepare(model) returned None, not a model to serve")
    return model


def grad_context(torch: Any, grad_mode: str) -> Any:
    if grad_mode == "inference_mode":
        return torch.inference_mode()
    if grad_mode == "enabled":
        return contextlib.nullcontext()
    return torch.no_grad()


def environment(torch: Any, device: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", None),
        "torch_cuda": torch.version.cuda,
        "intra_op_threads": torch.get_num_threads(),
        "inter_op_threads": torch.get_num_interop_threads(),
        "quantized_engine": torch.backends.quantized.engine,
        "cuda_available": torch.cuda.is_available(),
    }
    cpus, bound = cpu_waits.usable_cpus()
    env["cpus_usable"] = {"cpus": cpus, "bound": bound}
    with contextlib.suppress(Exception):
        env["mkldnn"] = torch.backends.mkldnn.is_available()
    if device.startswith("cuda") and torch.cuda.is_available():
        env["cuda_device"] = cuda_facts(torch, device)
    return env


def cuda_facts(torch: Any, device: str) -> dict[str, Any]:
    """The CUDA facts that change a first call: the device and its capability, the CUDA and
    cuDNN versions, the module-loading mode in force (torch sets ``LAZY`` where the user set
    none), and whether cuDNN autotunes and TF32 is allowed. Under ``env.cuda_device`` in the
    record (the parent's NVML description of the GPU is ``env.gpu``)."""
    index = torch.device(device).index or 0
    props = torch.cuda.get_device_properties(index)
    facts: dict[str, Any] = {
        "name": props.name,
        "index": index,
        "capability": f"{props.major}.{props.minor}",
        "memory_mb": props.total_memory // 2**20,
        "multiprocessors": props.multi_processor_count,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "module_loading": os.environ.get("CUDA_MODULE_LOADING"),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
    }
    with contextlib.suppress(Exception):
        facts["matmul_precision"] = torch.get_float32_matmul_precision()
    return facts


def loaded_graphs(torch: Any, model: Any) -> dict[str, str]:
    """A TorchScript module's code and graph as loaded, before any run changes what executes."""
    if not isinstance(model, torch.jit.ScriptModule):
        return {}
    graphs: dict[str, str] = {}
    with contextlib.suppress(Exception):
        graphs["code"] = model.code
    with contextlib.suppress(Exception):
        graphs["graph"] = str(model.graph)
    return graphs


def fresh_feed(feed: Feed) -> Feed:
    """A new copy of every tensor of ``feed`` (``--fresh-inputs``): each call meets inputs the
    model has not seen, as traffic brings."""
    args, kwargs = feed

    def copy(value: Any) -> Any:
        return value.clone() if hasattr(value, "clone") else value

    return [copy(a) for a in args], {k: copy(v) for k, v in kwargs.items()}
