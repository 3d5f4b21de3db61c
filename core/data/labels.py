"""An iteration's label: the known cause of its cost, from its events' kinds and titles.

Shared by the run data, its views and the TUI's iteration list; the full causes, timed and
with their evidence, are ``causes``.
"""

from __future__ import annotations

__all__ = ["compile_trigger", "label_for"]


def compile_trigger(title: str) -> str:
    """What started a compile event, from its title: ``compile 0/0 (cudagraph_recording)`` ->
    ``cudagraph_recording``; a plain ``compile 0/0`` (and ``(dynamo)``) -> ``dynamo``. The
    trigger is torch's (``torch._dynamo.callback.CallbackTrigger``): dynamo compiles a frame,
    cudagraph trees record, inductor autotunes at run time."""
    head, paren, rest = title.rpartition(" (")
    if not paren or not head.startswith("compile") or not rest.endswith(")"):
        return "dynamo"
    return rest[:-1]


def label_for(kinds_and_titles: list[tuple[str, str]]) -> str | None:
    """The known cause of an iteration's cost, from its events' kinds and titles.

    Precedence: recompile > compile > CUDA graph recording > Triton autotuning > CUDA graph
    warm-up > optimization > profiling run. A compile event's trigger (torch's compile callbacks:
    ``compile 0/0 (cudagraph_recording)``) tells the compile from what runs after it.
    """
    kinds = {k for k, _ in kinds_and_titles}
    titles = {t for k, t in kinds_and_titles if k == "jit"}
    triggers = {compile_trigger(t) for k, t in kinds_and_titles if k == "compile"}
    if "recompile" in kinds:
        return "recompile"
    if triggers - {"cudagraph_recording", "triton_autotuning"}:
        return "compile"
    if "cudagraph_recording" in triggers:
        return "CUDA graph recording"
    graphs = [t for k, t in kinds_and_titles if k == "cudagraph"]
    if any("record" in t for t in graphs):
        return "CUDA graph recording"
    if "triton_autotuning" in triggers or "autotune" in kinds:
        return "Triton autotuning"
    if graphs:
        return "CUDA graph warm-up"
    if "Optimized Graph" in titles:
        return "optimization"
    if "Profiled Graph" in titles:
        return "profiling run"
    return None
