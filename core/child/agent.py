"""The child process: applies the knobs, runs the forward loop, reports; ``main`` ties it up.

This is the only module that imports torch. It is self-contained: the standard library, torch,
and its child-side siblings (``protocol``, ``outcome``, ``knobs``, ``ring``, ``channel``,
``hooks``, ``loading``, ``opprofile``), loaded by path as the package ``_warmscope_child``. So any
interpreter that has torch can run it: ``python /path/to/core/child/agent.py`` with the run's
configuration as the first line of stdin.

Descriptors: protocol lines go to a private duplicate of the original stdout; fd 1 is then
pointed at fd 2, so whatever the model prints cannot corrupt the protocol.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import importlib
import importlib.util
import json
import mmap
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the checker only: at run time the siblings load by path, below
    from warmscope.core.child.channel import Channel

HERE = Path(__file__).resolve().parent
CHILD_PACKAGE = "_warmscope_child"
IDLE_PROBE_CALLS = 3
FLUSH_MAX_ITERS = 4096  # a batch goes out every 50 ms or every 4096 iterations
PR_SET_PDEATHSIG = 1
MARK_EVERY_ITERATION = "WARMSCOPE_MARK_EVERY_ITERATION"
"""Set (to anything): no SIGIO watch of fd 2, a marker after every iteration instead."""


def child_package(folder: Path = HERE) -> ModuleType:
    """``core/child/`` as the package ``_warmscope_child``, loaded by path. Everything in that
    folder is child-side: standard library only at import (a test imports each module so).

    Not ``warmscope.core``: under another interpreter (``--python``) warmscope may be missing or
    another version. And not ``core/`` on ``sys.path``: its generic module names (``settings``,
    ``targets``) would shadow the user's own modules. Siblings import each other relatively.
    """
    if CHILD_PACKAGE in sys.modules:
        return sys.modules[CHILD_PACKAGE]
    spec = importlib.util.spec_from_file_location(
        CHILD_PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec and spec.loader
    package = importlib.util.module_from_spec(spec)
    sys.modules[CHILD_PACKAGE] = package
    spec.loader.exec_module(package)
    return package


if __name__ == "__main__":
    if sys.path and Path(sys.path[0]).resolve() == HERE:
        sys.path.pop(0)

child_package()
(
    outcome,
    protocol,
    knobs,
    ring_layout,
    channel_mod,
    hooks,
    loading,
    opprofile,
    pt2,
    io_counters,
    cpu_waits,
) = (
    importlib.import_module(f"{CHILD_PACKAGE}.{name}")
    for name in (
        "outcome",
        "protocol",
        "knobs",
        "ring",
        "channel",
        "hooks",
        "loading",
        "opprofile",
        "pt2",
        "io_counters",
        "cpu_waits",
    )
)
State = channel_mod.State
Channel = channel_mod.Channel
event = channel_mod.event
marker = channel_mod.marker
UsageError = outcome.UsageError


# -- process plumbing ------------------------------------------------------------------------


def read_config() -> dict[str, Any]:
    """The first line of stdin; read raw so nothing past it is buffered away from the watcher."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(0, 65536)
        if not chunk:
            break
        data += chunk
    return json.loads(data or b"{}")


def take_protocol_fd() -> int:
    """Keep the original stdout for protocol lines; make fd 1 an alias of stderr."""
    fd = os.dup(1)
    os.set_inheritable(fd, False)
    os.dup2(2, 1)
    sys.stdout = channel_mod.MarkedStream(os.fdopen(1, "w", buffering=1, closefd=False))
    sys.stderr = channel_mod.MarkedStream(sys.stderr)
    return fd


