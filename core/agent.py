"""The child process: applies the knobs, loads the target, runs the forward loop, reports.

This is the only module that imports torch. It is self-contained (standard library, torch, and
its sibling ``protocol``/``knobs`` files loaded by path), so any interpreter that has torch can
run it: ``python /path/to/core/agent.py`` with the run's configuration as the first line of stdin.

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
import logging
import mmap
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
FLUSH_EVERY_NS = 50_000_000  # batches go out at most every 50 ms...
FLUSH_MAX_ITERS = 4096  # ...or every 4096 iterations
BUSY_AFTER_NS = 500_000_000  # a single iteration running longer than this is reported live
PR_SET_PDEATHSIG = 1
EXIT_USAGE = 2
EXIT_FAILED = 1
EXIT_STOPPED = 130
EXIT_PARENT_GONE = 70


def _sibling(name: str) -> ModuleType:
    """Load ``name.py`` from this folder without putting the folder on ``sys.path``.

    Running this file as a script puts ``core/`` first on ``sys.path``, where its generic module
    names (``settings``, ``stats``) would shadow the user's own modules: remove it, and load the
    two siblings the agent needs by path.
    """
    qualified = f"_warmscope_agent_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, HERE / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    if sys.path and Path(sys.path[0]).resolve() == HERE:
        sys.path.pop(0)

protocol = _sibling("protocol")
knobs = _sibling("knobs")
opprofile = _sibling("opprofile")


class UsageError(Exception):
    """A bad target or input found in the child (exit code 2, no model code at fault)."""


class State:
    """What the loop is doing now; read by the warning/log hooks and the flusher thread."""

    iteration: int | None = None
    phase: str | None = "start"
    iteration_start_ns: int = 0
    activity: str = ""
    marked: int | None = None  # the iteration of the last marker written to fd 2


class Channel:
    """Batched protocol writer. Events queue up and go out with the next iteration batch."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.pending: list[bytes] = []
        self.last_flush_ns = time.perf_counter_ns()

    def send(self, message: dict[str, Any], *, now: bool = False) -> None:
        line = protocol.encode(message)
        with self.lock:
            self.pending.append(line)
            if now:
                self._flush_locked()

    def flush(self, extra: bytes = b"") -> None:
        with self.lock:
            if extra:
                self.pending.append(extra)
            self._flush_locked()

    def _flush_locked(self) -> None:
        data = b"".join(self.pending)
        self.pending.clear()
        self.last_flush_ns = time.perf_counter_ns()
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.fd, view)
            except BrokenPipeError:
                os._exit(EXIT_PARENT_GONE)
            view = view[written:]


def event(kind: str, title: str, text: str = "", **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"t": "event", "kind": kind, "title": title, "text": text}
    if State.iteration is not None:
        message["iteration"] = State.iteration
    else:
        message["phase"] = State.phase
    message.update(extra)
    return message


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
    sys.stdout = MarkedStream(os.fdopen(1, "w", buffering=1, closefd=False))
    sys.stderr = MarkedStream(sys.stderr)
    return fd


