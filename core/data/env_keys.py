"""Every key of a run's ``env``, declared once: who writes it, what shape it has, how it is shown.

A run's environment comes in several ``env`` record lines from several writers: the parent's
view of the machine (``sampler.host_environment``), the parent's NVML description of the run's
GPU (``gpu``), the session's containment, placement and compile cache, the remote end's hello
over ``--host``, and the child's own view (``loading.environment``: versions, threads, and on
CUDA ``cuda_device``). ``fold`` merges a line into the run's ``env`` through this table: a
declared key of the wrong shape is dropped, not kept to crash a reader, and the shapes older
writers used are read into today's keys (``LEGACY``). Readers take what ``fold`` kept; where a
value is shown, ``shown`` formats it.

Keys this table does not know are kept as they came (a newer writer may add facts); no view
relies on them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "KEYS",
    "LEGACY",
    "EnvKey",
    "cuda_device",
    "fold",
    "gpu_text",
    "nvml_gpu",
    "rows",
    "shown",
]


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _dict(v: Any) -> bool:
    return isinstance(v, dict)


def _opt(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _list_of_dicts(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, dict) for x in v)


def _text(v: Any) -> str:
    return str(v)


def _on_off(v: Any) -> str:
    return "on" if v else "off"


@dataclass(frozen=True)
class EnvKey:
    """One ``env`` key: who writes it, the shape its value must have, how a view shows it."""

    name: str
    writer: str
    """Where it is written (a module and function), so a reader can find what it means."""
    check: Callable[[Any], bool]
    shape: str
    """The shape ``check`` accepts, in words."""
    label: str = ""
    """Its name where views show it (``rows``); empty: not shown as a row of its own."""
    show: Callable[[Any], str] = _text


def _cuda_text(device: Any) -> str:
    """``NVIDIA H100 80GB HBM3 (sm 9.0), CUDA 13.0, cuDNN 9.19.0, module loading LAZY, cuDNN
    autotuning off, TF32 matmul off``: the CUDA facts the child saw, where it gave them."""
    if not isinstance(device, dict):
        return ""
    parts = [str(device.get("name") or "CUDA device")]
    if device.get("capability"):
        parts[0] += f" (sm {device['capability']})"
    if device.get("cuda"):
        parts.append(f"CUDA {device['cuda']}")
    if _int(device.get("cudnn")):
        parts.append(f"cuDNN {cudnn_version(device['cudnn'])}")
    if device.get("module_loading"):
        parts.append(f"module loading {device['module_loading']}")
    if _bool(device.get("cudnn_benchmark")):
        parts.append(f"cuDNN autotuning {_on_off(device['cudnn_benchmark'])}")
    if _bool(device.get("tf32_matmul")):
        parts.append(f"TF32 matmul {_on_off(device['tf32_matmul'])}")
    return ", ".join(parts)


def cudnn_version(number: int) -> str:
    """cuDNN's version number as people write it: 91900 -> ``9.19.0`` (cuDNN 9: major×10000 +
    minor×100 + patch), 8907 -> ``8.9.7`` (cuDNN 8: major×1000 + minor×100 + patch)."""
    if number >= 90000:
        return f"{number // 10000}.{number // 100 % 100}.{number % 100}"
    return f"{number // 1000}.{number // 100 % 10}.{number % 100}"


def _nvml_text(gpu: Any) -> str:
    """``NVIDIA H100 80GB HBM3 · SM max 1,980 MHz, power limit 700 W, memory 81,559 MB``."""
    if not isinstance(gpu, dict):
        return ""
    name = str(gpu.get("name", "GPU")) + (" (a MIG slice)" if gpu.get("mig") else "")
    limits = [
        f"{label} {gpu[key]:,.0f}{unit}"
        for key, label, unit in (
            ("sm_max_mhz", "SM max", " MHz"),
            ("power_limit_w", "power limit", " W"),
            ("memory_mb", "memory", " MB"),
        )
        if _num(gpu.get(key))
    ]
    return " · ".join([name, ", ".join(limits)] if limits else [name])


def _gpus_text(gpus: Any) -> str:
    return ", ".join(str(g.get("name", "?")) for g in gpus if isinstance(g, dict))


def _observer_text(placed: Any) -> str:
    """How warmscope kept out of the child's way: its reader's and sampler's nice value, and
    the CPUs of each where it set them."""
    if not isinstance(placed, dict):
        return ""
    text = f"reader and sampler at nice +{placed.get('nice', 0)}"
    if placed.get("ui_nice"):
        text += f", the TUI at nice +{placed['ui_nice']}"
    if placed.get("child_cpus"):
        text += f"; child on CPUs {placed['child_cpus']}, warmscope on {placed['observer_cpus']}"
    elif placed.get("affinity"):
        text += f"; affinity {placed['affinity']}"
    return text


def _cpus_usable_text(usable: Any) -> str:
    """``2 (affinity)``: the cores the child could run on at once, and what bounds them."""
    if not isinstance(usable, dict) or not isinstance(usable.get("cpus"), int):
        return ""
    return f"{usable['cpus']} ({usable.get('bound', '?')})"


_HOST = "core.run.sampler.host_environment (parent), or the remote hello (--host)"
_CPP = "core/child/cpp_agent.cpp send_env (child, --runtime cpp)"


def _cpp_agent_text(agent: Any) -> str:
    """``/…/warmscope-cpp-agent (compiler 12.2.0)``: which binary ran, built by which compiler
    (its ``__VERSION__``)."""
    if not isinstance(agent, dict):
        return ""
    compiler = f" (compiler {agent['compiler']})" if agent.get("compiler") else ""
    return f"{agent.get('path', '?')}{compiler}"


_CHILD = "core.child.loading.environment (child)"
_SESSION = "core.run.session (parent)"

KEYS: dict[str, EnvKey] = {
    k.name: k
    for k in (
        # The machine, as the parent (or the remote end over --host) sees it.
        EnvKey("warmscope", _HOST, _str, "a string", "warmscope"),
        EnvKey("hostname", _HOST, _str, "a string", "host"),
        EnvKey("host", "core.run.remote.environment (parent)", _str, "a string", "--host"),
        EnvKey("platform", _HOST, _str, "a string", "platform"),
        EnvKey("cpu_model", _HOST, _str, "a string"),
        EnvKey("cpu_logical", _HOST, _int, "an integer"),
        EnvKey("cpu_physical", _HOST, _opt(_int), "an integer"),
        EnvKey("cpu_affinity", _HOST, _int, "an integer"),
        EnvKey("memory_mb", _HOST, _num, "a number"),
        EnvKey("gpus", _HOST, _list_of_dicts, "a list of objects", "GPUs present", _gpus_text),
        EnvKey("nvml", _HOST, _str, "a string"),
        EnvKey("driver", _HOST, _str, "a string", "NVIDIA driver"),
        # The run's GPU through NVML (the parent's sampler, or the remote guardian's).
        EnvKey(
            "gpu",
            "core.child.gpu_sampler.GpuSampler.describe, recorded by core.run.session (parent)",
            _dict,
            "an object",
            "GPU (NVML)",
            _nvml_text,
        ),
        # What the session did around the child.
        EnvKey("agent_pid", "core.data.schema (the spawned line)", _int, "an integer"),
        EnvKey("containment", _SESSION, _dict, "an object"),
        EnvKey("observer", _SESSION, _dict, "an object", "warmscope's threads", _observer_text),
        EnvKey("compile_cache", _SESSION, _dict, "an object"),
        # The child's own view.
        EnvKey("runtime", _CPP, _str, "a string", "runtime"),
        EnvKey("cpp_agent", _CPP, _dict, "an object", "C++ agent", _cpp_agent_text),
        EnvKey("python", _CHILD, _str, "a string", "Python"),
        EnvKey("python_executable", _CHILD, _str, "a string"),
        EnvKey("torch", _CHILD, _str, "a string", "torch"),
        EnvKey("torch_git", _CHILD, _opt(_str), "a string"),
        EnvKey("torch_cuda", _CHILD, _opt(_str), "a string", "CUDA (torch build)"),
        EnvKey("intra_op_threads", _CHILD, _int, "an integer"),
        EnvKey("inter_op_threads", _CHILD, _int, "an integer"),
        EnvKey("cpus_usable", _CHILD, _dict, "an object", "cores usable", _cpus_usable_text),
        EnvKey("quantized_engine", _CHILD, _str, "a string"),
        EnvKey("cuda_available", _CHILD, _bool, "a boolean"),
        EnvKey("mkldnn", _CHILD, _bool, "a boolean"),
        EnvKey(
            "cuda_device",
            _CHILD + ", on CUDA runs",
            _dict,
            "an object",
            "CUDA (as the child saw it)",
            _cuda_text,
        ),
    )
}
"""Every ``env`` key warmscope writes."""

CUDA_DEVICE_FIELDS = {
    "name": _str,
    "index": _int,
    "capability": _str,
    "memory_mb": _num,
    "multiprocessors": _int,
    "cuda": _opt(_str),
    "cudnn": _opt(_int),
    "module_loading": _opt(_str),
    "cudnn_benchmark": _bool,
    "tf32_matmul": _bool,
    "tf32_cudnn": _bool,
    "matmul_precision": _str,
}
"""``cuda_device``'s fields and their shapes: the child's CUDA facts (``loading.environment``)."""


def _legacy_child_gpu(env: dict[str, Any], key: str, value: Any) -> None:
    """Records before ``cuda_device`` had the child write the device's name as ``gpu`` (a
    string, beside the parent's NVML ``gpu`` object), ``gpu_memory_mb`` and ``cudnn``: read
    into ``cuda_device``, so the NVML description is never replaced by a name."""
    field = {"gpu": "name", "gpu_memory_mb": "memory_mb", "cudnn": "cudnn"}[key]
    if CUDA_DEVICE_FIELDS[field](value):
        device = env.setdefault("cuda_device", {})
        if isinstance(device, dict):
            device.setdefault(field, value)


LEGACY: dict[str, Callable[[dict[str, Any], str, Any], None]] = {
    "gpu_memory_mb": _legacy_child_gpu,
    "cudnn": _legacy_child_gpu,
}
"""Keys that older writers used, and how each is read into today's keys. (``gpu`` as a string
is the third: ``fold`` tells it from the NVML object by its shape.)"""


def fold(env: dict[str, Any], body: dict[str, Any]) -> None:
    """Merge one ``env`` line's body into a run's ``env``: declared keys of the right shape,
    older shapes read into today's keys, unknown keys as they came."""
    for key, value in body.items():
        if key == "gpu" and isinstance(value, str):
            _legacy_child_gpu(env, key, value)
            continue
        if key in LEGACY:
            LEGACY[key](env, key, value)
            continue
        declared = KEYS.get(key)
        if declared is None:
            env[key] = value
        elif declared.check(value):
            if key == "cuda_device":
                value = {k: v for k, v in value.items() if CUDA_DEVICE_FIELDS.get(k, _any)(v)} | {
                    k: v for k, v in (env.get("cuda_device") or {}).items() if k not in value
                }
            env[key] = value