def die_with_parent(parent_pid: int) -> None:
    """Exit when the parent goes away: a parent-death signal on Linux, stdin EOF elsewhere."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent_pid and os.getppid() != parent_pid:
        os._exit(outcome.EXIT_PARENT_GONE)  # the parent died before the signal was armed

    def watch_stdin() -> None:
        # Raw reads: a daemon thread blocked inside sys.stdin's buffered reader would hold its
        # lock while the interpreter shuts down, which Python reports as a fatal error.
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        os._exit(outcome.EXIT_PARENT_GONE)

    threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()


# -- knobs ------------------------------------------------------------------------------------------


def resolve_attr(root: Any, dotted: str) -> tuple[Any, str]:
    """``torch.backends.cudnn.benchmark`` -> (``torch.backends.cudnn``, ``"benchmark"``)."""
    parts = dotted.split(".")
    obj = root
    for part in parts[1:-1]:
        obj = getattr(obj, part)
    return obj, parts[-1]


def apply_knobs(torch: Any, values: dict[str, Any], channel: Channel) -> None:
    """Apply every knob that is set; report any this torch lacks or refuses."""
    for k in knobs.KNOBS:
        value = values.get(k.name)
        if value is None or k.apply in ("agent",) or k.apply.startswith("env:"):
            continue
        how, _, path = k.apply.partition(":")
        try:
            owner, attr = resolve_attr(torch, path)
            if not hasattr(owner, attr):
                raise AttributeError(attr)
        except AttributeError:
            channel.send(
                event(
                    "knob", f"knob {k.name} not supported by torch {torch.__version__}: no {path}"
                )
            )
            continue
        try:
            if how == "call":
                getattr(owner, attr)(k.torch_value(value))
            else:
                setattr(owner, attr, k.torch_value(value))
        except Exception as exc:
            channel.send(event("knob", f"knob {k.name}={k.show(value)} refused: {exc}"))


CONFIG_MODULES = {"dynamo": "torch._dynamo.config", "inductor": "torch._inductor.config"}


def check_capabilities(torch: Any, values: dict[str, Any]) -> None:
    """Knob values this torch build cannot honour: refused before the run, the reason named."""
    engine = values.get("quantized_engine")
    supported = getattr(torch.backends.quantized, "supported_engines", None)
    if engine and supported is not None and engine not in supported:
        raise UsageError(
            f"quantized_engine={engine}: this torch ({torch.__version__}) has the engines "
            f"{', '.join(e for e in supported if e != 'none')}"
        )
    if values.get("onednn_fusion") and not torch.backends.mkldnn.is_available():
        raise UsageError(
            f"onednn_fusion=on: this torch ({torch.__version__}) was built without oneDNN "
            "(torch.backends.mkldnn.is_available() is False)"
        )
    if values.get("cpu_fusion"):
        llvm = getattr(torch._C, "_llvm_enabled", None)
        if llvm is not None and not llvm():
            raise UsageError(
                f"cpu_fusion=on: this torch ({torch.__version__}) was built without LLVM, so "
                "the TensorExpr fuser cannot generate CPU code; leave cpu_fusion at default"
            )


def apply_torch_config(config: dict[str, str], channel: Channel) -> None:
    """``dynamo.NAME=VALUE`` / ``inductor.NAME=VALUE`` on the installed torch's config
    modules, the text converted to the option's current type; a refusal is an event."""
    for key, text in config.items():
        prefix, _, name = key.partition(".")
        try:
            owner: Any = importlib.import_module(CONFIG_MODULES[prefix])
            *path, attr = name.split(".")
            for part in path:
                owner = getattr(owner, part)
            if not hasattr(owner, attr):
                raise AttributeError(f"torch has no {CONFIG_MODULES[prefix]}.{name}")
            setattr(owner, attr, config_value(getattr(owner, attr), text))
        except Exception as exc:
            channel.send(event("knob", f"knob {key}={text} refused: {exc}"))