def die_with_parent(parent_pid: int) -> None:
    """Exit when the parent goes away: a parent-death signal on Linux, stdin EOF elsewhere."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent_pid and os.getppid() != parent_pid:
        os._exit(EXIT_PARENT_GONE)  # the parent died before the signal was armed

    def watch_stdin() -> None:
        # Raw reads: a daemon thread blocked inside sys.stdin's buffered reader would hold its
        # lock while the interpreter shuts down, which Python reports as a fatal error.
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        os._exit(EXIT_PARENT_GONE)

    threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()


def start_flusher(channel: Channel) -> None:
    """Send queued events and a ``busy`` note while one iteration runs long (a compile)."""

    def run() -> None:
        while True:
            time.sleep(0.1)
            now = time.perf_counter_ns()
            if State.iteration is not None and State.iteration_start_ns:
                running = now - State.iteration_start_ns
                if running > BUSY_AFTER_NS:
                    channel.send(
                        {
                            "t": "busy",
                            "iteration": State.iteration,
                            "ms": running / 1e6,
                            "activity": State.activity,
                        }
                    )
            if channel.pending and now - channel.last_flush_ns > FLUSH_EVERY_NS * 2:
                channel.flush()

    threading.Thread(target=run, name="flusher", daemon=True).start()


def marker(kind: str, value: object) -> None:
    State.marked = State.iteration if kind == "it" else None
    os.write(2, protocol.MARKER + f"{kind} {value}\n".encode())


class MarkedStream:
    """``sys.stdout``/``sys.stderr`` that mark the iteration before the first write in it.

    Python-level prints are thus pinned exactly even when per-iteration markers are off (no
    log capture), and cost nothing in iterations that print nothing.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if State.iteration is not None and State.marked != State.iteration:
            self._stream.flush()
            marker("it", State.iteration)
        return int(self._stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class Phases:
    """Times setup phases and tells the parent as each starts and ends."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    @contextlib.contextmanager
    def __call__(self, name: str):  # type: ignore[no-untyped-def]
        State.phase = name
        sys.stderr.flush()
        marker("phase", name)
        self.channel.send({"t": "phase_start", "name": name}, now=True)
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            ms = (time.perf_counter_ns() - start) / 1e6
            self.channel.send({"t": "phase", "name": name, "ms": ms}, now=True)


# -- hooks: warnings, dynamo, torch logging ------------------------------------------------------


def install_warning_hook(channel: Channel) -> None:
    def showwarning(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        first = str(message).strip().splitlines()[0] if str(message).strip() else ""
        title = f"{category.__name__}: {first}"[:300]
        channel.send(
            event("warning", title, f"{filename}:{lineno}: {category.__name__}: {message}")
        )

    warnings.showwarning = showwarning


def install_compile_hooks(torch: Any, channel: Channel) -> None:
    """Dynamo compile start/end, recompiles with their guard failures, graph breaks."""
    try:
        from torch._dynamo import callback
    except ImportError as exc:
        channel.send(event("info", f"compile events unavailable: {exc}"))
        return
    started: dict[str, int] = {}

    def compile_id(args: Any) -> str:
        return str(getattr(args, "compile_id", "") or "?")

    @callback.on_compile_start
    def on_start(args: Any = None) -> None:
        cid = compile_id(args)
        started[cid] = time.perf_counter_ns()
        State.activity = f"compiling {cid}"

    @callback.on_compile_end
    def on_end(args: Any = None) -> None:
        cid = compile_id(args)
        begin = started.pop(cid, None)
        ms = (time.perf_counter_ns() - begin) / 1e6 if begin else None
        State.activity = ""
        trigger = getattr(getattr(args, "callback_trigger", None), "name", "")
        title = f"compile {cid}" + (f" ({trigger.lower()})" if trigger else "")
        channel.send(event("compile", title, "", ms=ms, compile_id=cid))

    class Forward(logging.Handler):
        def __init__(self, kind: str) -> None:
            super().__init__(logging.DEBUG)
            self.kind = kind

        def emit(self, record: logging.LogRecord) -> None:
            with contextlib.suppress(Exception):
                text = record.getMessage()
                channel.send(event(self.kind, _log_title(self.kind, text), text))

    with contextlib.suppress(Exception):
        torch._logging.set_logs(recompiles=True, graph_breaks=True)
    from torch._logging._internal import log_registry

    for qname in sorted(log_registry.artifact_log_qnames):
        artifact = qname.rpartition(".__")[2]
        if artifact in ("recompiles", "graph_breaks"):
            logger = logging.getLogger(qname)
            logger.addHandler(Forward("recompile" if artifact == "recompiles" else "graph_break"))
            logger.propagate = False  # caught here, with the iteration; not printed again


def _log_title(kind: str, text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return kind
    if kind == "recompile":
        reasons = [ln.lstrip("- ") for ln in lines if ln.startswith("- ")]
        head = lines[0]
        return (f"{head}: {reasons[0]}" if reasons else head)[:300]
    reason = next((ln for ln in lines if ln.startswith("Graph Break Reason:")), lines[0])
    return f"graph break: {reason.removeprefix('Graph Break Reason:').strip()}"[:300]


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
                getattr(owner, attr)(value)
            else:
                setattr(owner, attr, value)
        except Exception as exc:
            channel.send(event("knob", f"knob {k.name}={k.show(value)} refused: {exc}"))
    strategy = values.get("fusion_strategy")
    if strategy:
        try:
            torch.jit.set_fusion_strategy(knobs.parse_fusion_strategy(strategy))
        except Exception as exc:
            channel.send(event("knob", f"knob fusion_strategy={strategy} refused: {exc}"))


# -- loading ---------------------------------------------------------------------------------


def load_factory_module(target: dict[str, Any]) -> ModuleType:
    if target["kind"] in ("file", "sample"):
        path = Path(target["path"])
        name = f"_warmscope_target_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"cannot load {path} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        # The file's own folder on sys.path, as `python file.py` would have it.
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
        return module
    name = target["module"]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise UsageError(f"no module named {exc.name!r} (target {target['spec']})") from None
        raise


def load_model(torch: Any, target: dict[str, Any], device: str) -> tuple[Any, Any]:
    """The module to run, and the factory's own example inputs if it has any."""
    kind = target["kind"]
    if kind == "archive":
        try:
            return torch.jit.load(target["path"], map_location=device), None
        except RuntimeError as exc:
            raise UsageError(
                f"{target['path']}: not a loadable TorchScript archive: {exc}"
            ) from None
    if kind == "pickle":
        return torch.load(target["path"], map_location=device, weights_only=False), None
    module = load_factory_module(target)
    factory_name = target["factory"]
    factory = getattr(module, factory_name, None)
    where = target.get("path") or target.get("module")
    if factory is None:
        raise UsageError(f"{where} defines no {factory_name!r}")
    model = factory() if callable(factory) and not isinstance(factory, torch.nn.Module) else factory
    if isinstance(model, tuple) and len(model) == 2 and isinstance(model[0], torch.nn.Module):
        model, examples = model
    else:
        examples = getattr(module, "example_inputs", None)
        examples = examples() if callable(examples) else examples
    if not isinstance(model, torch.nn.Module):
        raise UsageError(
            f"{where}:{factory_name} returned {type(model).__name__}, not a torch.nn.Module"
        )
    return model, examples


def build_inputs(
    torch: Any, specs: list[dict[str, Any]], device: str, dtype: str | None
) -> list[Any]:
    """Integers are zeros (valid indices for embeddings); floats a fixed-seed normal."""
    generator = torch.Generator().manual_seed(0)
    tensors = []
    for spec in specs:
        tdtype = getattr(torch, spec["dtype"])
        shape = spec["shape"]
        if tdtype.is_floating_point:
            tensor = torch.randn(shape, generator=generator, dtype=torch.float32).to(tdtype)
            if dtype:
                tensor = tensor.to(getattr(torch, dtype))
        else:
            tensor = torch.zeros(shape, dtype=tdtype)
        tensors.append(tensor.to(device))
    return tensors


def prepare(
    torch: Any, model: Any, inputs: list[Any], cfg: dict[str, Any], phase: Phases, channel: Channel
) -> Any:
    """Put the module in the chosen mode; each step timed as its own phase."""
    values = cfg["knobs"]
    mode = cfg["mode"]
    device = values["device"]
    is_script = isinstance(model, torch.jit.ScriptModule)
    if values.get("eval", True):
        model.eval()
    if not is_script:
        with phase("to device"):
            model = model.to(device)
            if values.get("dtype"):
                model = model.to(getattr(torch, values["dtype"]))
    if mode == "script" and not is_script:
        with phase("script"):
            model = torch.jit.script(model)
    elif mode == "trace":
        with phase("trace"), grad_context(torch, values["grad_mode"]):
            model = torch.jit.trace(model, tuple(inputs), check_trace=False)
    if values.get("freeze") or values.get("optimize_for_inference"):
        if not isinstance(model, torch.jit.ScriptModule):
            raise UsageError(
                f"freeze/optimize_for_inference need --mode script or trace, not {mode}"
            )
        if values.get("freeze"):
            with phase("freeze"):
                model = torch.jit.freeze(model)
        if values.get("optimize_for_inference"):
            with phase("optimize_for_inference"):
                model = torch.jit.optimize_for_inference(model)
    if mode == "compile":
        install_compile_hooks(torch, channel)
        options: dict[str, Any] = {"backend": values.get("compile_backend") or "inductor"}
        if values.get("compile_mode"):
            options["mode"] = values["compile_mode"]
        if values.get("compile_dynamic") is not None:
            options["dynamic"] = values["compile_dynamic"]
        if values.get("compile_fullgraph"):
            options["fullgraph"] = True
        with phase("compile setup"):
            model = torch.compile(model, **options)
    return model


def grad_context(torch: Any, grad_mode: str) -> Any:
    if grad_mode == "inference_mode":
        return torch.inference_mode()
    if grad_mode == "enabled":
        return contextlib.nullcontext()
    return torch.no_grad()


def environment(torch: Any, device: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", None),
        "torch_cuda": torch.version.cuda,
        "intra_op_threads": torch.get_num_threads(),
        "inter_op_threads": torch.get_num_interop_threads(),
        "quantized_engine": torch.backends.quantized.engine,
        "cuda_available": torch.cuda.is_available(),
    }
    with contextlib.suppress(Exception):
        env["mkldnn"] = torch.backends.mkldnn.is_available()
    if device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(index)
        env["gpu"] = props.name
        env["gpu_memory_mb"] = props.total_memory // 2**20
        env["cudnn"] = torch.backends.cudnn.version()
    return env


# -- the loop --------------------------------------------------------------------------------


def run_loop(
    torch: Any, model: Any, inputs: list[Any], cfg: dict[str, Any], channel: Channel
) -> tuple[str, int]:
    """Time every forward pass; return (``ok`` or ``stopped``, iterations run).

    Exceptions from forward propagate, after the iterations before them are sent.
    """
    values = cfg["knobs"]
    iters = cfg["iters"]
    duration_ns = int(cfg["duration"] * 1e9) if cfg.get("duration") else None
    markers = cfg["markers"]
    sync = None
    if values["device"].startswith("cuda"):
        sync = torch.cuda.synchronize
    durations: list[int] = []
    starts: list[int] = []
    first_unsent = 0
    # The shared ring (see core/ring.py): survives this process, read by the parent on a crash.
    ring_map = (
        mmap.mmap(cfg["ring_fd"], 0) if cfg.get("ring_fd") is not None else mmap.mmap(-1, 8 * 3)
    )
    ring = memoryview(ring_map).cast("q")
    slots = cfg.get("ring_slots", 1)
    slot = 1
    clock = time.perf_counter_ns
    write = os.write
    marker_prefix = protocol.MARKER + b"it "

    def flush() -> None:
        nonlocal first_unsent
        if durations:
            batch = protocol.encode(
                {"t": "iters", "i0": first_unsent, "ns": durations, "st": starts}
            )
            first_unsent += len(durations)
            durations.clear()
            starts.clear()
            channel.flush(batch)
        elif channel.pending:
            channel.flush()

    profile_at = sorted(set(cfg.get("profile_iters") or []))
    next_profile = profile_at.pop(0) if profile_at else -1
    cuda = values["device"].startswith("cuda")

    def profile(i: int) -> tuple[int, int]:
        t0, t1, prof = opprofile.profiled_call(torch, model, inputs, sync, cuda)
        send_profile(prof, i, (t1 - t0) / 1e6, cfg, channel)
        return t0, t1

    status = "ok"
    State.phase = None
    sys.stderr.flush()
    marker("loop", "start")
    next_flush = clock() + FLUSH_EVERY_NS
    loop_start = clock()
    i = 0
    try:
        with grad_context(torch, values["grad_mode"]):
            while True:
                if duration_ns is None:
                    if i >= iters:
                        break
                elif clock() - loop_start >= duration_ns:
                    break
                State.iteration = i
                if markers:
                    State.marked = i
                    write(2, marker_prefix + b"%d\n" % i)
                if i == next_profile:
                    State.iteration_start_ns = clock()
                    t0, t1 = profile(i)
                    next_profile = profile_at.pop(0) if profile_at else -1
                else:
                    t0 = clock()
                    State.iteration_start_ns = t0
                    model(*inputs)
                    if sync is not None:
                        sync()
                    t1 = clock()
                State.iteration_start_ns = 0
                durations.append(t1 - t0)
                starts.append(t0 - loop_start)
                ring[slot] = t1 - t0
                ring[slot + 1] = t0 - loop_start
                i += 1
                ring[0] = i
                slot = slot + 2 if slot < 2 * slots - 1 else 1
                if t1 >= next_flush or len(durations) >= FLUSH_MAX_ITERS:
                    flush()
                    next_flush = clock() + FLUSH_EVERY_NS
            if cfg.get("profile_steady"):
                # `steady`: one more pass, profiled, once the run has settled. (The bookkeeping
                # repeats the loop's on purpose: the loop body stays inline, it is the hot path.)
                State.iteration = i
                if markers:
                    State.marked = i
                    write(2, marker_prefix + b"%d\n" % i)
                t0, t1 = profile(i)
                durations.append(t1 - t0)
                starts.append(t0 - loop_start)
                ring[slot] = t1 - t0
                ring[slot + 1] = t0 - loop_start
                i += 1
                ring[0] = i
    except KeyboardInterrupt:
        status = "stopped"
    finally:
        # On an exception from forward, State.iteration still names the failing iteration.
        State.iteration_start_ns = 0
        flush()
    State.iteration = None
    State.phase = "end"
    sys.stderr.flush()
    marker("phase", "end")
    return status, i


def send_profile(
    prof: Any, iteration: int, wall_ms: float, cfg: dict[str, Any], channel: Channel
) -> None:
    """The breakdown of one profiled iteration, and its Chrome trace beside the record."""
    message: dict[str, Any] = {"t": "profile", "iteration": iteration}
    try:
        message.update(opprofile.breakdown(prof, wall_ms))
    except Exception as exc:
        message["error"] = f"profile analysis failed: {exc}"
    if cfg.get("trace_prefix"):
        path = f"{cfg['trace_prefix']}.iter{iteration}.trace.json"
        try:
            prof.export_chrome_trace(path)
            message["trace"] = path
        except Exception as exc:
            message["trace_error"] = str(exc)
    channel.send(message)


def loaded_graphs(torch: Any, model: Any) -> dict[str, str]:
    """A TorchScript module's code and graph as loaded, before any run changes what executes."""
    if not isinstance(model, torch.jit.ScriptModule):
        return {}
    graphs: dict[str, str] = {}
    with contextlib.suppress(Exception):
        graphs["code"] = model.code
    with contextlib.suppress(Exception):
        graphs["graph"] = str(model.graph)
    return graphs


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
    channel = Channel(take_protocol_fd())
    cfg = read_config()
    die_with_parent(cfg.get("parent_pid", 0))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    # fd 2 directly (works whatever sys.stderr is); only the crashing thread, not our helpers.
    faulthandler.enable(file=2, all_threads=False)
    channel.send({"t": "hello", "v": protocol.VERSION, "pid": os.getpid()}, now=True)
    install_warning_hook(channel)
    start_flusher(channel)
    phase = Phases(channel)
    torch: Any = None
    try:
        with phase("import torch"):
            import torch
        with phase("apply knobs"):
            apply_knobs(torch, cfg["knobs"], channel)
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
        channel.send({"t": "env", **environment(torch, device)}, now=True)
        with phase("load"):
            model, examples = load_model(torch, cfg["target"], device)
        with phase("inputs"):
            if cfg["inputs"]:
                inputs = build_inputs(torch, cfg["inputs"], device, cfg["knobs"].get("dtype"))
            elif examples is not None:
                inputs = list(examples) if isinstance(examples, (list, tuple)) else [examples]
                inputs = [t.to(device) if hasattr(t, "to") else t for t in inputs]
            else:
                raise UsageError(
                    f"{cfg['target']['spec']} has no example inputs: pass --input SPEC"
                )
        model = prepare(torch, model, inputs, cfg, phase, channel)
        graphs = loaded_graphs(torch, model)
    except UsageError as exc:
        report_error(channel, exc, where="load", usage=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        channel.send({"t": "done", "status": "stopped", "iterations": 0}, now=True)
        return EXIT_STOPPED
    except BaseException as exc:
        report_error(channel, exc, where=State.phase or "load", usage=False)
        return EXIT_FAILED

    try:
        status, count = run_loop(torch, model, inputs, cfg, channel)
    except BaseException as exc:
        report_error(channel, exc, where="forward", usage=False)
        return EXIT_FAILED
    if graphs:
        # What the profiling executor made of the graph: guards, fusion groups, no profile nodes.
        with contextlib.suppress(Exception):
            graphs["optimized"] = str(torch.jit.last_executed_optimized_graph())
        channel.send({"t": "graphs", **graphs})
    channel.send({"t": "done", "status": status, "iterations": count}, now=True)
    return EXIT_STOPPED if status == "stopped" else 0


if __name__ == "__main__":
    sys.exit(main())
