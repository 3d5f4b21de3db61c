"""Why the slow calls were slow: each cause named from the run's own evidence, pinned to its
iteration (or setup phase), and timed where the evidence times it.

One pure function, ``run_causes``, over what a record holds: its events (compiles, recompiles,
CUDA graph recording, Triton autotuning, the TorchScript executor's dumps), its profiles of
first calls against steady ones, the CUDA evidence of those profiles (``trace_evidence``: a
trace's runtime calls and CUPTI's overhead records), its phases and its settings. A record
taken on a GPU server is explained on a laptop by the warmscope that reads it, with that
warmscope's rules: no stored label is trusted.

The causes on a GPU, after what the H100 runs showed (tests/data/gpu_h100):

- CUDA context creation: the ``cuda init`` phase (with every module loaded up front where
  ``CUDA_MODULE_LOADING=EAGER``);
- CUDA lazy module loading: CUPTI's ``Runtime Triggered Module Loading`` and ``Lazy Function
  Loading`` records in the call, with the first launches they slowed;
- cuDNN autotuning: inside a cuDNN convolution, the autotuner's timing calls (events around
  each candidate, a wait for each) that a steady call does not make;
- cuBLAS / cuDNN first use: a GEMM's or a cuDNN operator's own time, far above steady, that no
  kernel or runtime call inside it covers (handles, workspaces, the library's load);
- caching-allocator growth: ``cudaMalloc`` in the call;
- the compile, a recompile, CUDA graph warm-up and recording, Triton autotuning: torch's own
  compile callbacks and logs, as events;
- a TorchScript profiling run or optimization: the executor's dumps, with its own share apart
  from the CUDA first use measured in the same call where a profile has it.

On any device, reads from disk: a slow call whose batch read from storage (the agent's
``reads``: page-cache misses, as when a fresh server's first call loads cuDNN's and cuBLAS's
libraries, or a model's mapped weights are first touched), named with what was read.

The causes' names are ``cause_kinds``'s; what a profiled first call on CUDA shows is
``profile_causes``', reads from disk ``disk_read_causes``'.
"""

from __future__ import annotations

from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.data import contention
from warmscope.core.data.cause_kinds import (
    COMPILE,
    CONTENTION,
    CONTEXT,
    GRAPH_RECORDING,
    GRAPH_WARMUP,
    OPTIMIZATION,
    PROFILING_RUN,
    RECOMPILE,
    TRITON_AUTOTUNING,
    Cause,
    event_cause,
)
from warmscope.core.data.cuda_facts import cuda_graphs, module_loading, on_cuda
from warmscope.core.data.disk_read_causes import (
    disk_read_calls,
    disk_read_cause,
    phase_read_causes,
)
from warmscope.core.data.profile_causes import (
    EvidenceFor,
    profiled_first_call,
    unprofiled_first_call,
)
from warmscope.core.data.run import DiskRead, Event, RunData
from warmscope.core.data.trace_evidence import Evidence

__all__ = [
    "causes_at",
    "label",
    "no_evidence",
    "run_causes",
    "setup_causes",
]


def no_evidence(_: int) -> Evidence | None:
    """No trace for any call: the profile lines' own evidence only."""
    return None


def run_causes(data: RunData, evidence: EvidenceFor = no_evidence) -> list[Cause]:
    """Every cause the run's evidence shows: its setup phases', then each iteration's in
    order. ``evidence(i)``: the CUDA evidence of profiled iteration ``i`` (its trace, or its
    profile line: ``trace_evidence``), ``None`` where there is none."""
    out = setup_causes(data)
    reads = disk_read_calls(data)  # once: a run of many batches asks for it at every call
    iterations = sorted(
        {e.iteration for e in data.events if e.iteration is not None}
        | {i for i in data.profiles if i < data.count}
        | set(_first_calls(data))
        | set(reads)
        | {w.iteration for w in data.cpu_waits if w.iteration < data.count}
    )
    for i in iterations:
        if i < data.count:
            out += _causes_with_reads(data, i, evidence, reads)
    return out