def config_value(current: Any, text: str) -> Any:
    """``text`` as the type of the option's current value (bool, int, float, text, None)."""
    word = text.strip()
    if isinstance(current, bool):
        if word.lower() not in knobs.BOOL_WORDS:
            raise ValueError(f"expected on/off, got {text!r}")
        return knobs.BOOL_WORDS[word.lower()]
    if isinstance(current, int):
        return int(word)
    if isinstance(current, float):
        return float(word)
    if current is None:
        if word.lower() in ("none", ""):
            return None
        for kind in (int, float):
            with contextlib.suppress(ValueError):
                return kind(word)
        return word
    if isinstance(current, str):
        return text
    raise ValueError(
        f"options of type {type(current).__name__} cannot be set from the command line"
    )


# -- the loop --------------------------------------------------------------------------------


def event_calls(torch: Any) -> tuple[Any, Any]:
    """``record(event, stream)`` and ``wait(event)``: the CUDA event base's own methods, called
    without ``torch.cuda.Event``'s Python wrappers (a microsecond a call, inside the timed
    span); the wrappers where a torch has no such base."""
    base = getattr(torch._C, "_CudaEventBase", None)
    record = getattr(base, "record", None)
    wait = getattr(base, "synchronize", None)
    if record is None or wait is None:
        return (lambda event, stream: event.record(stream)), (lambda event: event.synchronize())
    return record, wait


def stream_sync(torch: Any) -> Any:
    """A wait for the work queued on the current stream: an event recorded there after the
    call, then waited on. What reading the call's output waits for, and far cheaper than
    ``torch.cuda.synchronize()`` (every stream of the device: about 20 µs more a call, seen
    on an H100). The stream is the one current when the loop starts."""
    record, wait = event_calls(torch)
    done = torch.cuda.Event()
    stream = torch.cuda.current_stream()

    def sync() -> None:
        record(done, stream)
        wait(done)

    return sync


class DeviceTimer:
    """CUDA event pairs for the loop's calls, used round-robin: more than a batch holds
    (``FLUSH_MAX_ITERS``), so a pair is read before it is recorded again."""

    def __init__(self, torch: Any, size: int = FLUSH_MAX_ITERS + 1) -> None:
        event = torch.cuda.Event
        self.pairs = [(event(enable_timing=True), event(enable_timing=True)) for _ in range(size)]
        self.stream = torch.cuda.current_stream()
        self.record, self.wait = event_calls(torch)

    def read(self, timed: list[int]) -> list[int]:
        """The device time of each call, in integer ns (-1: not timed)."""
        pairs = self.pairs
        return [int(pairs[k][0].elapsed_time(pairs[k][1]) * 1e6) if k >= 0 else -1 for k in timed]


