"""The child process: ``main`` starts it (``start``), sets the run up (``setup``: torch, the
knobs, the model, its inputs), measures it (``measure``: the timed loop, what follows it) and
reports each failure as the protocol says.

This is the only module that imports torch. It is self-contained: the standard library, torch,
and its child-side siblings (``timed_loop`` the loop itself, ``after_loop``, ``torch_knobs``,
``loading``, ``channel``, ``protocol``, ``hooks``, ...), loaded by path as the package
``_warmscope_child``. So any interpreter that has torch can run it: ``python
/path/to/core/child/agent.py`` with the run's configuration as the first line of stdin.

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
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the checker only: at run time the siblings load by path, below
    from warmscope.core.child.channel import Channel

HERE = Path(__file__).resolve().parent
CHILD_PACKAGE = "_warmscope_child"
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
    channel_mod,
    hooks,
    loading,
    pt2,
    torch_knobs,
    timed_loop,
    after_loop,
) = (
    importlib.import_module(f"{CHILD_PACKAGE}.{name}")
    for name in (
        "outcome",
        "protocol",
        "channel",
        "hooks",
        "loading",
        "pt2",
        "torch_knobs",
        "timed_loop",
        "after_loop",
    )
)
State = channel_mod.State
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


# -- the run ----------------------------------------------------------------------------------


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
    channel = channel_mod.Channel(take_protocol_fd())
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
        torch_knobs.check_capabilities(torch, cfg["knobs"])
        torch_knobs.apply_knobs(torch, cfg["knobs"], channel)
        if cfg.get("torch_config"):
            torch_knobs.apply_torch_config(cfg["torch_config"], channel)
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
        status, count = timed_loop.run_loop(torch, model, feeds, cfg, channel)
        if status == outcome.OK and cfg.get("replay_opening"):
            status = after_loop.replay_opening(torch, model, feeds, cfg, channel)
        if status == outcome.OK and cfg.get("idle_probe"):
            status = after_loop.idle_probe(torch, model, feeds[0], cfg, channel)
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
