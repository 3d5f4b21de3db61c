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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.base.units import num3
from warmscope.core.data import contention, env_keys
from warmscope.core.data.labels import compile_trigger
from warmscope.core.data.run import DiskRead, Event, RunData
from warmscope.core.data.trace_evidence import (
    LAUNCHES,
    MODULE_LOADING,
    TIMING,
    Evidence,
    from_profile,
)

__all__ = [
    "Cause",
    "causes_at",
    "label",
    "no_evidence",
    "run_causes",
    "setup_causes",
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

DISK_READ_LEAST = 1 << 20
"""A batch that read at least this much from storage names it as a cause of its slowest call."""
DISK_READ_SLOW = 2.0
"""Where that call took at least this many times the run's steady p50 (a slow call)."""

GEMM_OPS = (
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::addmv",
    "aten::mv",
    "aten::addbmm",
    "aten::_addmm_activation",
    "aten::_scaled_mm",
)
"""Operators whose first CUDA call creates cuBLAS's handle and workspace."""
CUDNN_PREFIX = ("aten::cudnn_", "aten::_cudnn_", "aten::miopen_")
ATTENTION_OPS = (
    "aten::_flash_attention_forward",
    "aten::_efficient_attention_forward",
    "aten::_scaled_dot_product_cudnn_attention",
)
FIRST_USE_RATIO = 10.0
"""A library operator's own time this many times steady's, at least, in a first call."""
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
"""torch.compile modes that wrap the compiled graph in CUDA graphs (on CUDA)."""


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


EvidenceFor = Callable[[int], "Evidence | None"]


def no_evidence(_: int) -> Evidence | None:
    """No trace for any call: the profile lines' own evidence only."""
    return None


def run_causes(data: RunData, evidence: EvidenceFor = no_evidence) -> list[Cause]:
    """Every cause the run's evidence shows: its setup phases', then each iteration's in
    order. ``evidence(i)``: the CUDA evidence of profiled iteration ``i`` (its trace, or its
    profile line: ``trace_evidence``), ``None`` where there is none."""
    out = setup_causes(data)
    reads = _disk_read_calls(data)  # once: a run of many batches asks for it at every call
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
    return _cuda_context(data) + [
        Cause(
            DISK_READS,
            None,
            None,
            f"{_mib(read)}{_faults(faults)}",
            phase=name,
            source=_COUNTERS,
        )
        for name, (read, faults) in data.phase_reads.items()
        if read >= DISK_READ_LEAST
    ]


def _cuda_context(data: RunData) -> list[Cause]:
    ms = data.phases.get("cuda init")
    if ms is None:
        return []
    if _module_loading(data) == "EAGER":
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
    return _causes_with_reads(data, i, evidence, _disk_read_calls(data))


def _causes_with_reads(
    data: RunData, i: int, evidence: EvidenceFor, reads: dict[int, DiskRead]
) -> list[Cause]:
    read = reads.get(i)
    out = _call_causes(data, i, evidence) + ([_disk_read_cause(i, read)] if read else [])
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
    if not _on_cuda(data) or i not in _first_calls(data):
        return out
    profile = data.profiles.get(i)
    if profile is not None and "ops" in profile:
        steady = _steady_profile(data, i, profile)
        measured = _profile_causes(data, i, profile, steady, evidence(i), evidence)
        return _with_executor_share(data, i, out, measured, profile)
    if any(c.name in (COMPILE, RECOMPILE) for c in out) or i not in data.slow_first_calls():
        return out
    return out + _unprofiled_first_call(data, i, out)


def label(causes: list[Cause]) -> str:
    """The causes of one call in a line, the costliest first: ``cuDNN first use 111 ms ·
    cuBLAS first use 74.1 ms · CUDA lazy module loading 53.2 ms``."""
    ordered = sorted(causes, key=lambda c: -(c.ms if c.ms is not None else -1.0))
    return " · ".join(_named(c) for c in ordered)


def _named(c: Cause) -> str:
    if c.name == CONTENTION:  # its figure means nothing without what it measured
        return f"{c.name}: {c.evidence}"
    return c.name + (f" {fmt_ms(c.ms)}" if c.ms is not None else "")


# -- events ------------------------------------------------------------------------------------


def _event_causes(data: RunData, i: int, events: list[Event]) -> list[Cause]:
    out: list[Cause] = []
    compiles = [e for e in events if e.kind == "compile" and compile_trigger(e.title) == "dynamo"]
    recording = [
        e for e in events if e.kind == "compile" and "cudagraph" in compile_trigger(e.title)
    ]
    tuning = [e for e in events if e.kind == "compile" and "autotun" in compile_trigger(e.title)]
    recompiles = [e for e in events if e.kind == "recompile"]
    if recompiles:
        out.append(Cause(RECOMPILE, i, _sum_ms(compiles), recompiles[0].title, source="events"))
    elif compiles:
        ids = ", ".join(dict.fromkeys(str(e.data.get("compile_id") or "?") for e in compiles))
        out.append(Cause(COMPILE, i, _sum_ms(compiles), f"compile {ids}", source="events"))
    autotune_ms = _sum_data(events, "autotune_ms")
    triton = [e for e in events if e.kind == "autotune"] or tuning
    benchmarked = _autotuned_ops(events)
    if triton or benchmarked or autotune_ms:
        what = (
            f"{benchmarked} operator(s) benchmarked"
            if benchmarked
            else "; ".join(dict.fromkeys(e.title for e in triton))
        )
        inside = " inside the compile" if compiles else ""
        out.append(
            Cause(
                TRITON_AUTOTUNING,
                i,
                autotune_ms or _sum_ms(tuning) or None,
                what + inside,
                source="events",
            )
        )
    warmups = [e for e in events if e.kind == "cudagraph" and "warm" in e.title.lower()]
    if warmups or (compiles and _cuda_graphs(data) and _records_later(data, i)):
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
    recorded = recording or [
        e for e in events if e.kind == "cudagraph" and "record" in e.title.lower()
    ]
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
    titles = {e.title for e in events if e.kind == "jit"}
    if "Optimized Graph" in titles and not compiles:
        out.append(Cause(OPTIMIZATION, i, None, "Optimized Graph", source="events"))
    elif "Profiled Graph" in titles and not compiles:
        out.append(Cause(PROFILING_RUN, i, None, "Profiled Graph", source="events"))
    return out


# -- reads from disk ---------------------------------------------------------------------------


def _disk_read_calls(data: RunData) -> dict[int, DiskRead]:
    """The warm-up calls whose batch read enough from storage to name it: each such batch's
    slowest call, with what the batch read. Only a shape's first call or a call before the
    run is steady, and slow (``DISK_READ_SLOW``): a steady model that reads as it goes pays
    that in every call, and its slowest call of a batch is slow by chance. A call profiled in
    this process is left out (the profiler's own start reads its libraries in its batch)."""
    if not data.disk_reads:
        return {}
    summary = data.summary()
    firsts = set(_first_calls(data))
    profiled = set(data.profiled_here())
    warm_from = summary.steady_from if summary.steady_from is not None else 0
    out: dict[int, DiskRead] = {}
    for read in data.disk_reads:
        if read.read_bytes < DISK_READ_LEAST:
            continue
        calls = [i for i in range(read.first, min(read.last + 1, data.count)) if i not in profiled]
        if not calls:
            continue
        slowest = max(calls, key=data.latency)
        if slowest not in firsts and slowest >= warm_from:
            continue
        p50 = summary.p50_ms
        if p50 is None or data.latency(slowest) >= DISK_READ_SLOW * p50:
            out[slowest] = read
    return out


_COLD_FILES = (
    "files read as they were first used (libraries, mapped weights) that the page cache did "
    "not hold; a process started after it finds them there"
)
_COUNTERS = "the child's I/O counters"


def _mib(read_bytes: int) -> str:
    """``199 MiB``."""
    return f"{num3(read_bytes / 2**20)} MiB"


def _faults(major_faults: int) -> str:
    """`` and 63 major page faults``; nothing for none."""
    if not major_faults:
        return ""
    return f" and {major_faults:,} major page fault{'s' if major_faults > 1 else ''}"


def _disk_read_cause(i: int, read: DiskRead) -> Cause:
    where = (
        f"in calls {read.first}–{read.last} (one batch of the counters), this the slowest of them"
        if read.calls > 1
        else "in this call"
    )
    return Cause(
        DISK_READS,
        i,
        None,
        f"{_mib(read.read_bytes)} read from disk{_faults(read.major_faults)} {where}: "
        f"{_COLD_FILES}",
        source=_COUNTERS,
    )


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
        and "cudagraph" in compile_trigger(e.title)
        for e in data.events
    )


