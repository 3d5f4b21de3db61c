"""CPU contention, measured: how long the child's threads waited for a core, and where.

The agent reads its threads' run-queue delay after a call that ends a while after its last
reading (``core/child/cpu_waits.py``); each reading covers the calls since the one before it
(a ``CpuWait``). A window whose threads waited for at least half of its calls' time was
contended: other processes, or more threads than cores, held the cores. Such calls are
neither warm-up nor steady state, so the statistics leave them out (``waits.left_out``), and
a slow call whose excess is mostly that wait is named for it (``excess_waited``, the cause
``cause_kinds.CONTENTION``). Pure functions over a run's data.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from warmscope.core.base.units import ms as fmt_ms
from warmscope.core.data import waits
from warmscope.core.data.intervals import RunWarning
from warmscope.core.data.run import RunData
from warmscope.core.data.waits import CONTENDED, CpuWait

__all__ = [
    "CONTENDED",
    "excess_waited",
    "load_text",
    "machine_text",
    "oversubscribed",
    "run_warnings",
    "summary",
    "wait_at",
    "waited_ms",
    "warnings",
]

SLOW = 2.0
"""A call is named for contention where it took at least this many times its shape's p50."""
PRESSURE_SAID = 10.0
"""A machine whose CPU pressure reached this (%) is said to be busy, contended calls or not."""


def wait_at(data: RunData, i: int) -> CpuWait | None:
    """The reading whose window holds call ``i`` (``None``: no reading covers it)."""
    found = data.cpu_waits
    k = bisect_left(found, i, key=lambda w: w.iteration)
    if k < len(found) and found[k].since <= i <= found[k].iteration:
        return found[k]
    return None


def waited_ms(data: RunData, i: int) -> float | None:
    """How long call ``i`` waited for a core (the thread that calls the model, at most the
    call's time): its window's wait where the window is this call alone or the call took
    most of it; ``None`` where no reading is that precise."""
    w = wait_at(data, i)
    if w is None:
        return None
    window = waits.window_ms(w, data.latency, data.count)
    if window <= 0 or data.latency(i) < CONTENDED * window:
        return None
    # A reading covers the time between calls too; the call lost at most all of its own.
    return min(w.wait_ns / 1e6, data.latency(i))


NEAR_SAMPLES = 5
"""A call's load is the mean of this many samples nearest it."""


def _samples_near(data: RunData, i: int, key: str) -> list[float]:
    """The values of ``key`` in the usage samples taken nearest call ``i`` (the sampler pins
    each to the iteration in progress, so they come in its order: found by bisection, as a
    long contended run asks for many calls)."""
    samples = data.samples
    k = bisect_left(samples, i, key=_sample_iteration)
    found = [
        (abs(s["iteration"] - i), s[key])
        for s in samples[max(0, k - NEAR_SAMPLES) : k + NEAR_SAMPLES]
        if isinstance(s.get("iteration"), int) and isinstance(s.get(key), (int, float))
    ]
    found.sort(key=lambda pair: pair[0])
    return [v for _, v in found[:NEAR_SAMPLES]]


def _sample_iteration(sample: dict[str, Any]) -> int:
    at = sample.get("iteration")
    return at if isinstance(at, int) else -1


def _cpus(data: RunData) -> int | None:
    usable = data.env.get("cpus_usable")
    if isinstance(usable, dict) and isinstance(usable.get("cpus"), int):
        return int(usable["cpus"])
    cpus = data.env.get("cpu_affinity") or data.env.get("cpu_logical")
    return cpus if isinstance(cpus, int) else None


def load_text(data: RunData, i: int | None = None) -> str:
    """``load 4.1 on 2 CPUs``: the tasks runnable on the machine near call ``i`` (the run's
    highest sample without one), against the cores the child could use; ``""`` where no
    sample has them."""
    if i is not None:
        near = _samples_near(data, i, "runnable")
        load = sum(near) / len(near) if near else None
    else:
        loads = [s["runnable"] for s in data.samples if isinstance(s.get("runnable"), int)]
        load = max(loads) if loads else None
    if load is None:
        return ""
    cpus = _cpus(data)
    return f"load {load:.1f}" + (f" on {cpus} CPU{'s' if cpus != 1 else ''}" if cpus else "")


def excess_waited(data: RunData, i: int) -> float | None:
    """How long call ``i``'s threads waited for a core (ms), where that wait is most of the
    call's excess over its shape's steady p50 (``CONTENDED``); else ``None``."""
    waited = waited_ms(data, i)
    if waited is None:
        return None
    p50 = _p50_of(data, i)
    if p50 is None:
        return None
    excess = data.latency(i) - p50
    if excess <= 0 or waited < CONTENDED * excess or data.latency(i) < SLOW * p50:
        return None
    return waited


