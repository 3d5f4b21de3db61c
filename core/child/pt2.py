"""``.pt2`` files in the child: exported programs (``torch.export.save``) and AOTInductor
packages (``torch._inductor.aoti_compile_and_package``), each loaded as torch loads it, with
torch's own error where it cannot, and the inputs each records.

Child side: loaded by the agent by path (standard library only at import; torch is passed in).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import platform
import re
import sys
import zipfile
from collections.abc import Callable
from typing import Any

from .channel import Channel, event
from .input_spec import DEFAULT_SEED, dtype_of
from .inputs import build_inputs
from .outcome import UsageError

Feed = tuple[list[Any], dict[str, Any]]
"""One call's arguments: positional, keyword."""

UNREGISTERED = re.compile(r"Deserializing ([A-Za-z_][\w.]*) in pytree is not registered")
"""torch's error for an output type (a ``ModelOutput``, a dataclass) no import has registered."""
MAX_AUTO_IMPORTS = 8
AOTI_DIR = re.compile(r"^[^/]+/data/aotinductor/([^/]+)/")
"""Where an AOTInductor package keeps each model's compiled files."""


def import_modules(names: list[str]) -> None:
    """``--import MODULE``: each imported before the target loads (registrations, custom ops)."""
    _current_folder_on_path()
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                raise UsageError(f"--import {name}: no module named {exc.name!r}") from None
            raise


def _current_folder_on_path() -> None:
    """Modules found from the current folder first, as ``python -m`` finds them."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def last_line(exc: BaseException) -> str:
    """The exception's own words: its type and the last non-empty line of its message."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}".rstrip(": ")[:400]


class _Caught(logging.Handler):
    """torch.export.load logs the real error and raises a generic one: keep the logged one."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])


def _export_load(torch: Any, path: str) -> tuple[Any, BaseException | None]:
    logger = logging.getLogger("torch.export")
    caught = _Caught()
    logger.addHandler(caught)
    propagate, logger.propagate = logger.propagate, False  # shown once, as the run's error
    try:
        return torch.export.load(path), None
    except Exception as exc:
        return None, caught.errors[-1] if caught.errors else exc
    finally:
        logger.removeHandler(caught)
        logger.propagate = propagate


def load_exported(torch: Any, path: str, channel: Channel) -> Any:
    """``torch.export.load``; where a pytree type is not registered and a module that can
    register it is importable (``transformers.modeling_outputs`` for its outputs), that
    module is imported and the load tried again, with a note saying so."""
    error: BaseException | None = None
    for _ in range(MAX_AUTO_IMPORTS + 1):
        program, error = _export_load(torch, path)
        if error is None:
            return program
        match = UNREGISTERED.search(str(error))
        if not match:
            break
        type_name = match.group(1)
        module = _import_owner(type_name)
        if module is None:
            owner = type_name.rpartition(".")[0] or type_name
            raise UsageError(
                f"{path}: torch.export.load: {last_line(error)} — no importable module "
                f"registers {type_name}: pass --import MODULE (the module that registers it, "
                f"e.g. --import {owner})"
            ) from error
        channel.send(
            event(
                "knob",
                f"imported {module} to load the exported program: it registers the "
                f"program's pytree type {type_name} (--import {module} imports it up front)",
            )
        )
    raise UsageError(f"{path}: torch.export.load: {last_line(error or Exception())}") from error


def _import_owner(type_name: str) -> str | None:
    """The longest importable prefix of ``type_name``, imported here: the module that
    defines (and so registers) the type. ``None`` where that module was imported already."""
    _current_folder_on_path()
    parts = type_name.split(".")
    for k in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:k])
        if name in sys.modules:
            return None  # imported already and still not registered
        try:
            importlib.import_module(name)
        except Exception:  # not importable here (missing, or failing as it imports)
            continue
        return name
    return None


# -- AOTInductor packages ---------------------------------------------------------------------


def aoti_metadata(path: str) -> dict[str, Any]:
    """The compiled model's metadata as the package writes it (``AOTI_DEVICE_KEY``...)."""
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if AOTI_DIR.match(name) and name.endswith("wrapper_metadata.json"):
                try:
                    return dict(json.loads(zf.read(name)))
                except (ValueError, TypeError):
                    return {}
    return {}


def load_aoti(torch: Any, path: str, device: str) -> Any:
    """``torch._inductor.aoti_load_package`` on the run's device; one clear line where the
    package was built for another device, or this torch cannot load it."""
    elsewhere = built_elsewhere(torch, aoti_metadata(path), device)
    if elsewhere:
        raise UsageError(f"{path} is an AOTInductor package built for {elsewhere}")
    index = device.partition(":")[2]
    try:
        return torch._inductor.aoti_load_package(
            path, device_index=int(index) if index.isdigit() else -1
        )
    except Exception as exc:
        raise UsageError(
            f"{path}: torch {torch.__version__} cannot load this AOTInductor package: "
            f"{last_line(exc)} (a package loads only with the torch, and on the kind of "
            "device, it was built for)"
        ) from exc