# -- profiles ----------------------------------------------------------------------------------


def _profile_causes(
    data: RunData,
    i: int,
    profile: dict[str, Any],
    steady: dict[str, Any] | None,
    found: Evidence | None,
    evidence: EvidenceFor,
) -> list[Cause]:
    """What the profile of call ``i`` shows against a steady call of its shape."""
    base: Evidence | None = None
    if steady is not None:
        base = evidence(int(steady["iteration"])) or from_profile(steady)
    against = _AgainstSteady(data, i, profile, steady, found or from_profile(profile), base)
    return [
        *against.cudnn_autotuning(),
        *against.library_first_use(),
        *against.lazy_loading(),
        *against.allocator_growth(),
    ]


class _AgainstSteady:
    """One profiled call held against a steady call of its shape: each method names one cause
    from what the call did that the steady one did not. An operator one cause claims is not
    counted by the next."""

    def __init__(
        self,
        data: RunData,
        i: int,
        profile: dict[str, Any],
        steady: dict[str, Any] | None,
        slow: Evidence,
        base: Evidence | None,
    ) -> None:
        self.data = data
        self.i = i
        self.slow = slow
        self.base = base or Evidence()
        self.source = "profile (separate process)" if profile.get("separate") else "profile"
        wall = float(profile.get("wall_ms") or 0.0)
        self.least = max(0.1, 0.01 * wall)  # below this an operator's excess is not a cause
        self.ops = {op["name"]: op for op in profile.get("ops", []) if isinstance(op, dict)}
        self.steady_ops = {
            op["name"]: op for op in (steady or {}).get("ops", []) if isinstance(op, dict)
        }
        self.claimed: set[str] = set()

    def added(self, name: str, key: str = "self_ms") -> float:
        mine = float(self.ops.get(name, {}).get(key) or 0.0)
        theirs = float(self.steady_ops.get(name, {}).get(key) or 0.0)
        return mine - theirs

    def ratio(self, name: str) -> float:
        theirs = float(self.steady_ops.get(name, {}).get("self_ms") or 0.0)
        mine = float(self.ops.get(name, {}).get("self_ms") or 0.0)
        return mine / theirs if theirs > 0 else float("inf")

    def cudnn_autotuning(self) -> list[Cause]:
        """Its timing calls inside a cuDNN convolution, which steady's lacks."""
        slow, base, out = self.slow, self.base, []
        benchmark = _cudnn_benchmark(self.data)
        for op in sorted(n for n in self.ops if n.startswith(CUDNN_PREFIX) and "convolution" in n):
            timing = slow.inside_count(op, TIMING) - base.inside_count(op, TIMING)
            events_made = slow.count(TIMING) - base.count(TIMING)
            tuned = timing > 0 or (
                not slow.inside
                and benchmark is not False
                and events_made > 0
                and self.added(op) > self.least
            )
            if not tuned or self.added(op, "total_ms") < self.least:
                continue
            launches = slow.count(LAUNCHES) - base.count(LAUNCHES)
            calls = (
                f"{timing} timing calls in {op}" if timing > 0 else f"{events_made} timing calls"
            )
            if launches > 0:
                calls += f", {launches} more launches than steady"
            with_first = " with cuDNN's first use" if self.i == 0 else ""  # the process's first
            name = CUDNN_AUTOTUNING + with_first
            out.append(Cause(name, self.i, self.added(op, "total_ms"), calls, source=self.source))
            self.claimed.add(op)
        return out

    def library_first_use(self) -> list[Cause]:
        """cuBLAS / cuDNN / attention first use: the library operator's own time, far above
        steady."""
        eager = _module_loading(self.data) == "EAGER"
        first_use: dict[str, list[tuple[str, float]]] = {}
        for name in self.ops:
            if name in self.claimed:
                continue
            if name in GEMM_OPS:
                kind = CUBLAS_FIRST_USE
            elif name.startswith(CUDNN_PREFIX):
                kind = CUDNN_FIRST_USE
            elif name in ATTENTION_OPS:
                kind = LIBRARY_FIRST_USE
            else:
                continue
            extra = self.added(name)
            if extra >= self.least and self.ratio(name) >= FIRST_USE_RATIO:
                first_use.setdefault(kind, []).append((name, extra))
                self.claimed.add(name)
        why = (
            "every kernel of the library loaded (module loading EAGER)"
            if eager
            else "handle, workspace and library load: time no kernel or runtime call covers"
        )
        out = []
        for kind, found_ops in first_use.items():
            total = sum(ms for _, ms in found_ops)
            what = ", ".join(n.removeprefix("aten::") for n, _ in found_ops)
            out.append(Cause(kind, self.i, total, f"{what}: {why}", source=self.source))
        return out

    def lazy_loading(self) -> list[Cause]:
        """CUDA lazy loading: CUPTI's records, and the first launches they slowed."""
        slow, base = self.slow, self.base
        loads = slow.count(MODULE_LOADING) - base.count(MODULE_LOADING)
        if loads <= 0:
            return []
        load_ms = slow.ms(MODULE_LOADING) - base.ms(MODULE_LOADING)
        slowed = [
            (n, self.added(n))
            for n in self.ops
            if n not in self.claimed
            and n.startswith("aten::")
            and self.added(n) >= self.least
            and self.ratio(n) >= FIRST_USE_RATIO
            and float(self.ops[n].get("self_ms") or 0.0)
            >= float(self.ops[n].get("total_ms") or 0.0) * 0.5
        ]
        launch_ms = max(0.0, slow.ms(LAUNCHES) - base.ms(LAUNCHES))
        ms = max(0.0, load_ms) + launch_ms + sum(m for _, m in slowed)
        first = f", first launches of {', '.join(n.removeprefix('aten::') for n, _ in slowed)}"
        what = f"{loads} module/function loads (CUPTI){first if slowed else ''}"
        return [Cause(LAZY_LOADING, self.i, ms, what, source=self.source)]

    def allocator_growth(self) -> list[Cause]:
        """Caching-allocator growth: cudaMalloc in the call."""
        slow, base = self.slow, self.base
        mallocs = slow.count(("cudaMalloc", "cudaMallocAsync")) - base.count(("cudaMalloc",))
        malloc_ms = slow.ms(("cudaMalloc", "cudaMallocAsync")) - base.ms(("cudaMalloc",))
        if mallocs > 0 and malloc_ms >= self.least / 10:
            return [
                Cause(ALLOCATOR, self.i, malloc_ms, f"{mallocs} cudaMalloc", source=self.source)
            ]
        return []


