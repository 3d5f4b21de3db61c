"""The timed loop: every forward pass timed, its figures batched to the parent and kept in
the shared ring.

``prepare`` makes what the loop needs (a ``Loop``); ``iterate`` is the loop itself, where an
iteration costs the call, its clock reads and its bookkeeping and nothing more (every name it
uses is a local, made before the first call); ``Batch.flush`` sends what the loop filled,
every ``FLUSH_EVERY_NS``, every ``FLUSH_MAX_ITERS`` iterations and at the end (``settle``).

Child side: loaded by the agent by path (standard library only at import; torch is passed in).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import cpu_waits, io_counters, loading, opprofile, outcome, protocol
from . import ring as ring_layout
from .channel import (
    FLUSH_EVERY_NS,
    Channel,
    State,
    check_watch,
    marker,
    no_interrupt,
    no_markers,
    stderr_written,
)
from .cuda_timing import DeviceTimer, stream_sync

FLUSH_MAX_ITERS = 4096  # a batch goes out every 50 ms or every 4096 iterations


class Batch:
    """The figures of the iterations not sent yet, column by column, and their sending."""

    def __init__(self, channel: Channel, shaped: bool, timer: DeviceTimer | None) -> None:
        self.channel = channel
        self.shaped = shaped  # each iteration's shape index is sent (several shapes)
        self.timer = timer
        self.durations: list[int] = []
        self.starts: list[int] = []
        self.shapes: list[int] = []
        self.timed: list[int] = []  # each call's pair, -1 for none (a profiled call)
        self.launches: list[int] = []  # how long forward took to return (ns), -1 for none
        self.disk: Any = None  # io_counters.DiskReads from the loop's start, where they say bytes
        self.waits: Any = None  # cpu_waits.RunQueueWaits from the loop's start, where kept
        self.loop_start = 0
        self.first_unsent = 0

    def flush(self) -> None:
        """The iterations filled since the last batch, sent as one batch (with their device
        times, disk reads and run-queue waits), or the channel's pending messages alone."""
        durations, starts, shapes = self.durations, self.starts, self.shapes
        timed, launches, channel = self.timed, self.launches, self.channel
        with no_interrupt():  # a batch is sent whole or not taken from the lists
            # A stop that landed inside an iteration leaves its lists uneven: that iteration
            # was not complete.
            n = min(len(durations), len(starts), len(shapes) if self.shaped else 1 << 62)
            del durations[n:], starts[n:], shapes[n:], timed[n:], launches[n:]
            if durations:
                first = self.first_unsent
                if not first:  # where the pause before the first call ends
                    State.first_call_ns = self.loop_start + starts[0]
                sent_shapes = shapes if self.shaped else None
                batch = protocol.encode_iters(first, durations, starts, sent_shapes)
                if self.timer is not None:
                    batch += protocol.encode_device(first, self.timer.read(timed), launches)
                if self.disk is not None:
                    read, faults = self.disk.since_last()
                    if read or faults:
                        batch += protocol.encode_reads(first, len(durations), read, faults)
                if self.waits is not None:
                    readings = self.waits.drain()
                    if readings is not None:
                        batch += protocol.encode_waits(*readings)
                self.first_unsent += len(durations)
                durations.clear()
                starts.clear()
                shapes.clear()
                timed.clear()
                launches.clear()
                channel.flush(batch)
            elif channel.pending:
                channel.flush()
            if self.waits is not None:
                self.waits.refresh()
            check_watch()


