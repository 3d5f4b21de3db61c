"""A slow first call that no event explains: which ones, the process that profiles them, and
what their profiles say; so too the slowest later calls of a warm-up that stand out (``later``).

A shape's first call (iteration 0 where the shapes do not vary) is slow when
``stats.first_call_slow`` says so against that shape's steady p50 and noise band. Its events
explain it where they label it (a profiling run, a compile, a recompile), and so does a profile
of it (``--profile-iters``). The rest, the run plan explains with one more process after the
measured one (``run_plan``): the same run under the profiler at those first calls and at a
steady call of each one's shape, as ``--profile-iters`` profiles, cut short after the last of
them. Its profiles join the run's record (``"separate": true``; on a first call's,
``"explains"`` and ``"against"``, the steady call it is held to), so whatever reads the record
later says the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any

from warmscope.core.base import units
from warmscope.core.child import outcome
from warmscope.core.data import breakdown, causes, contention, stats, trace_evidence
from warmscope.core.data.cause_kinds import DISK_READS
from warmscope.core.data.run import EXPLAINED, RunData
from warmscope.core.data.settings import MAX_PROFILED, RunSettings

EXPLAINS = "first call"
"""A profile's ``explains``: it is a first call, profiled to explain it."""
SLOW_CALL = "slow call"
"""A profile's ``explains``: a later call of the warm-up, slow where nothing says why."""
STAND_OUT = 3.0
"""A later call of the warm-up stands out at this many times its shape's steady p50 (and slow
as a first call is, beyond the noise band): a tail a busy machine adds is not one."""
LATER_EXCESS_MS = 1.0
"""…and costs at least this much more than that p50: microseconds of jitter on a fast model
are not worth a process."""
LATER_MOST = 2
"""The slowest of the later calls that stand out are profiled, at most this many."""
REFERENCE_CALLS = 8
"""The explaining process runs this many calls past its last profiled one, unprofiled."""
REPRODUCED = 0.1
"""A call is reproduced where the explaining process's call exceeds its own steady reference
by at least this share of what the run's call exceeded the run's steady p50 by: a call slow
only in the first process to run it exceeds it by next to nothing there, while a busy machine
can make the run's call several times what the same work costs (the share of what the causes
account for then says how much of the run's excess they explain)."""
SHARE_SAID = 0.5
"""A named cause that accounts for less than this share of the call's excess says its share."""

__all__ = [
    "EXPLAINED",
    "EXPLAINS",
    "SLOW_CALL",
    "Unexplained",
    "detail",
    "explaining_settings",
    "notes",
    "unexplained",
]


@dataclass(frozen=True)
class Unexplained:
    """A slow first call that nothing in the run explains, and a steady call to hold it to."""

    iteration: int
    against: int
    """A steady call of the same shape."""
    shape: str | None
    ms: float
    p50_ms: float
    what: str = EXPLAINS
    """``EXPLAINS``, a shape's first call; ``SLOW_CALL``, a later call of the warm-up."""


EXECUTOR_LABELS = ("profiling run", "optimization")
"""TorchScript's executor: on CUDA its first calls are profiled all the same, for the CUDA first
use inside them (kernels loaded, cuBLAS/cuDNN handles, autotuning) apart from its own share."""


def _on_cuda(data: RunData) -> bool:
    device = data.settings.knobs.get("device")
    return isinstance(device, str) and device.startswith("cuda")


MIN_STEADY_CALLS = 5
"""A shape with fewer steady calls has no steady p50 to hold its first call to."""
SETTLE = 2
"""A steady call to hold a first call to is this many of its shape's calls into steady state
(where the run has them): the very first steady call may still be settling."""


def _steady_call(data: RunData, first: int, state: stats.SteadyState) -> int | None:
    """A call of ``first``'s shape in its steady state, after ``first``."""
    sf = state.summary.steady_from
    if sf is None:
        return None
    start = max(sf, first + 1)
    if not data.shape_keys:
        calls: Iterable[int] = range(start, data.count)
    else:
        shape = data.shape_of[first]
        calls = (i for i in range(start, data.count) if data.shape_of[i] == shape)
    found = list(islice(calls, SETTLE + 1))
    return found[-1] if found else None