UNSEEN = "not seen by the profiler"
UNSEEN_SHARE = 0.2
"""A measured call this much longer than its profiled twin (a share of the call) names the gap."""


def _with_executor_share(
    data: RunData, i: int, from_events: list[Cause], measured: list[Cause], profile: dict[str, Any]
) -> list[Cause]:
    """A TorchScript profiling run (or optimization) on CUDA with the CUDA first use measured
    in the same call: the executor's own share is the profiled call less that first use. Where
    the profile came from another process and the measured call took much longer than its
    profiled twin, the gap is named as what it is: not in the profile (the profiler's own start
    in that process, CUPTI's, did work the measured process did inside its call)."""
    wall = float(profile.get("wall_ms") or 0.0)
    cuda_ms = sum(c.ms or 0.0 for c in measured)
    out = []
    for cause in from_events:
        if cause.name in (PROFILING_RUN, OPTIMIZATION) and measured and wall:
            rest = wall - cuda_ms
            cause = Cause(
                cause.name,
                i,
                rest if rest > 0 else None,
                f"{cause.evidence}; the profiled call less the CUDA first use in it",
                source=cause.source,
            )
        out.append(cause)
    out += measured
    gap = data.latency(i) - wall
    if wall and profile.get("separate") and gap > UNSEEN_SHARE * data.latency(i):
        read = data.disk_read_at(i)
        batch = (
            f"the batch of calls {read.first}–{read.last} it is in"
            if read is not None and read.calls > 1
            else "this call"
        )
        why = (
            f"{batch} read {_mib(read.read_bytes)} from disk; the explaining "
            "process, started after it, finds such files in the page cache; "
            if read is not None and read.read_bytes >= DISK_READ_LEAST
            else "work the profiler's own start did first there; "
        )
        out.append(
            Cause(
                UNSEEN,
                i,
                gap,
                f"this call took {fmt_ms(data.latency(i))}, its profiled twin in the explaining "
                f"process {fmt_ms(wall)}: the rest is not in the profile ({why}"
                "--profile-in-run profiles this process itself)",
                source="profile (separate process)",
            )
        )
    return out