@dataclass
class Loop:
    """What the timed loop needs, made before it starts (``prepare``)."""

    torch: Any
    model: Any
    feeds: list[Any]
    """Each shape's ``(args, kwargs)``."""
    cfg: dict[str, Any]
    channel: Channel
    iters: int
    duration_ns: int | None
    """The run's length in time; ``None``: ``iters`` iterations."""
    shape_at: Callable[[int], int | None] | None
    """Which shape an iteration serves (``loading.shape_schedule``); ``None``: one shape."""
    fresh: Callable[[Any], Any] | None
    """``--fresh-inputs``: a new copy of a shape's inputs for each call."""
    gap: float
    cuda: bool
    sync: Any
    """A wait for the call's work on the current CUDA stream; ``None`` on the CPU."""
    timer: DeviceTimer | None
    """Device time: an event pair around each CUDA call, read back with each batch."""
    ring: memoryview
    """The shared ring's words (``ring.py``): they outlive this process, read on a crash."""
    slots: int
    wrote: Any
    """``wrote[0]()``: whether fd 2 was written since it was last asked (see ``prepare``)."""
    done_prefix: bytes
    marker_fd: int
    profile_at: list[int]
    """The iterations profiled (``--profile-iters``), in order, taken as they come."""
    batch: Batch

    def profile(self, i: int, args: Any, kwargs: Any) -> tuple[int, int]:
        """Iteration ``i``, profiled: its clock readings; its breakdown sent."""
        t0, t1, prof = opprofile.profiled_call(
            self.torch, self.model, args, kwargs, self.sync, self.cuda
        )
        send_profile(prof, i, (t1 - t0) / 1e6, self.cfg, self.channel)
        return t0, t1


def prepare(
    torch: Any, model: Any, feeds: list[Any], cfg: dict[str, Any], channel: Channel
) -> Loop:
    """Everything the loop reads, made before its first call."""
    values = cfg["knobs"]
    cuda = values["device"].startswith("cuda")
    sync = stream_sync(torch) if cuda else None
    # Device time (CUDA): an event pair around each call on the current stream, read back
    # with each batch; every call is synchronized already, so reading them waits for nothing.
    timed = cuda and values.get("device_time") is not False
    timer = DeviceTimer(torch, FLUSH_MAX_ITERS + 1) if timed else None
    shape_at = loading.shape_schedule(cfg, len(feeds))
    slots = cfg.get("ring_slots", 1)
    ring_map = (
        mmap.mmap(cfg["ring_fd"], 0)
        if cfg.get("ring_fd") is not None
        else mmap.mmap(-1, ring_layout.size_of(slots))
    )
    return Loop(
        torch=torch,
        model=model,
        feeds=feeds,
        cfg=cfg,
        channel=channel,
        iters=cfg["iters"],
        duration_ns=int(cfg["duration"] * 1e9) if cfg.get("duration") else None,
        shape_at=shape_at,
        fresh=loading.fresh_feed if cfg.get("fresh_inputs") else None,
        gap=float(cfg.get("gap") or 0.0),
        cuda=cuda,
        sync=sync,
        timer=timer,
        ring=memoryview(ring_map).cast("q"),
        slots=slots,
        # Log lines on fd 2 are pinned to iterations by a marker written after each iteration
        # that wrote to fd 2: "the lines since the last marker were printed in iteration i".
        # The check is one system call that takes the SIGIO a write into the pipe left
        # pending (see watch_stderr), so an iteration that prints nothing writes nothing and
        # wakes nobody. Without the watch, the check says yes: a marker after every
        # iteration, just as exact.
        wrote=stderr_written if cfg["markers"] else no_markers,
        done_prefix=State.marker_prefix + b"done ",
        marker_fd=State.marker_fd,
        profile_at=sorted(set(cfg.get("profile_iters") or [])),
        batch=Batch(channel, shape_at is not None, timer),
    )


def run_loop(
    torch: Any, model: Any, feeds: list[Any], cfg: dict[str, Any], channel: Channel
) -> tuple[str, int]:
    """Time every forward pass; return (``ok`` or ``stopped``, iterations run).

    ``feeds``: each shape's ``(args, kwargs)``; with several, the schedule picks one per
    iteration and each batch carries the shape index of its iterations (``sh``).
    Exceptions from forward propagate, after the iterations before them are sent.
    """
    status, count = iterate(prepare(torch, model, feeds, cfg, channel))
    State.iteration = None
    State.phase = "end"
    sys.stderr.flush()
    marker("phase", "end")
    return status, count