def unexplained(data: RunData) -> list[Unexplained]:
    """The slow first calls of a run that ended well that neither an event nor a profile
    explains, each with the steady call to profile against it (a shape with at least
    ``MIN_STEADY_CALLS`` steady calls)."""
    if data.status != outcome.OK:
        return []
    out = []
    for first, key, state in data.first_calls():
        p50 = state.summary.p50_ms
        sigma = state.reference[1] if state.reference is not None else 0.0
        first_ms = data.latency(first)
        if state.summary.steady_count < MIN_STEADY_CALLS or p50 is None:
            continue
        if not stats.first_call_slow(first_ms, p50, sigma):
            continue
        if first in data.profiles:
            continue  # profiled already
        label = data.label(first)
        if label is not None and not (label in EXECUTOR_LABELS and _on_cuda(data)):
            continue  # its events say why

        against = _steady_call(data, first, state)
        if against is not None:
            out.append(Unexplained(first, against, key, first_ms, p50))
    out = out[: MAX_PROFILED // 2]
    return out + later(data, min(LATER_MOST, MAX_PROFILED // 2 - len(out)))


def later(data: RunData, most: int = LATER_MOST) -> list[Unexplained]:
    """The slowest later calls of a warm-up, ``most`` at the most: after a shape's first call
    and before its steady state, standing out (``STAND_OUT`` × the shape's steady p50 and
    ``LATER_EXCESS_MS`` above it, and slow as a first call is), and neither labelled by an event nor profiled; each held to a
    steady call of its shape. Calls a few times slower one after another (a traced model
    re-profiling, a cache filling) are explained the way first calls are."""
    if data.status != outcome.OK or most <= 0:
        return []
    found = []
    for first, key, state in data.first_calls():
        p50, sf = state.summary.p50_ms, state.summary.steady_from
        if p50 is None or sf is None or state.summary.steady_count < MIN_STEADY_CALLS:
            continue
        sigma = state.reference[1] if state.reference is not None else 0.0
        shape = data.shape_of[first] if data.shape_keys else None
        for i in range(first + 1, min(sf, data.count)):
            if shape is not None and data.shape_of[i] != shape:
                continue
            ms = data.latency(i)
            if ms < max(STAND_OUT * p50, p50 + LATER_EXCESS_MS):
                continue
            if not stats.first_call_slow(ms, p50, sigma):
                continue
            if i in data.profiles or data.label(i) is not None:
                continue
            if contention.excess_waited(data, i) is not None:
                continue
            against = _steady_call(data, i, state)
            if against is not None:
                found.append(Unexplained(i, against, key, ms, p50, SLOW_CALL))
    return sorted(found, key=lambda c: (-c.ms, c.iteration))[:most]


def explaining_settings(settings: RunSettings, calls: list[Unexplained]) -> RunSettings:
    """The run of ``settings`` again, under the profiler at ``calls`` and the steady calls they
    are held to, ended after the last of them (a ramp's blocks are cut by the iteration
    count: that run keeps its count), with no idle probe."""
    explaining = settings.copy()
    at = sorted({i for c in calls for i in (c.iteration, c.against)})
    explaining.profile_iters = ",".join(map(str, at))
    explaining.profile_in_run = True
    explaining.idle_probe = []
    explaining.explain = False
    if explaining.schedule != "ramp":
        # Steady calls left unprofiled after the last profiled one: the reference that process
        # holds its own first call to, measured as the run measures (``reference_ms``).
        explaining.iters = at[-1] + 1 + REFERENCE_CALLS
    explaining.duration = None
    return explaining


def reference_ms(got: RunData, call: Unexplained) -> float | None:
    """The explaining process's steady reference for ``call``: the median of its own calls of
    that shape from the steady call the run held it to on (``against``), unprofiled."""
    shape = got.shape_of[call.iteration] if got.shape_keys else None
    kept = sorted(
        got.latency(i)
        for i in range(call.against, got.count)
        if i not in got.profiles
        and (shape is None or (i < len(got.shape_of) and got.shape_of[i] == shape))
    )
    return kept[len(kept) // 2] if kept else None


def notes(data: RunData) -> list[dict[str, Any]]:
    """What the profiles of the run's slow calls say, each against a steady call of its
    shape: ``iteration``, ``shape``, ``against``, ``label`` (``first call: aten::mm 14×
    steady — kernel selection``), ``leading`` (the operators whose first call costs most, and
    the time no operator accounts for), ``reproduced``, ``share`` and ``excess_ms``
    (``Reproduction``), ``source`` and ``explain_s`` (what the process that profiled them
    cost) where one did; ``runtime`` where that process ran in another runtime than the run
    (a C++ run's first call profiled in Python). A call the profile did not reproduce gets no
    cause: its label says so, with what the run itself saw."""
    profiles = data.profiles
    out = []
    evidence = trace_evidence.for_run(data) if profiles else None
    for first, key, state in data.first_calls() if profiles else []:
        slow = profiles.get(first)
        if not slow or "ops" not in slow:
            continue
        against = slow.get("against")
        if not isinstance(against, int) or "ops" not in profiles.get(against, {}):
            against = _profiled_steady(data, first, state)
        if against is None:
            continue
        steady = profiles[against]
        every = causes.causes_at(data, first, evidence or causes.no_evidence)
        found = [c for c in every if c.source.startswith("profile") or c.name == DISK_READS]
        named = [c for c in found if c.source.startswith("profile")]
        own = causes.label([c for c in every if not c.source.startswith("profile")])
        label: str | None
        if named:  # reads from disk join what the profile names; alone, they are no label
            label = f"{EXPLAINS}: {causes.label(found)}"
            named_ms = sum(c.ms for c in named if c.ms is not None)
        else:
            label = breakdown.first_call_label(slow, steady)
            named_ms = sum(d.added_ms for d in breakdown.leading(slow, steady))
        if label is None:
            continue
        seen = reproduction(data, first, slow, steady, state.summary.p50_ms)
        rows = len(named) if named else None
        out.append(
            _note(first, key, against, label, slow, steady, seen.judged(named_ms), own, rows)
        )
    for i, slow in sorted(profiles.items()):
        against = slow.get("against")
        if slow.get("explains") != SLOW_CALL or not isinstance(against, int):
            continue
        steady = profiles.get(against, {})
        if "ops" not in slow or "ops" not in steady:
            continue
        slow_label = breakdown.first_call_label(slow, steady, SLOW_CALL)
        if slow_label is not None:
            shape = data.shape_of[i] if data.shape_keys and i < len(data.shape_of) else -1
            key = data.shape_keys[shape] if 0 <= shape < len(data.shape_keys) else None
            seen = reproduction(data, i, slow, steady, slow.get("run_p50_ms"))
            named_ms = sum(d.added_ms for d in breakdown.leading(slow, steady))
            out.append(_note(i, key, against, slow_label, slow, steady, seen.judged(named_ms)))
    return out


@dataclass(frozen=True)
class Reproduction:
    """Whether the profiled call was slow as the run's call was, and by how much.

    The run's call exceeded its shape's steady p50 by ``run_excess_ms``. A profile made in
    the run itself is of that very call. One made by the explaining process is of the same
    call in another process: held to that process's own steady calls, unprofiled
    (``reference_ms``), less what the profiler adds to a call (its profiled steady call
    against that reference), it exceeded them by ``excess_ms``. It reproduced the run's call
    where that is ``REPRODUCED`` or more of the run's excess less what the run's call waited
    for a core (``waited_ms``, measured: no second process is held to a busy moment's wait)."""

    reproduced: bool
    excess_ms: float
    """The profiled call's excess, as the process that profiled it measured it."""
    run_ms: float
    run_excess_ms: float
    separate: bool
    share: float | None = None
    """What the named causes account for (0–1) of ``whole_ms``."""
    waited_ms: float = 0.0
    """How long the run's call waited for a core (``contention.waited_ms``)."""

    @property
    def whole_ms(self) -> float:
        """The excess a share is of: the run's call's, less its wait for a core, or the
        profiled call's where that was larger (a busier moment): a call reproduced in part is
        explained in part, and one slower there is not explained beyond what it showed."""
        return max(self.run_excess_ms - self.waited_ms, self.excess_ms)

    def judged(self, named_ms: float) -> Reproduction:
        """The same, with the share of the excess that causes of ``named_ms`` account for."""
        whole = self.whole_ms
        share = min(1.0, max(0.0, named_ms / whole)) if whole > 0 else None
        return replace(self, share=share)


def reproduction(
    data: RunData,
    i: int,
    slow: dict[str, Any],
    steady: dict[str, Any],
    p50_ms: float | None,
) -> Reproduction:
    """How the profile of call ``i`` (``slow``, held to ``steady``) compares with the run."""
    run_ms = float(slow.get("run_ms") or data.latency(i))
    run_p50 = float(slow.get("run_p50_ms") or p50_ms or 0.0)
    run_excess = max(0.0, run_ms - run_p50)
    wall = float(slow.get("wall_ms") or 0.0)
    steady_wall = float(steady.get("wall_ms") or 0.0)
    separate = bool(slow.get("separate"))
    waited = min(contention.waited_ms(data, i) or 0.0, run_excess)
    own_work = run_excess - waited  # what a quiet machine would have shown
    reference = slow.get("reference_ms")
    if not separate or not isinstance(reference, (int, float)):
        # The run's own profile (of that very call), or a record from before references:
        # profiled held to profiled.
        excess = max(0.0, wall - steady_wall)
        reproduced = not separate or excess >= REPRODUCED * own_work
        return Reproduction(reproduced, excess, run_ms, run_excess, separate, waited_ms=waited)
    profiler_cost = max(0.0, steady_wall - reference)
    excess = max(0.0, wall - reference - profiler_cost)
    reproduced = excess >= REPRODUCED * own_work
    return Reproduction(reproduced, excess, run_ms, run_excess, True, waited_ms=waited)


def _note(
    i: int,
    key: str | None,
    against: int,
    label: str,
    slow: dict[str, Any],
    steady: dict[str, Any],
    seen: Reproduction,
    own: str = "",
    named_rows: int | None = None,
) -> dict[str, Any]:
    """``own``: what the run's own evidence says of the call (reads from disk, contention);
    ``named_rows``: how many causes the share counts (by default the leading operators)."""
    what = label.partition(":")[0]
    share = round(seen.share, 3) if seen.share is not None and seen.reproduced else None
    if not seen.reproduced:  # no cause from a profile that did not see the slow call
        label = (
            f"{what}: not reproduced in a second process ({units.ms(seen.excess_ms)} above "
            f"its own steady calls there, {units.ms(seen.run_excess_ms)} in this run"
            + (f": {own})" if own else ")")
        )
    elif share is not None and share < SHARE_SAID:
        named = len(breakdown.leading(slow, steady)) if named_rows is None else named_rows
        who = "the named causes account" if named > 1 else "accounts"
        label += f"; {who} for {share:.0%} of {units.ms(seen.whole_ms)}"
    if seen.reproduced and seen.waited_ms >= REPRODUCED * seen.run_excess_ms:
        label += f"; in this run it also waited {units.ms(seen.waited_ms)} for a core"
    return {
        "iteration": i,
        "shape": key,
        "against": against,
        "label": label,
        "reproduced": seen.reproduced,
        "share": share,
        "excess_ms": round(seen.excess_ms, 4),
        "run_excess_ms": round(seen.run_excess_ms, 4),
        "waited_ms": round(seen.waited_ms, 4),
        "leading": [
            {
                "name": d.name,
                "kind": d.kind,
                "first_ms": d.slow_ms,
                "steady_ms": d.steady_ms,
                "text": breakdown.delta_text(d),
            }
            for d in (breakdown.leading(slow, steady) if seen.reproduced else [])
        ],
        "wall_ms": slow.get("wall_ms"),
        "steady_wall_ms": steady.get("wall_ms"),
        "reference_ms": slow.get("reference_ms"),
        "source": slow.get("source"),
        "explain_s": slow.get("explain_s"),
        "runtime": slow.get("runtime"),
    }


def _profiled_steady(data: RunData, first: int, state: stats.SteadyState) -> int | None:
    """A profiled call of ``first``'s shape in steady state (``--profile-iters …,steady``)."""
    sf = state.summary.steady_from
    if sf is None:
        return None
    shape = data.shape_of[first] if data.shape_keys and first < len(data.shape_of) else None
    found = [
        i
        for i, p in data.profiles.items()
        if i > first
        and i >= sf
        and "ops" in p
        and (shape is None or (i < len(data.shape_of) and data.shape_of[i] == shape))
    ]
    return max(found) if found else None


def detail(note: dict[str, Any]) -> str:
    """A first call's leading costs against steady state and what explaining it cost:
    ``aten::mm 4.19 ms vs 290 µs · 1.20 ms in no operator · one more process, 2.31 s``."""
    parts = []
    for row in note.get("leading", []):
        if row["kind"] == "slower":
            parts.append(
                f"{row['name']} {units.ms(row['first_ms'])} vs {units.ms(row['steady_ms'])}"
            )
        else:
            parts.append(row["text"])
    if note.get("explain_s") is not None:
        # A C++ run's first call profiled by a Python process: say so, its calls differ.
        where = (
            f" ({note['runtime']}: the same file, plus its call path)"
            if note.get("runtime")
            else ""
        )
        parts.append(f"one more process{where}, {note['explain_s']:.1f} s")
    return " · ".join(parts)