def _unprofiled_first_call(data: RunData, i: int, known: list[Cause]) -> list[Cause]:
    """A slow first call on CUDA that no profile covers: what the settings say, untimed."""
    out: list[Cause] = []
    if i == 0:
        jit = any(c.name in (PROFILING_RUN, OPTIMIZATION) for c in known)
        loads = (
            "loads the CUDA libraries whole (module loading EAGER)"
            if _module_loading(data) == "EAGER"
            else "loads kernels as they are first launched (lazy loading)"
        )
        out.append(
            Cause(
                CUDA_FIRST_USE,
                i,
                None,
                f"the process's first call on CUDA {loads} and creates cuBLAS/cuDNN handles"
                + (", inside the executor's run" if jit else "")
                + " (not profiled: --profile-iters 0 times each)",
                source="settings",
            )
        )
    if _cudnn_benchmark(data):
        out.append(
            Cause(
                CUDNN_AUTOTUNING,
                i,
                None,
                "cudnn_benchmark is on and the shape is new: its convolutions are benchmarked "
                "(not profiled: --profile-iters times it)",
                source="settings",
            )
        )
    return out


# -- what the run is ---------------------------------------------------------------------------


def _on_cuda(data: RunData) -> bool:
    device = data.settings.knobs.get("device")
    return bool(env_keys.cuda_device(data.env)) or (
        isinstance(device, str) and device.startswith("cuda")
    )


