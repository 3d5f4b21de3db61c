"""What a run's settings, and what its child saw, say of its CUDA: whether it ran on CUDA,
whether cuDNN autotunes, how CUDA loads its modules, whether torch.compile's graphs are CUDA
graphs. The knob where the run set it, else what the child reported (``env_keys``)."""

from __future__ import annotations

from warmscope.core.data import env_keys
from warmscope.core.data.run import RunData

__all__ = ["cuda_graphs", "cudnn_benchmark", "module_loading", "on_cuda"]

CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
"""torch.compile modes that wrap the compiled graph in CUDA graphs (on CUDA)."""


def on_cuda(data: RunData) -> bool:
    device = data.settings.knobs.get("device")
    return bool(env_keys.cuda_device(data.env)) or (
        isinstance(device, str) and device.startswith("cuda")
    )


def cudnn_benchmark(data: RunData) -> bool | None:
    """Whether cuDNN autotunes: the knob where set, else what the child saw."""
    knob = data.settings.knobs.get("cudnn_benchmark")
    if isinstance(knob, bool):
        return knob
    seen = env_keys.cuda_device(data.env).get("cudnn_benchmark")
    return seen if isinstance(seen, bool) else None


def module_loading(data: RunData) -> str | None:
    """``LAZY`` or ``EAGER``: how CUDA loads the libraries' kernels; ``None``: not known."""
    knob = data.settings.knobs.get("cuda_module_loading")
    if isinstance(knob, str):
        return knob.upper()
    seen = env_keys.cuda_device(data.env).get("module_loading")
    return seen.upper() if isinstance(seen, str) else None


def cuda_graphs(data: RunData) -> bool:
    """Whether the run's torch.compile wraps its graph in CUDA graphs."""
    mode = data.settings.knobs.get("compile_mode")
    return isinstance(mode, str) and mode in CUDA_GRAPH_MODES and on_cuda(data)