def begin(loop: Loop) -> tuple[int, int, int]:
    """The loop's start marker and the readings its batches count from: (the loop's start,
    the first flush, the first reading of the run-queue waits), each in perf_counter ns."""
    clock = time.perf_counter_ns
    State.phase = None
    sys.stderr.flush()
    marker("loop", "start")
    check_watch()
    loop.wrote[0]()  # the loop marker's own write
    next_flush = clock() + FLUSH_EVERY_NS
    batch = loop.batch
    batch.disk = io_counters.start()
    batch.waits = cpu_waits.start()
    batch.loop_start = loop_start = clock()
    # When a call's end next takes a reading of the waits (never, without them).
    next_wait = loop_start + batch.waits.every_ns if batch.waits is not None else 1 << 62
    return loop_start, next_flush, next_wait


def iterate(loop: Loop) -> tuple[str, int]:
    """The loop: (``ok`` or ``stopped``, iterations run). Its body stays inline and reads
    locals only: it is the hot path."""
    model, feeds, shape_at, fresh, gap = loop.model, loop.feeds, loop.shape_at, loop.fresh, loop.gap
    iters, duration_ns, sync, timer = loop.iters, loop.duration_ns, loop.sync, loop.timer
    batch = loop.batch
    durations, starts, shapes = batch.durations, batch.starts, batch.shapes
    timed, launches, flush = batch.timed, batch.launches, batch.flush
    pairs = timer.pairs if timer is not None else []
    stream = timer.stream if timer is not None else None
    record: Any = timer.record if timer is not None else None
    wait: Any = timer.wait if timer is not None else None
    last_pair = len(pairs) - 1
    pair = 0
    ring, count_word = loop.ring, ring_layout.COUNT_WORD
    first_slot = slot = ring_layout.slot_of(0, loop.slots)
    last_slot = ring_layout.slot_of(loop.slots - 1, loop.slots)
    wrote, done_prefix, marker_fd = loop.wrote, loop.done_prefix, loop.marker_fd
    profile_at, profile = loop.profile_at, loop.profile
    next_profile = profile_at.pop(0) if profile_at else -1
    clock, write, sleep = time.perf_counter_ns, os.write, time.sleep
    args, kwargs = feeds[0]
    current = 0
    status = outcome.OK
    loop_start, next_flush, next_wait = begin(loop)
    waits = batch.waits
    i = 0
    try:
        with loading.grad_context(loop.torch, loop.cfg["knobs"]["grad_mode"]):
            while True:
                if duration_ns is None:
                    if i >= iters:
                        break
                elif clock() - loop_start >= duration_ns:
                    break
                if shape_at is not None:
                    k = shape_at(i)
                    if k is None:  # `once`: every shape has run
                        break
                    args, kwargs = feeds[k]
                    shapes.append(k)
                    current = k
                if fresh is not None:  # made before the clock starts
                    args, kwargs = fresh(feeds[current if shape_at is not None else 0])
                if gap:
                    sleep(gap)
                State.iteration = i
                if i == next_profile:
                    State.iteration_start_ns = clock()
                    t0, t1 = profile(i, args, kwargs)
                    next_profile = profile_at.pop(0) if profile_at else -1
                    if timer is not None:
                        timed.append(-1)
                        launches.append(-1)
                elif timer is None:
                    t0 = clock()
                    State.iteration_start_ns = t0
                    model(*args, **kwargs)
                    if sync is not None:
                        sync()
                    t1 = clock()
                else:
                    # The start event is recorded before the clock starts; the end event is
                    # the one the call's wait waits on (as ``sync`` waits on its own).
                    start, end = pairs[pair]
                    record(start, stream)
                    t0 = clock()
                    State.iteration_start_ns = t0
                    model(*args, **kwargs)
                    returned = clock()
                    record(end, stream)
                    wait(end)
                    t1 = clock()
                    timed.append(pair)
                    launches.append(returned - t0)
                    pair = pair + 1 if pair < last_pair else 0
                State.iteration_start_ns = 0
                durations.append(t1 - t0)
                starts.append(t0 - loop_start)
                ring[slot] = t1 - t0
                ring[slot + 1] = t0 - loop_start
                if t1 >= next_wait:  # a long call, or the first to end a while after a reading
                    next_wait = waits.take(i, t1)
                if wrote[0]():  # before the count moves on: the parent relies on that order
                    write(marker_fd, done_prefix + b"%d\n" % i)
                    wrote[0]()  # the marker's own write
                i += 1
                ring[count_word] = i
                # ring_layout.slot_of(i, slots), inline: this is the hot loop.
                slot = slot + 2 if slot < last_slot else first_slot
                if t1 >= next_flush or len(durations) >= FLUSH_MAX_ITERS:
                    flush()
                    next_flush = clock() + FLUSH_EVERY_NS
            if loop.cfg.get("profile_steady"):
                i = steady_pass(loop, i, slot, (args, kwargs), current, loop_start)
    except KeyboardInterrupt:
        if not State.stop_asked:
            raise  # the model raised it: a failure, reported with its iteration
        status = outcome.STOPPED
    finally:
        settle(loop)
    return status, i