def _any(_: Any) -> bool:
    return True


def nvml_gpu(env: dict[str, Any]) -> dict[str, Any]:
    """The parent's NVML description of the run's GPU (``{}`` where there is none)."""
    gpu = env.get("gpu")
    return gpu if isinstance(gpu, dict) else {}


def cuda_device(env: dict[str, Any]) -> dict[str, Any]:
    """The child's CUDA facts (``{}`` for a run that did not use CUDA)."""
    device = env.get("cuda_device")
    return device if isinstance(device, dict) else {}


def shown(env: dict[str, Any], key: str) -> str:
    """A key's value as views show it; empty where the run has none."""
    value = env.get(key)
    declared = KEYS.get(key)
    if value is None or value == "" or declared is None or not declared.check(value):
        return ""
    return declared.show(value)


def gpu_text(env: dict[str, Any]) -> str:
    """The run's GPU in a phrase: the child's device (its CUDA facts) where it used one, else
    NVML's name of the sampled device with the driver, else the GPUs present, else why none."""
    device = cuda_device(env)
    gpu = nvml_gpu(env)
    name = device.get("name") or gpu.get("name")
    if name:
        driver = f", driver {env['driver']}" if env.get("driver") else ""
        return f"{name}{driver}"
    gpus = shown(env, "gpus")
    return gpus or str(env.get("nvml") or "none")


def rows(env: dict[str, Any], keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(label, text)`` for each of ``keys`` the run has, in that order."""
    out = []
    for key in keys:
        text = shown(env, key)
        if text:
            out.append((KEYS[key].label or key, text))
    return out