def _p50_of(data: RunData, i: int) -> float | None:
    if data.shape_keys:
        k = data.shape_of[i] if i < len(data.shape_of) else -1
        states = data.shape_states()
        return states[k][1].summary.p50_ms if 0 <= k < len(states) else None
    return data.summary().p50_ms


def summary(data: RunData) -> dict[str, Any] | None:
    """The run's contention in figures: ``wait_ms`` (the loop thread's, all readings),
    ``threads_wait_ms`` (the other threads'), ``contended_calls`` (in
    contended windows), ``left_out`` (of them, left out of the statistics), the highest
    ``runnable`` and ``cpu_pressure`` the sampler saw, ``cpus``; ``None`` where the run has no
    readings (the C++ agent, a kernel without scheduler statistics)."""
    if not data.cpu_waits:
        return None
    contended = sum(
        len(waits.calls(w, data.count))
        for w in data.cpu_waits
        if waits.contended(w, data.latency, data.count)
    )
    out: dict[str, Any] = {
        "wait_ms": round(sum(w.wait_ns for w in data.cpu_waits) / 1e6, 3),
        "threads_wait_ms": round(sum(w.threads_ns for w in data.cpu_waits) / 1e6, 3),
        "switches": sum(w.switches for w in data.cpu_waits),
        "contended_calls": contended,
        "left_out": len(data.contended_left_out()),
    }
    for key in ("runnable", "cpu_pressure"):
        values = [s[key] for s in data.samples if isinstance(s.get(key), (int, float))]
        if values:
            out[key] = max(values)
    cpus = _cpus(data)
    if cpus is not None:
        out["cpus"] = cpus
    return out


def machine_text(data: RunData) -> str | None:
    """``CPU contention: 129 calls (64%) waited for a core, 2.61 s in all · load 4.1 on 2
    CPUs · CPU pressure 38%``, where some calls were contended; ``None`` otherwise."""
    s = summary(data)
    if s is None:
        return None
    if not s["contended_calls"]:
        if s.get("cpu_pressure", 0) < PRESSURE_SAID:
            return None
        load = load_text(data)
        return (
            f"a busy machine: CPU pressure up to {s['cpu_pressure']:.0f}% (time some task "
            "waited for a core)" + (f" · {load}" if load else "") + "; no call of this run waited"
        )
    share = s["contended_calls"] / max(1, data.count)
    parts = [
        f"CPU contention: {s['contended_calls']} call(s) ({share:.0%}) waited for a core, "
        f"{fmt_ms(s['wait_ms'])} in all"
        + (f", {s['left_out']} of them left out of the statistics" if s["left_out"] else "")
    ]
    load = load_text(data)
    if load:
        parts.append(load)
    if s.get("cpu_pressure"):
        parts.append(f"CPU pressure up to {s['cpu_pressure']:.0f}% (time some task waited)")
    return " · ".join(parts)


def run_warnings(data: RunData, final: bool = True) -> list[RunWarning]:
    """What contention says of the run's figures: more torch threads than usable cores (known
    from the start), and, once the run is ``final``, the calls that waited for a core."""
    out = []
    if final and (text := machine_text(data)):
        s = summary(data) or {}
        brief = (
            f"{s['contended_calls']} calls waited"
            if s.get("contended_calls")
            else f"busy machine ({s.get('cpu_pressure', 0):.0f}%)"
        )
        out.append(RunWarning("contention", text, brief))
    if text := oversubscribed(data):
        usable = data.env["cpus_usable"]["cpus"]
        threads = data.env["intra_op_threads"]
        out.append(RunWarning("threads", text, f"{threads} on {usable} cores: set {usable}"))
    return out


def warnings(data: RunData) -> list[str]:
    """``run_warnings``' texts."""
    return [w.text for w in run_warnings(data)]


def oversubscribed(data: RunData) -> str | None:
    """``torch runs 8 intra-op threads on 2 usable cores (affinity): --set
    intra_op_threads=2``, where the child's threads outnumber the cores it may use."""
    threads = data.env.get("intra_op_threads")
    usable = data.env.get("cpus_usable")
    if not isinstance(threads, int) or not isinstance(usable, dict):
        return None
    cpus, bound = usable.get("cpus"), usable.get("bound", "cores")
    if not isinstance(cpus, int) or threads <= cpus:
        return None
    return (
        f"torch runs {threads} intra-op threads on {cpus} usable core(s) ({bound}): "
        f"they wait for each other; --set intra_op_threads={cpus}"
    )
