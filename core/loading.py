"""Loading in the child: the target's module, its inputs, and the module put in its mode
(scripted, traced, frozen, compiled), each step timed as a setup phase.

Child side: loaded by the agent by path (standard library only at import; torch is passed in).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from .channel import Channel, Phases
from .hooks import install_compile_hooks
from .outcome import UsageError


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
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise UsageError(f"no module named {exc.name!r} (target {target['spec']})") from None
        raise


def load_model(torch: Any, target: dict[str, Any], device: str) -> tuple[Any, Any]:
    """The module to run, and the factory's own example inputs if it has any."""
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
    module = load_factory_module(target)
    factory_name = target["factory"]
    factory = getattr(module, factory_name, None)
    where = target.get("path") or target.get("module")
    if factory is None:
        raise UsageError(f"{where} defines no {factory_name!r}")
    model = factory() if callable(factory) and not isinstance(factory, torch.nn.Module) else factory
    if isinstance(model, tuple) and len(model) == 2 and isinstance(model[0], torch.nn.Module):
        model, examples = model
    else:
        examples = getattr(module, "example_inputs", None)
        examples = examples() if callable(examples) else examples
    if not isinstance(model, torch.nn.Module):
        raise UsageError(
            f"{where}:{factory_name} returned {type(model).__name__}, not a torch.nn.Module"
        )
    return model, examples


def build_inputs(
    torch: Any, specs: list[dict[str, Any]], device: str, dtype: str | None
) -> list[Any]:
    """Integers are zeros (valid indices for embeddings); floats a fixed-seed normal."""
    generator = torch.Generator().manual_seed(0)
    tensors = []
    for spec in specs:
        tdtype = getattr(torch, spec["dtype"])
        shape = spec["shape"]
        if tdtype.is_floating_point:
            tensor = torch.randn(shape, generator=generator, dtype=torch.float32).to(tdtype)
            if dtype:
                tensor = tensor.to(getattr(torch, dtype))
        else:
            tensor = torch.zeros(shape, dtype=tdtype)
        tensors.append(tensor.to(device))
    return tensors


def prepare(
    torch: Any, model: Any, inputs: list[Any], cfg: dict[str, Any], phase: Phases, channel: Channel
) -> Any:
    """Put the module in the chosen mode; each step timed as its own phase."""
    values = cfg["knobs"]
    mode = cfg["mode"]
    device = values["device"]
    is_script = isinstance(model, torch.jit.ScriptModule)
    if values.get("eval", True):
        model.eval()
    if not is_script:
        with phase("to device"):
            model = model.to(device)
            if values.get("dtype"):
                model = model.to(getattr(torch, values["dtype"]))
    if mode == "script" and not is_script:
        with phase("script"):
            model = torch.jit.script(model)
    elif mode == "trace":
        with phase("trace"), grad_context(torch, values["grad_mode"]):
            model = torch.jit.trace(model, tuple(inputs), check_trace=False)
    if values.get("freeze") or values.get("optimize_for_inference"):
        if not isinstance(model, torch.jit.ScriptModule):
            raise UsageError(
                f"freeze/optimize_for_inference need --mode script or trace, not {mode}"
            )
        if values.get("freeze"):
            with phase("freeze"):
                model = torch.jit.freeze(model)
        if values.get("optimize_for_inference"):
            with phase("optimize_for_inference"):
                model = torch.jit.optimize_for_inference(model)
    if mode == "compile":
        install_compile_hooks(torch, channel)
        options: dict[str, Any] = {"backend": values.get("compile_backend") or "inductor"}
        if values.get("compile_mode"):
            options["mode"] = values["compile_mode"]
        if values.get("compile_dynamic") is not None:
            options["dynamic"] = values["compile_dynamic"]
        if values.get("compile_fullgraph"):
            options["fullgraph"] = True
        with phase("compile setup"):
            model = torch.compile(model, **options)
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
    with contextlib.suppress(Exception):
        env["mkldnn"] = torch.backends.mkldnn.is_available()
    if device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(index)
        env["gpu"] = props.name
        env["gpu_memory_mb"] = props.total_memory // 2**20
        env["cudnn"] = torch.backends.cudnn.version()
    return env


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