def run_loop(
    torch: Any, model: Any, feeds: list[Any], cfg: dict[str, Any], channel: Channel
) -> tuple[str, int]:
    """Time every forward pass; return (``ok`` or ``stopped``, iterations run).

    ``feeds``: each shape's ``(args, kwargs)``; with several, the schedule picks one per
    iteration and each batch carries the shape index of its iterations (``sh``).
    Exceptions from forward propagate, after the iterations before them are sent.
    """
    values = cfg["knobs"]
    iters = cfg["iters"]
    duration_ns = int(cfg["duration"] * 1e9) if cfg.get("duration") else None
    markers = cfg["markers"]
    sync: Any = None
    if values["device"].startswith("cuda"):
        sync = stream_sync(torch)
    durations: list[int] = []
    starts: list[int] = []
    shapes: list[int] = []
    shape_at = loading.shape_schedule(cfg, len(feeds))
    args, kwargs = feeds[0]
    current = 0
    gap = float(cfg.get("gap") or 0.0)
    sleep = time.sleep
    first_unsent = 0
    # The shared ring (see core/child/ring.py): survives this process, read by the parent on a crash.
    slots = cfg.get("ring_slots", 1)
    ring_map = (
        mmap.mmap(cfg["ring_fd"], 0)
        if cfg.get("ring_fd") is not None
        else mmap.mmap(-1, ring_layout.size_of(slots))
    )
    ring = memoryview(ring_map).cast("q")
    count_word = ring_layout.COUNT_WORD
    first_slot = slot = ring_layout.slot_of(0, slots)
    last_slot = ring_layout.slot_of(slots - 1, slots)
    clock = time.perf_counter_ns
    write = os.write
    # Log lines on fd 2 are pinned to iterations by a marker written after each iteration that
    # wrote to fd 2: "the lines since the last marker were printed in iteration i". The check is
    # one system call that takes the SIGIO a write into the pipe left pending (see
    # watch_stderr), so an iteration that prints nothing writes nothing and wakes nobody.
    # Without the watch, the check says yes: a marker after every iteration, just as exact.
    wrote = channel_mod.stderr_written if markers else channel_mod.no_markers
    done_prefix = State.marker_prefix + b"done "
    marker_fd = State.marker_fd

    # Device time (CUDA): an event pair around each call on the current stream, read back
    # with each batch; every call is synchronized already, so reading them waits for nothing.
    cuda = values["device"].startswith("cuda")
    timer = DeviceTimer(torch) if cuda and values.get("device_time") is not False else None
    pairs = timer.pairs if timer is not None else []
    stream = timer.stream if timer is not None else None
    record: Any = timer.record if timer is not None else None
    wait: Any = timer.wait if timer is not None else None
    last_pair = len(pairs) - 1
    pair = 0
    timed: list[int] = []  # each call's pair, -1 for none (a profiled call)
    launches: list[int] = []  # how long forward took to return (ns), -1 for none
    disk: Any = None  # io_counters.DiskReads from the loop's start, where the counters say bytes
    waits: Any = None  # cpu_waits.RunQueueWaits from the loop's start, where the kernel keeps them
    next_wait = 1 << 62  # when a call's end next takes a reading of them (never, without them)

    def flush() -> None:
        nonlocal first_unsent
        with channel_mod.no_interrupt():  # a batch is sent whole or not taken from the lists
            # A stop that landed inside an iteration leaves its lists uneven: that iteration
            # was not complete.
            n = min(len(durations), len(starts), len(shapes) if shape_at is not None else 1 << 62)
            del durations[n:], starts[n:], shapes[n:], timed[n:], launches[n:]
            if durations:
                if not first_unsent:  # where the pause before the first call ends
                    State.first_call_ns = loop_start + starts[0]
                sent_shapes = shapes if shape_at is not None else None
                batch = protocol.encode_iters(first_unsent, durations, starts, sent_shapes)
                if timer is not None:
                    batch += protocol.encode_device(first_unsent, timer.read(timed), launches)
                if disk is not None:
                    read, faults = disk.since_last()
                    if read or faults:
                        batch += protocol.encode_reads(first_unsent, len(durations), read, faults)
                if waits is not None:
                    readings = waits.drain()
                    if readings is not None:
                        batch += protocol.encode_waits(*readings)
                first_unsent += len(durations)
                durations.clear()
                starts.clear()
                shapes.clear()
                timed.clear()
                launches.clear()
                channel.flush(batch)
            elif channel.pending:
                channel.flush()
            if waits is not None:
                waits.refresh()
            channel_mod.check_watch()

    profile_at = sorted(set(cfg.get("profile_iters") or []))
    next_profile = profile_at.pop(0) if profile_at else -1

    def profile(i: int) -> tuple[int, int]:
        t0, t1, prof = opprofile.profiled_call(torch, model, args, kwargs, sync, cuda)
        send_profile(prof, i, (t1 - t0) / 1e6, cfg, channel)
        return t0, t1

    fresh = loading.fresh_feed if cfg.get("fresh_inputs") else None
    status = "ok"
    State.phase = None
    sys.stderr.flush()
    marker("loop", "start")
    channel_mod.check_watch()
    wrote[0]()  # the loop marker's own write
    next_flush = clock() + channel_mod.FLUSH_EVERY_NS
    disk = io_counters.start()
    waits = cpu_waits.start()
    loop_start = clock()
    if waits is not None:
        next_wait = loop_start + waits.every_ns
    i = 0
    try:
        with loading.grad_context(torch, values["grad_mode"]):
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
                    t0, t1 = profile(i)
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
                    next_flush = clock() + channel_mod.FLUSH_EVERY_NS
            if cfg.get("profile_steady"):
                # `steady`: one more pass, profiled, once the run has settled. (The bookkeeping
                # repeats the loop's on purpose: the loop body stays inline, it is the hot path.)
                State.iteration = i
                t0, t1 = profile(i)
                durations.append(t1 - t0)
                starts.append(t0 - loop_start)
                if timer is not None:
                    timed.append(-1)
                    launches.append(-1)
                if shape_at is not None:
                    shapes.append(current)
                ring[slot] = t1 - t0
                ring[slot + 1] = t0 - loop_start
                if wrote[0]():
                    write(marker_fd, done_prefix + b"%d\n" % i)
                    wrote[0]()
                i += 1
                ring[count_word] = i
    except KeyboardInterrupt:
        if not State.stop_asked:
            raise  # the model raised it: a failure, reported with its iteration
        status = outcome.STOPPED
    finally:
        # On an exception from forward, State.iteration still names the failing iteration.
        State.iteration_start_ns = 0
        if State.iteration is not None and wrote[0]():
            write(marker_fd, done_prefix + b"%d\n" % State.iteration)
        flush()
        if waits is not None:
            waits.close()
    State.iteration = None
    State.phase = "end"
    sys.stderr.flush()
    marker("phase", "end")
    return status, i


