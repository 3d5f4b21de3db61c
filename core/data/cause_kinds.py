"""Every cause of a slow call, named once: the names ``causes`` gives what it finds, the causes
an iteration's own events show (each with its short label, strongest first: ``labels`` reads
them) and which event shows which. ``Cause``: one cause found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "EVENT_CAUSES",
    "Cause",
    "EventCause",
    "compile_trigger",
    "event_cause",
]

CONTEXT = "CUDA context creation"
LAZY_LOADING = "CUDA lazy module loading"
CUDNN_AUTOTUNING = "cuDNN autotuning"
CUBLAS_FIRST_USE = "cuBLAS first use"
CUDNN_FIRST_USE = "cuDNN first use"
LIBRARY_FIRST_USE = "CUDA library first use"
CUDA_FIRST_USE = "CUDA first use"
ALLOCATOR = "caching-allocator growth"
COMPILE = "the compile"
RECOMPILE = "recompile"
GRAPH_WARMUP = "CUDA graph warm-up"
GRAPH_RECORDING = "CUDA graph recording"
TRITON_AUTOTUNING = "Triton autotuning"
PROFILING_RUN = "TorchScript profiling run"
OPTIMIZATION = "TorchScript optimization"
DISK_READS = "reads from disk"
CONTENTION = "CPU contention"
UNSEEN = "not seen by the profiler"


@dataclass(frozen=True)
class EventCause:
    """A cause an iteration's events show by themselves."""

    name: str
    """As ``causes`` names it: ``the compile``."""
    label: str
    """As an iteration's label names it, where a list's column or a chart's mark has room for
    a word or two (and as records keep it: ``compile``)."""


EVENT_CAUSES: tuple[EventCause, ...] = (
    EventCause(RECOMPILE, "recompile"),
    EventCause(COMPILE, "compile"),
    EventCause(GRAPH_RECORDING, GRAPH_RECORDING),
    EventCause(TRITON_AUTOTUNING, TRITON_AUTOTUNING),
    EventCause(GRAPH_WARMUP, GRAPH_WARMUP),
    EventCause(OPTIMIZATION, "optimization"),
    EventCause(PROFILING_RUN, "profiling run"),
)
"""The causes events show, strongest first: an iteration's label is the first of them its
events show."""


def compile_trigger(title: str) -> str:
    """What started a compile event, from its title: ``compile 0/0 (cudagraph_recording)`` ->
    ``cudagraph_recording``; a plain ``compile 0/0`` (and ``(dynamo)``) -> ``dynamo``. The
    trigger is torch's (``torch._dynamo.callback.CallbackTrigger``): dynamo compiles a frame,
    cudagraph trees record, inductor autotunes at run time."""
    head, paren, rest = title.rpartition(" (")
    if not paren or not head.startswith("compile") or not rest.endswith(")"):
        return "dynamo"
    return rest[:-1]


def event_cause(kind: str, title: str) -> str | None:
    """The cause one event shows (its name), from its kind and title; ``None``: none. A
    compile event's trigger tells the compile from what runs after it (CUDA graph recording,
    Triton autotuning); cudagraph trees' events (``hooks``) name a graph's warm-up or its
    recording; the TorchScript executor's dumps its profiling run and its optimization."""
    if kind == "recompile":
        return RECOMPILE
    if kind == "compile":
        trigger = compile_trigger(title)
        if "cudagraph" in trigger:
            return GRAPH_RECORDING
        if "autotun" in trigger:
            return TRITON_AUTOTUNING
        return COMPILE
    if kind == "autotune":
        return TRITON_AUTOTUNING
    if kind == "cudagraph":
        step = title.lower()
        if "record" in step:
            return GRAPH_RECORDING
        return GRAPH_WARMUP if "warm" in step else None
    if kind == "jit":
        return {"Optimized Graph": OPTIMIZATION, "Profiled Graph": PROFILING_RUN}.get(title)
    return None


@dataclass(frozen=True)
class Cause:
    """One reason an iteration (or setup phase) was slow."""

    name: str
    """``CUDA lazy module loading``, ``cuDNN autotuning``, ``the compile``…"""
    iteration: int | None
    ms: float | None
    """What the evidence times of it; ``None`` where it names the cause without timing it."""
    evidence: str
    """What shows it, in a few words: ``13 loads (CUPTI), 3 first launches``."""
    phase: str | None = None
    source: str = ""
    """``events``, ``profile`` (the profile of this call: ``separate`` where another process
    ran it), ``settings``."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "iteration": self.iteration}
        if self.phase is not None:
            out["phase"] = self.phase
        out.update(ms=self.ms, evidence=self.evidence, source=self.source)
        return out