def _cudnn_benchmark(data: RunData) -> bool | None:
    """Whether cuDNN autotunes: the knob where set, else what the child saw."""
    knob = data.settings.knobs.get("cudnn_benchmark")
    if isinstance(knob, bool):
        return knob
    seen = env_keys.cuda_device(data.env).get("cudnn_benchmark")
    return seen if isinstance(seen, bool) else None


def _module_loading(data: RunData) -> str | None:
    knob = data.settings.knobs.get("cuda_module_loading")
    if isinstance(knob, str):
        return knob.upper()
    seen = env_keys.cuda_device(data.env).get("module_loading")
    return seen.upper() if isinstance(seen, str) else None


def _cuda_graphs(data: RunData) -> bool:
    mode = data.settings.knobs.get("compile_mode")
    return isinstance(mode, str) and mode in CUDA_GRAPH_MODES and _on_cuda(data)


def _first_calls(data: RunData) -> list[int]:
    """Each shape's first call (iteration 0 where the shapes do not vary)."""
    return [first for first, _, _ in data.first_calls()]


def _steady_profile(data: RunData, i: int, profile: dict[str, Any]) -> dict[str, Any] | None:
    """The steady call a profiled first call is held to: the one it names (``against``), else
    the last profiled call of its shape."""
    against = profile.get("against")
    if isinstance(against, int) and "ops" in data.profiles.get(against, {}):
        return {**data.profiles[against], "iteration": against}
    shape = data.shape_of[i] if data.shape_keys and i < len(data.shape_of) else None
    later = [
        j
        for j, p in data.profiles.items()
        if j > i
        and "ops" in p
        and (shape is None or (j < len(data.shape_of) and data.shape_of[j] == shape))
        and j not in _first_calls(data)
    ]
    if not later:
        return None
    j = max(later)
    return {**data.profiles[j], "iteration": j}