def serve_recipe(
    torch: Any, model: Any, feeds: list[Any], cfg: dict[str, Any], phase: Any, channel: Channel
) -> Any:
    """The recipe's ``prepare(model)`` as a setup phase; compiles it made are watched from
    then on (its own warm-up compiles are part of its start-up, not events of the run)."""
    model = loading.run_recipe(torch, model, feeds, cfg, phase)
    if "torch._dynamo" in sys.modules:
        hooks.install_compile_hooks(torch, channel)
        if cfg["mode"] == "compile" and hasattr(torch.compiler, "set_stance"):
            # A warmed-up compile recipe serves without compiling: a recompile while serving
            # fails the call (dynamo's message names its reason) and so the process.
            torch.compiler.set_stance("fail_on_recompile")
    return model


def send_inputs(torch: Any, cfg: dict[str, Any], feeds: list[Any], channel: Channel) -> None:
    """What the model is given (whoever brought it), and the table of shapes when they vary."""
    if cfg.get("inputs_file"):
        source = "file"
    elif cfg["inputs"]:
        source = "spec"
    else:
        source = "target"
    channel.send(
        {"t": "inputs", "source": source, "inputs": loading.describe(torch, feeds[0])}, now=True
    )
    shapes = cfg.get("shapes") or []
    if len(feeds) > 1:
        channel.send(
            {"t": "shapes", "keys": [loading.shape_key(d) for d in shapes], "dims": shapes},
            now=True,
        )


def idle_probe(torch: Any, model: Any, feed: Any, cfg: dict[str, Any], channel: Channel) -> str:
    """After the run: for each gap, sleep it, then time one call; three times each. The first
    shape's arguments, so the parent sets them against that shape's steady p50."""
    args, kwargs = feed
    sync = stream_sync(torch) if cfg["knobs"]["device"].startswith("cuda") else None
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


REPLAYS = 3
MAX_OPENING = 32


def replay_opening(
    torch: Any, model: Any, feeds: list[Any], cfg: dict[str, Any], channel: Channel
) -> str:
    """After the run: its opening (each shape's first call, in the order served) replayed
    warm, ``REPLAYS`` times, each after the pause that came before the run's first call. What
    the opening costs with nothing left to warm up: the reference a verified recipe's first
    calls are held to, beside their steady p50 (on a GPU, the device's clocks after idle slow
    any call, warm or not)."""
    pause_ns = max(0, State.first_call_ns - State.setup_end_ns) if State.first_call_ns else 0
    shape_at = loading.shape_schedule(cfg, len(feeds))
    order: list[int] = []
    seen: set[int] = set()
    for j in range(MAX_OPENING):
        k = shape_at(j) if shape_at is not None else 0
        if k is None:
            break
        order.append(k)
        seen.add(k)
        if len(seen) == len(feeds):
            break
    sync = stream_sync(torch) if cfg["knobs"]["device"].startswith("cuda") else None
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