def steady_pass(loop: Loop, i: int, slot: int, feed: Any, current: int, loop_start: int) -> int:
    """``--profile-iters steady``: one more pass, profiled, once the run has settled, kept
    as the loop keeps an iteration (``slot``: its place in the ring); the count after it."""
    State.iteration = i
    t0, t1 = loop.profile(i, *feed)
    batch = loop.batch
    batch.durations.append(t1 - t0)
    batch.starts.append(t0 - loop_start)
    if loop.timer is not None:
        batch.timed.append(-1)
        batch.launches.append(-1)
    if loop.shape_at is not None:
        batch.shapes.append(current)
    loop.ring[slot] = t1 - t0
    loop.ring[slot + 1] = t0 - loop_start
    if loop.wrote[0]():
        os.write(loop.marker_fd, loop.done_prefix + b"%d\n" % i)
        loop.wrote[0]()
    loop.ring[ring_layout.COUNT_WORD] = i + 1
    return i + 1


def settle(loop: Loop) -> None:
    """However the loop ended: the marker of an iteration that wrote to fd 2 (on an exception
    from forward, ``State.iteration`` still names the failing one), the last batch sent, the
    run-queue waits' reader closed."""
    State.iteration_start_ns = 0
    if State.iteration is not None and loop.wrote[0]():
        os.write(loop.marker_fd, loop.done_prefix + b"%d\n" % State.iteration)
    loop.batch.flush()
    if loop.batch.waits is not None:
        loop.batch.waits.close()


def send_profile(
    prof: Any, iteration: int, wall_ms: float, cfg: dict[str, Any], channel: Channel
) -> None:
    """The breakdown of one profiled iteration, and its Chrome trace beside the record."""
    message: dict[str, Any] = {"t": "profile", "iteration": iteration}
    try:
        message.update(opprofile.breakdown(prof, wall_ms))
    except Exception as exc:
        message["error"] = f"profile analysis failed: {exc}"
    if cfg["knobs"]["device"].startswith("cuda"):
        with contextlib.suppress(Exception):  # the breakdown stands without it
            message["cuda"] = opprofile.cuda_summary(prof)
    if cfg.get("trace_prefix"):
        path = f"{cfg['trace_prefix']}.iter{iteration}.trace.json"
        try:
            prof.export_chrome_trace(path)
            message["trace"] = path
        except Exception as exc:
            message["trace_error"] = str(exc)
    channel.send(message)