def setup_causes(data: RunData) -> list[Cause]:
    """Causes of setup phases: CUDA's context (and, with EAGER module loading, every module
    of every CUDA library loaded with it); what a phase read from disk."""
    return _cuda_context(data) + phase_read_causes(data)


def _cuda_context(data: RunData) -> list[Cause]:
    ms = data.phases.get("cuda init")
    if ms is None:
        return []
    if module_loading(data) == "EAGER":
        return [
            Cause(
                f"{CONTEXT} with eager module loading",
                None,
                ms,
                "CUDA_MODULE_LOADING=EAGER loads every kernel of torch's CUDA libraries up front",
                phase="cuda init",
                source="settings",
            )
        ]
    return [Cause(CONTEXT, None, ms, "", phase="cuda init", source="phases")]


def causes_at(data: RunData, i: int, evidence: EvidenceFor = no_evidence) -> list[Cause]:
    """The causes of iteration ``i``: its events', then, for a first call on CUDA, what its
    profile shows (or, unprofiled, what its settings say); and its reads from disk."""
    return _causes_with_reads(data, i, evidence, disk_read_calls(data))


def _causes_with_reads(
    data: RunData, i: int, evidence: EvidenceFor, reads: dict[int, DiskRead]
) -> list[Cause]:
    read = reads.get(i)
    out = _call_causes(data, i, evidence) + ([disk_read_cause(i, read)] if read else [])
    return out + _contention_cause(data, i)


def _contention_cause(data: RunData, i: int) -> list[Cause]:
    """A slow call whose excess over its shape's steady p50 is mostly its threads' wait for
    a core (``contention``)."""
    if not data.cpu_waits:
        return []
    waited = contention.excess_waited(data, i)
    if waited is None:
        return []
    load = contention.load_text(data, i)
    evidence = f"waited {fmt_ms(waited)} for a core" + (f" ({load})" if load else "")
    return [Cause(CONTENTION, i, waited, evidence, source="waits")]


def _call_causes(data: RunData, i: int, evidence: EvidenceFor) -> list[Cause]:
    out = _event_causes(data, i, data.events_at(i))
    if not on_cuda(data) or i not in _first_calls(data):
        return out
    profile = data.profiles.get(i)
    if profile is not None and "ops" in profile:
        return profiled_first_call(data, i, profile, out, evidence)
    if any(c.name in (COMPILE, RECOMPILE) for c in out) or i not in data.slow_first_calls():
        return out
    return out + unprofiled_first_call(data, i, out)


def label(causes: list[Cause]) -> str:
    """The causes of one call in a line, the costliest first: ``cuDNN first use 111 ms ·
    cuBLAS first use 74.1 ms · CUDA lazy module loading 53.2 ms``."""
    ordered = sorted(causes, key=lambda c: -(c.ms if c.ms is not None else -1.0))
    return " · ".join(_named(c) for c in ordered)


def _named(c: Cause) -> str:
    if c.name == CONTENTION:  # its figure means nothing without what it measured
        return f"{c.name}: {c.evidence}"
    return c.name + (f" {fmt_ms(c.ms)}" if c.ms is not None else "")


def _first_calls(data: RunData) -> list[int]:
    """Each shape's first call (iteration 0 where the shapes do not vary)."""
    return [first for first, _, _ in data.first_calls()]


# -- events: each cause as ``cause_kinds.event_cause`` reads the call's events ------------------


def _event_causes(data: RunData, i: int, events: list[Event]) -> list[Cause]:
    shown: dict[str, list[Event]] = {}
    for e in events:
        name = event_cause(e.kind, e.title)
        if name is not None:
            shown.setdefault(name, []).append(e)
    compiles = shown.get(COMPILE, [])
    out = _compile_causes(i, shown.get(RECOMPILE, []), compiles)
    out += _autotuning_causes(i, events, shown.get(TRITON_AUTOTUNING, []), compiles)
    out += _graph_causes(data, i, shown, compiles)
    if compiles:  # the TorchScript executor's dumps do not name a compiled call's cost
        return out
    if OPTIMIZATION in shown:
        out.append(Cause(OPTIMIZATION, i, None, "Optimized Graph", source="events"))
    elif PROFILING_RUN in shown:
        out.append(Cause(PROFILING_RUN, i, None, "Profiled Graph", source="events"))
    return out


