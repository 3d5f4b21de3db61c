"""What a run may ask for after its timed loop: the opening replayed warm, and the idle probe.

Child side: loaded by the agent by path (standard library only at import; torch is passed in).
"""

from __future__ import annotations

import time
from typing import Any

from . import loading, outcome
from .channel import Channel, State, marker
from .cuda_timing import device_sync

IDLE_PROBE_CALLS = 3
REPLAYS = 3
MAX_OPENING = 32


def idle_probe(torch: Any, model: Any, feed: Any, cfg: dict[str, Any], channel: Channel) -> str:
    """After the run: for each gap, sleep it, then time one call; three times each. The first
    shape's arguments, so the parent sets them against that shape's steady p50."""
    args, kwargs = feed
    sync = device_sync(torch, cfg)
    results = []
    State.phase = "idle probe"
    marker("phase", "idle probe")
    status = outcome.OK
    try:
        with loading.grad_context(torch, cfg["knobs"]["grad_mode"]):
            for gap in cfg["idle_probe"]:
                times = []
                for _ in range(IDLE_PROBE_CALLS):
                    time.sleep(gap)
                    t0 = time.perf_counter_ns()
                    model(*args, **kwargs)
                    if sync is not None:
                        sync()
                    times.append((time.perf_counter_ns() - t0) / 1e6)
                results.append({"idle_s": gap, "ms": times})
    except KeyboardInterrupt:
        if not State.stop_asked:
            raise
        status = outcome.STOPPED
    shapes = cfg.get("shapes") or []
    message: dict[str, Any] = {"t": "idle_probe", "results": results}
    if shapes:
        message["shape"] = loading.shape_key(shapes[0])
    channel.send(message, now=True)
    State.phase = "end"
    return status


def opening_order(cfg: dict[str, Any], count: int) -> list[int]:
    """The run's opening: the shape of each call, in the order served, up to the first call
    of the last shape to come (at most ``MAX_OPENING`` calls)."""
    shape_at = loading.shape_schedule(cfg, count)
    order: list[int] = []
    seen: set[int] = set()
    for j in range(MAX_OPENING):
        k = shape_at(j) if shape_at is not None else 0
        if k is None:
            break
        order.append(k)
        seen.add(k)
        if len(seen) == count:
            break
    return order


def replay_opening(
    torch: Any, model: Any, feeds: list[Any], cfg: dict[str, Any], channel: Channel
) -> str:
    """After the run: its opening (each shape's first call, in the order served) replayed
    warm, ``REPLAYS`` times, each after the pause that came before the run's first call. What
    the opening costs with nothing left to warm up: the reference a verified recipe's first
    calls are held to, beside their steady p50 (on a GPU, the device's clocks after idle slow
    any call, warm or not)."""
    pause_ns = max(0, State.first_call_ns - State.setup_end_ns) if State.first_call_ns else 0
    order = opening_order(cfg, len(feeds))
    sync = device_sync(torch, cfg)
    fresh = loading.fresh_feed if cfg.get("fresh_inputs") else None
    State.phase = "opening replay"
    marker("phase", "opening replay")
    replays: list[list[float]] = []
    status = outcome.OK
    try:
        with loading.grad_context(torch, cfg["knobs"]["grad_mode"]):
            for _ in range(REPLAYS):
                calls = [fresh(feeds[k]) if fresh else feeds[k] for k in order]
                time.sleep(pause_ns / 1e9)
                times = []
                for args, kwargs in calls:
                    t0 = time.perf_counter_ns()
                    model(*args, **kwargs)
                    if sync is not None:
                        sync()
                    times.append((time.perf_counter_ns() - t0) / 1e6)
                replays.append(times)
    except KeyboardInterrupt:
        if not State.stop_asked:
            raise
        status = outcome.STOPPED
    channel.send(
        {"t": "opening", "pause_ms": pause_ns / 1e6, "shapes": order, "ms": replays}, now=True
    )
    State.phase = "end"
    return status
