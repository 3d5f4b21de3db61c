"""What a first call on CUDA shows of its causes: its operator profile held to a steady call's
of its shape (cuDNN autotuning, cuBLAS / cuDNN first use, CUDA lazy module loading,
caching-allocator growth), with the TorchScript executor's own share of the call and what the
profile did not see; unprofiled, what its settings say, untimed.

The CUDA evidence of a profiled call (``trace_evidence``: its trace's runtime calls, CUPTI's
records) is handed in (``EvidenceFor``), else read from the profile line itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.data.cause_kinds import (
    ALLOCATOR,
    CUBLAS_FIRST_USE,
    CUDA_FIRST_USE,
    CUDNN_AUTOTUNING,
    CUDNN_FIRST_USE,
    LAZY_LOADING,
    LIBRARY_FIRST_USE,
    OPTIMIZATION,
    PROFILING_RUN,
    UNSEEN,
    Cause,
)
from warmscope.core.data.cuda_facts import cudnn_benchmark, module_loading
from warmscope.core.data.disk_read_causes import DISK_READ_LEAST, mib
from warmscope.core.data.run import RunData
from warmscope.core.data.trace_evidence import (
    LAUNCHES,
    MODULE_LOADING,
    TIMING,
    Evidence,
    from_profile,
)

__all__ = ["EvidenceFor", "profiled_first_call", "unprofiled_first_call"]

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
UNSEEN_SHARE = 0.2
"""A measured call this much longer than its profiled twin (a share of the call) names the gap."""

EvidenceFor = Callable[[int], "Evidence | None"]
"""The CUDA evidence of profiled call ``i`` (its trace, or its profile line), ``None``: none."""


def profiled_first_call(
    data: RunData,
    i: int,
    profile: dict[str, Any],
    from_events: list[Cause],
    evidence: EvidenceFor,
) -> list[Cause]:
    """The causes of profiled first call ``i``: ``from_events`` (its events'), the executor's
    share apart from what its profile shows against a steady call of its shape."""
    steady = _steady_profile(data, i, profile)
    measured = _profile_causes(data, i, profile, steady, evidence(i), evidence)
    return _with_executor_share(data, i, from_events, measured, profile)


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
        benchmark = cudnn_benchmark(self.data)
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
        eager = module_loading(self.data) == "EAGER"
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
            f"{batch} read {mib(read.read_bytes)} from disk; the explaining "
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


def unprofiled_first_call(data: RunData, i: int, known: list[Cause]) -> list[Cause]:
    """A slow first call on CUDA that no profile covers: what the settings say, untimed."""
    out: list[Cause] = []
    if i == 0:
        jit = any(c.name in (PROFILING_RUN, OPTIMIZATION) for c in known)
        loads = (
            "loads the CUDA libraries whole (module loading EAGER)"
            if module_loading(data) == "EAGER"
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
    if cudnn_benchmark(data):
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


def _steady_profile(data: RunData, i: int, profile: dict[str, Any]) -> dict[str, Any] | None:
    """The steady call a profiled first call is held to: the one it names (``against``), else
    the last profiled call of its shape."""
    against = profile.get("against")
    if isinstance(against, int) and "ops" in data.profiles.get(against, {}):
        return {**data.profiles[against], "iteration": against}
    shape = data.shape_of[i] if data.shape_keys and i < len(data.shape_of) else None
    firsts = {first for first, _, _ in data.first_calls()}
    later = [
        j
        for j, p in data.profiles.items()
        if j > i
        and "ops" in p
        and (shape is None or (j < len(data.shape_of) and data.shape_of[j] == shape))
        and j not in firsts
    ]
    if not later:
        return None
    j = max(later)
    return {**data.profiles[j], "iteration": j}
