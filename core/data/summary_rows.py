"""The rows a run's summary gives beside its statistics: each shape's first call against its
own steady calls, the idle probe's calls, and the device's time in a steady call. Cheap enough
for a view to draw from (no profile analysis here: that is ``run_summary``'s)."""

from __future__ import annotations

from typing import Any

from warmscope.core.data import stats
from warmscope.core.data.run import EXPLAINED, NS_PER_MS, RunData

LAUNCH_BOUND_SHARE = 0.8
"""A steady call whose forward returns after this share of it, or later, is launch-bound: the
host spent it launching, and the GPU waited for the launches."""
DEVICE_BOUND_SHARE = 0.5
"""A steady call whose forward returns within this share of it is device-bound: the work was
queued early and the host waited on the GPU."""


def device_summary(run: RunData) -> dict[str, Any] | None:
    """How busy the device was in a steady call, against the host's time of the same
    calls: the medians of device time, host time and time until forward returned, over
    the steady iterations the device timed (``None``: none was). ``bound``: launch-bound
    where forward returns only at the end of the call (the GPU waits on the host's
    launches), device-bound where it returns early (the host waits on the GPU)."""
    if not len(run.device_ns):
        return None
    sf = run.summary().steady_from
    if sf is None:
        return None
    left_out = set(run.profiled_here())
    rows = [
        (run.latency(i), run.device_ns[i] / NS_PER_MS, run.launch_ns[i] / NS_PER_MS)
        for i in range(sf, min(run.count, len(run.device_ns)))
        if run.device_ns[i] >= 0 and run.launch_ns[i] >= 0 and i not in left_out
    ]
    if not rows:
        return None
    host = stats.percentile([r[0] for r in rows], 50)
    device = stats.percentile([r[1] for r in rows], 50)
    launch = stats.percentile([r[2] for r in rows], 50)
    share = launch / host if host > 0 else 0.0
    bound = (
        "launch-bound"
        if share >= LAUNCH_BOUND_SHARE
        else "device-bound"
        if share <= DEVICE_BOUND_SHARE
        else "mixed"
    )
    return {
        "count": len(rows),
        "p50_ms": device,
        "p90_ms": stats.percentile([r[1] for r in rows], 90),
        "host_p50_ms": host,
        "launch_p50_ms": launch,
        "device_share": device / host if host > 0 else None,
        "launch_share": share,
        "bound": bound,
    }


def shape_rows(run: RunData) -> list[dict[str, Any]]:
    """The summary's per-shape rows: the first call of each shape (its first-seen cost)
    against that shape's own steady p50, and the events of that first call."""
    rows = []
    for k, (idx, s) in enumerate(run.shape_summaries()):
        first = idx[0] if idx else None
        first_ms = run.latency(first) if first is not None else None
        rows.append(
            {
                "key": run.shape_keys[k],
                "dims": run.shape_dims[k] if k < len(run.shape_dims) else {},
                "count": len(idx),
                "first_iteration": first,
                "first_ms": first_ms,
                "p50_ms": s.p50_ms,
                "first_vs_p50": first_ms / s.p50_ms if first_ms is not None and s.p50_ms else None,
                **_held(run, first, first_ms, s.p50_ms),
                "steady_from": s.steady_from,
                "p90_ms": s.p90_ms,
                "cv": s.cv,
                "warmup_excess_ms": s.warmup_excess_ms,
                "label": run.label(first) if first is not None else None,
                "events": _first_call_events(run, first),
            }
        )
    return rows


def _held(
    run: RunData, first: int | None, first_ms: float | None, p50_ms: float | None
) -> dict[str, Any]:
    """Where the opening was replayed: the same call warm after the same pause
    (``replay_ms``) and the first call against the larger of it and the steady p50
    (``first_vs_held``): what warm-up alone leaves of the first call."""
    replay = replay_ms(run, first) if first is not None else None
    if replay is None or first_ms is None or not p50_ms:
        return {}
    return {"replay_ms": replay, "first_vs_held": first_ms / max(p50_ms, replay)}


def _first_call_events(run: RunData, iteration: int | None) -> list[dict[str, Any]]:
    """The events of one iteration, repeats counted (``NoOpt Graph`` ×6 is one entry)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for e in run.events_at(iteration) if iteration is not None else []:
        if e.kind in ("stderr", "info", EXPLAINED):
            continue
        entry = out.setdefault((e.kind, e.title), {"kind": e.kind, "title": e.title})
        entry["count"] = entry.get("count", 0) + 1
    for entry in out.values():
        if entry["count"] == 1:
            del entry["count"]
    return list(out.values())


def replay_ms(run: RunData, iteration: int) -> float | None:
    """The median across replays of the call at ``iteration`` of the run's opening, warm,
    after the same pause (``--replay-opening``); ``None`` beyond the opening or where the
    replay served another shape there."""
    shapes, replays = run.opening.get("shapes") or [], run.opening.get("ms") or []
    if not replays or iteration >= len(shapes):
        return None
    if run.shape_keys and (
        iteration >= len(run.shape_of) or run.shape_of[iteration] != shapes[iteration]
    ):
        return None
    return stats.percentile([r[iteration] for r in replays], 50)


def idle_probe_rows(run: RunData) -> list[dict[str, Any]]:
    """``--idle-probe`` results, each against the steady p50 of the shape it used."""
    if not run.idle_probe:
        return []
    p50 = run.summary().p50_ms
    if run.shape_keys and run.idle_probe_shape in run.shape_keys:
        p50 = run.shape_summaries()[run.shape_keys.index(run.idle_probe_shape)][1].p50_ms
    rows = []
    for r in run.idle_probe:
        times = [float(t) for t in r.get("ms", []) if isinstance(t, (int, float))]
        rows.append(
            {
                "idle_s": r.get("idle_s"),
                "shape": run.idle_probe_shape,
                "ms": times,
                "steady_p50_ms": p50,
                "vs_p50": [t / p50 for t in times] if p50 else None,
            }
        )
    return rows