def _compile_causes(i: int, recompiles: list[Event], compiles: list[Event]) -> list[Cause]:
    """A recompile (timed by the compiles in the call), else the compile."""
    if recompiles:
        return [Cause(RECOMPILE, i, _sum_ms(compiles), recompiles[0].title, source="events")]
    if compiles:
        ids = ", ".join(dict.fromkeys(str(e.data.get("compile_id") or "?") for e in compiles))
        return [Cause(COMPILE, i, _sum_ms(compiles), f"compile {ids}", source="events")]
    return []


def _autotuning_causes(
    i: int, events: list[Event], tuned: list[Event], compiles: list[Event]
) -> list[Cause]:
    """Triton autotuning: its events, a compile triggered to autotune, the time max-autotune
    spent inside a compile, or the operators it printed as it benchmarked them."""
    tuning = [e for e in tuned if e.kind == "compile"]
    triton = [e for e in tuned if e.kind != "compile"] or tuning
    autotune_ms = _sum_data(events, "autotune_ms")
    benchmarked = _autotuned_ops(events)
    if not (triton or benchmarked or autotune_ms):
        return []
    what = (
        f"{benchmarked} operator(s) benchmarked"
        if benchmarked
        else "; ".join(dict.fromkeys(e.title for e in triton))
    )
    inside = " inside the compile" if compiles else ""
    return [
        Cause(
            TRITON_AUTOTUNING,
            i,
            autotune_ms or _sum_ms(tuning) or None,
            what + inside,
            source="events",
        )
    ]


def _graph_causes(
    data: RunData, i: int, shown: dict[str, list[Event]], compiles: list[Event]
) -> list[Cause]:
    """CUDA graph warm-up (its event, or a compiled graph's first run that a later call
    records), then its recording."""
    out = []
    if shown.get(GRAPH_WARMUP) or (compiles and cuda_graphs(data) and _records_later(data, i)):
        rest = data.latency(i) - (_sum_ms(compiles) or 0.0)
        out.append(
            Cause(
                GRAPH_WARMUP,
                i,
                rest if compiles and rest > 0 else None,
                "the compiled graph's first run, before it is recorded"
                + (" (the call's time outside the compile)" if compiles else ""),
                source="events",
            )
        )
    recorded = shown.get(GRAPH_RECORDING, [])
    recording = [e for e in recorded if e.kind == "compile"]
    if recorded:
        out.append(
            Cause(
                GRAPH_RECORDING,
                i,
                _sum_ms(recording) or None,
                "the compiled graph captured into a CUDA graph",
                source="events",
            )
        )
    return out


def _sum_ms(events: list[Event]) -> float | None:
    times = [e.ms for e in events if isinstance(e.ms, (int, float))]
    return float(sum(times)) if times else None


def _sum_data(events: list[Event], key: str) -> float | None:
    times = [e.data.get(key) for e in events]
    kept = [float(t) for t in times if isinstance(t, (int, float)) and not isinstance(t, bool)]
    return sum(kept) if kept else None


def _autotuned_ops(events: list[Event]) -> int:
    """Operators inductor's max-autotune benchmarked in the call, from what it printed
    (``AUTOTUNE addmm(64x1000, 64x64, 64x1000)``, one line each)."""
    return sum(
        sum(1 for line in e.text.splitlines() if line.startswith("AUTOTUNE "))
        for e in events
        if e.kind == "stderr"
    )


def _records_later(data: RunData, i: int) -> bool:
    """Whether a later call records a CUDA graph (the compiled graph's run at ``i`` was then
    its warm-up)."""
    return any(
        e.iteration is not None
        and e.iteration > i
        and e.kind == "compile"
        and event_cause(e.kind, e.title) == GRAPH_RECORDING
        for e in data.events
    )