def built_elsewhere(torch: Any, meta: dict[str, Any], device: str) -> str | None:
    """What the package was built for that this run is not (``cuda; this run's device is
    cpu: pass --device cuda``), from the metadata its build wrote; ``None`` where it fits."""
    built_for = str(meta.get("AOTI_DEVICE_KEY") or "")
    if built_for and built_for != device.partition(":")[0]:
        return f"{built_for}; this run's device is {device}: pass --device {built_for}"
    here = {"AOTI_PLATFORM": sys.platform, "AOTI_MACHINE": platform.machine()}
    for key, value in here.items():
        if meta.get(key) and str(meta[key]) != value:
            return f"{meta[key]}; this machine is {value}: build the package here"
    capability = str(meta.get("AOTI_COMPUTE_CAPABILITY") or "")
    if built_for == "cuda" and capability.isdigit() and torch.cuda.is_available():
        index = device.partition(":")[2]
        major, minor = torch.cuda.get_device_capability(int(index) if index.isdigit() else 0)
        if int(capability) != major * 10 + minor:
            return (
                f"CUDA compute capability {capability}; {device} has {major * 10 + minor}: "
                "build the package for this GPU"
            )
    return None


_CHECK = re.compile(r"static void check_input_(\d+)\(")
_DTYPE = re.compile(r"_expected_dtype = aoti_torch_dtype_(\w+)\(\)")
_DIM = re.compile(r"unmatched dim value at (\d+), \"\s*<< \"expected: (\d+), \"")
_CHECKED_AT = re.compile(r"(?:dim|stride) value (?:is too (?:small|large) )?at (\d+)")
"""Every dimension an input check names: exact sizes, bounds of a dynamic one, strides (the
last stride of a dense tensor is always checked, so the highest index gives the rank)."""


def aoti_inputs(torch: Any, path: str, package: Any) -> Callable[[], Any]:
    """The inputs the package records, built when the run needs them: the sample inputs of
    an exported program packaged beside the compiled one, else the compiled wrapper's own
    input checks (dtype and every size of each input). ``None`` where a size is dynamic."""

    def build() -> Any:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            if any(re.match(r"^[^/]+/models/[^/]+\.json$", n) for n in names):
                program, _ = _export_load(torch, path)
                if program is not None and program.example_inputs is not None:
                    return program.example_inputs
            wrapper = next(
                (n for n in names if AOTI_DIR.match(n) and n.endswith("wrapper.cpp")), None
            )
            code = zf.read(wrapper).decode("utf-8", "replace") if wrapper else ""
        flat = checked_inputs(torch, code)
        if flat is None:
            return None
        return _as_call(torch, package, flat)

    return build


def checked_inputs(torch: Any, code: str, seed: int = DEFAULT_SEED) -> list[Any] | None:
    """One tensor per input of the compiled wrapper's ``check_input_N``: its dtype and its
    sizes, where every size is fixed; ``None`` otherwise (a dynamic size, unknown checks, a
    dtype the input maker has no rule for). Made as ``--input`` specs of those dtypes and
    sizes are (``input_spec``), on the CPU."""
    blocks = _CHECK.split(code)[1:]
    if not blocks:
        return None
    specs: list[dict[str, Any]] = []
    for index, rest in zip(blocks[::2], blocks[1::2], strict=True):
        body = rest.split("\n}", 1)[0]  # the function's own lines
        dtype = _DTYPE.search(body)
        sizes = {int(at): int(v) for at, v in _DIM.findall(body)}
        named = {int(at) for at in _CHECKED_AT.findall(body)}
        rank = max(named, default=-1) + 1
        if dtype is None or int(index) != len(specs) or set(sizes) != set(range(rank)):
            return None
        try:
            name = dtype_of(dtype.group(1)).name
        except KeyError:
            return None
        specs.append({"dtype": name, "shape": [sizes[k] for k in range(rank)]})
    return build_inputs(torch, specs, "cpu", None, None, seed)[0]


def _as_call(torch: Any, package: Any, flat: list[Any]) -> Feed | None:
    """The flat tensors as the package's call takes them (its recorded input tree)."""
    try:
        # torch's private module, only for packages that record an input tree
        import torch.utils._pytree as pytree

        spec = pytree.treespec_loads(package.loader.get_call_spec()[0])
        args, kwargs = pytree.tree_unflatten(flat, spec)
    except Exception:
        return list(flat), {}
    return list(args), dict(kwargs)