def send_memory(torch: Any, cfg: dict[str, Any], channel: Channel) -> None:
    """The child's peak memory: resident set (ru_maxrss), and CUDA's max allocated."""
    memory: dict[str, Any] = {"t": "memory"}
    with contextlib.suppress(Exception):
        # POSIX only: elsewhere the memory line goes without the RSS
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        memory["peak_rss_mb"] = round(kb / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)
    if cfg["knobs"]["device"].startswith("cuda"):
        with contextlib.suppress(Exception):
            memory["cuda_max_allocated_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    channel.send(memory, now=True)


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


def report_error(channel: Channel, exc: BaseException, *, where: str, usage: bool) -> None:
    channel.send(
        {
            "t": "error",
            "where": where,
            "iteration": State.iteration,
            "phase": State.phase,
            "usage": usage,
            "exception": type(exc).__name__,
            "message": str(exc) if usage else f"{type(exc).__name__}: {exc}",
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        },
        now=True,
    )


def main() -> int:
    """The run: set up the process, load and prepare (``setup``), measure (``measure``), each
    failure reported as the protocol says; the exit code."""
    cfg, channel = start()
    phase = channel_mod.Phases(channel)
    try:
        torch, model, feeds, graphs = setup(cfg, channel, phase)
    except UsageError as exc:
        report_error(channel, exc, where="load", usage=True)
        return outcome.EXIT_USAGE
    except KeyboardInterrupt as exc:
        if not State.stop_asked:  # raised by the model's own code: a failure like any other
            report_error(channel, exc, where=State.phase or "load", usage=False)
            return outcome.EXIT_FAILED
        channel.send({"t": "done", "status": outcome.STOPPED, "iterations": 0}, now=True)
        return outcome.EXIT_STOPPED
    except BaseException as exc:
        report_error(channel, exc, where=State.phase or "load", usage=False)
        return outcome.EXIT_FAILED
    return measure(torch, model, feeds, graphs, cfg, channel)


def start() -> tuple[dict[str, Any], Channel]:
    """The process's plumbing before any model code: the protocol's descriptor, the config,
    the parent's death, the stop signals, the marker descriptor and its watch, the crash
    handler, the hello, the warning hook and the flusher."""
    channel = Channel(take_protocol_fd())
    cfg = read_config()
    State.marker_prefix = protocol.marker_prefix(cfg.get("marker_secret", ""))
    die_with_parent(cfg.get("parent_pid", 0))
    signal.signal(signal.SIGINT, channel_mod.ask_stop)
    signal.signal(signal.SIGTERM, channel_mod.ask_stop)
    State.marker_fd = os.dup(2)
    os.set_inheritable(State.marker_fd, False)
    if cfg.get("markers") and not os.environ.get(MARK_EVERY_ITERATION):
        State.watching = channel_mod.watch_stderr(State.marker_fd)
    # The stderr pipe directly (works whatever sys.stderr is, even after the model closes fd 2);
    # only the crashing thread, not our helpers.
    faulthandler.enable(file=State.marker_fd, all_threads=False)
    channel.send({"t": "hello", "v": protocol.VERSION, "pid": os.getpid()}, now=True)
    hooks.install_warning_hook(channel)
    channel_mod.start_flusher(channel)
    return cfg, channel


def setup(
    cfg: dict[str, Any], channel: Channel, phase: Any
) -> tuple[Any, Any, list[Any], dict[str, str]]:
    """torch, the knobs, CUDA, the model, its inputs, its mode and a recipe, each timed as a
    setup phase: torch, the module to serve, each shape's inputs and its graphs as loaded."""
    with phase("import torch"):
        try:
            # in the child only, timed as its own phase: the agent starts on the standard library
            import torch
        except ModuleNotFoundError as exc:
            if exc.name != "torch":
                raise
            raise UsageError(
                f"{sys.executable} has no torch: install torch there, or pass --python "
                "with an interpreter that has it"
            ) from None
    with phase("apply knobs"):
        check_capabilities(torch, cfg["knobs"])
        apply_knobs(torch, cfg["knobs"], channel)
        if cfg.get("torch_config"):
            apply_torch_config(cfg["torch_config"], channel)
        hooks.watch_compile(torch, channel)
    device = cfg["knobs"]["device"]
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise UsageError(
                f"--device {device}: CUDA is not available to this torch "
                f"({torch.__version__}, built for CUDA {torch.version.cuda})"
            )
        with phase("cuda init"):
            torch.cuda.init()
            torch.empty(1, device=device)
            torch.cuda.synchronize()
    channel.send({"t": "env", **loading.environment(torch, device)}, now=True)
    if cfg.get("imports"):
        with phase("imports"):
            pt2.import_modules(cfg["imports"])
    # An AOTInductor package's load (its compiled library, its weights) is its own phase.
    with phase("load package" if cfg["target"]["kind"] == "aoti" else "load"):
        model, examples = loading.load_model(torch, cfg["target"], device, channel)
    if "torch._dynamo" in sys.modules:  # the factory compiled by other means
        hooks.install_compile_hooks(torch, channel)
    with phase("inputs"):
        feeds = loading.make_feeds(torch, cfg, examples, device)
    send_inputs(torch, cfg, feeds, channel)
    model = loading.prepare(torch, model, feeds[0], cfg, phase, channel)
    # The graphs as loaded, before a recipe runs the module, and so that nothing comes
    # between the recipe's last call and the run's first but the loop's own start.
    graphs = loading.loaded_graphs(torch, model)
    if cfg.get("recipe"):
        model = serve_recipe(torch, model, feeds, cfg, phase, channel)
    return torch, model, feeds, graphs


def measure(
    torch: Any,
    model: Any,
    feeds: list[Any],
    graphs: dict[str, str],
    cfg: dict[str, Any],
    channel: Channel,
) -> int:
    """The timed loop, then the opening's replay and the idle probe where asked, the peak
    memory, the graph as last executed and the end: the exit code."""
    try:
        status, count = run_loop(torch, model, feeds, cfg, channel)
        if status == outcome.OK and cfg.get("replay_opening"):
            status = replay_opening(torch, model, feeds, cfg, channel)
        if status == outcome.OK and cfg.get("idle_probe"):
            status = idle_probe(torch, model, feeds[0], cfg, channel)
    except KeyboardInterrupt as exc:
        if not State.stop_asked:  # the model raised it
            report_error(channel, exc, where=State.phase or "forward", usage=False)
            send_memory(torch, cfg, channel)
            return outcome.EXIT_FAILED
        status, count = outcome.STOPPED, None  # a stop that came as the loop was ending
    except BaseException as exc:
        report_error(channel, exc, where=State.phase or "forward", usage=False)
        send_memory(torch, cfg, channel)
        return outcome.EXIT_FAILED
    send_memory(torch, cfg, channel)
    if graphs:
        # What the profiling executor made of the graph: guards, fusion groups, no profile nodes.
        with contextlib.suppress(Exception):
            graphs["optimized"] = str(torch.jit.last_executed_optimized_graph())
        channel.send({"t": "graphs", **graphs})
    channel.send({"t": "done", "status": status, "iterations": count}, now=True)
    return outcome.EXIT_STOPPED if status == outcome.STOPPED else outcome.EXIT_OK


if __name__ == "__main__":
    code = main()
    # Every return of main() follows the run's last protocol line, sent at once. The agent
    # ends with the run: interpreter shutdown would wait for the model's own threads (a
    # non-daemon one never ends), so it exits as os._exit does, once its output is out.
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
