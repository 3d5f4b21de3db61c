"""The bootstrap of ``warmscope exec``: every Python process of the watched program runs it at
interpreter start, since warmscope puts this folder first on ``PYTHONPATH``.

It acts only where ``WARMSCOPE_EXEC_SOCKET`` is set: it connects the process's stream, and
arranges for torch to be watched once the program itself imports it (nothing heavy before);
then it runs the ``sitecustomize`` the environment had without warmscope, under that name.
Whatever fails in warmscope's own part, the program runs on unwatched and one line says why
(on the socket if it can be reached, else in the file ``WARMSCOPE_EXEC_LOG`` names); an error in
the environment's own ``sitecustomize`` is the program's, reported as it would have been.

The rest of warmscope's child side is loaded by path, as the package ``_warmscope_exec``
(``core/child``: the standard library only at import), never from the program's own paths.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing itself costs an interpreter start milliseconds
if TYPE_CHECKING:
    from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD_FOLDER = os.path.dirname(HERE)
PACKAGE = "_warmscope_exec"
SOCKET_ENV = "WARMSCOPE_EXEC_SOCKET"
LOG_ENV = "WARMSCOPE_EXEC_LOG"
WATCH_ENV = "WARMSCOPE_EXEC_WATCH"
"""``MODULE:ATTR;...``: callables to time beside the modules (``--watch``)."""


def _is_here(entry: object) -> bool:
    return isinstance(entry, str) and os.path.abspath(entry or os.curdir) == HERE


def _child_module(name: str) -> object:
    """``core/child/NAME.py`` as ``_warmscope_exec.NAME`` (the agent's way: by path)."""
    import importlib
    import importlib.util

    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            PACKAGE,
            os.path.join(CHILD_FOLDER, "__init__.py"),
            submodule_search_locations=[CHILD_FOLDER],
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"no warmscope child package at {CHILD_FOLDER}")
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.{name}")


class AfterImport:
    """A meta-path finder that runs ``then[name](module, started_ns)`` right after the module
    ``name`` has executed, and leaves ``sys.meta_path`` once it has nothing left to wait for.
    The module's own loader does the loading; only its ``exec_module`` is wrapped, on that one
    loader object, for that one call."""

    def __init__(self, then: dict[str, object]) -> None:
        self.then = then

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name not in self.then:
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        original = getattr(loader, "exec_module", None)
        if original is None:
            return spec
        then = self.then.pop(name)
        started = time.perf_counter_ns()

        def exec_module(module: object) -> None:
            try:  # noqa: SIM105 (contextlib costs an interpreter start milliseconds)
                del loader.exec_module  # type: ignore[union-attr]
            except AttributeError:
                pass
            original(module)  # the module's own errors are the program's
            if not self.then and self in sys.meta_path:
                sys.meta_path.remove(self)  # type: ignore[arg-type]
            try:
                then(module, started)  # type: ignore[operator]
            except Exception as exc:
                _tell(f"watching stopped at the import of {name}: {type(exc).__name__}: {exc}")

        try:
            loader.exec_module = exec_module  # type: ignore[union-attr]
        except (AttributeError, TypeError):
            _tell(f"cannot follow the import of {name} ({type(loader).__name__})")
        return spec


def _on_torch(torch: object, started: int) -> None:
    stream = _child_module("exec_stream").STREAM[0]  # type: ignore[attr-defined]
    if not stream.on:  # the parent went away: nothing to install
        return
    stream.note(
        {"t": "phase", "name": "import torch", "ms": (time.perf_counter_ns() - started) / 1e6}
    )
    _child_module("exec_watch").install(torch, stream)  # type: ignore[attr-defined]


def _watch_specs() -> dict[str, list[str]]:
    """``--watch``'s specs by the module they name."""
    by_module: dict[str, list[str]] = {}
    for spec in os.environ.get(WATCH_ENV, "").split(";"):
        if ":" in spec:
            by_module.setdefault(spec.partition(":")[0], []).append(spec)
    return by_module


def _on_watched_module(specs: list[str]) -> Callable[[object, int], None]:
    def then(module: object, started: int) -> None:
        watch = _child_module("exec_watch")
        if watch.Process.__dict__.get("stream") is None:  # type: ignore[attr-defined]
            stream = _child_module("exec_stream").STREAM  # type: ignore[attr-defined]
            if stream and stream[0].on:
                title = f"--watch {', '.join(specs)}: imported before torch, not watched"
                stream[0].note({"t": "event", "kind": "warning", "title": title[:300]})
            return
        watch.watch_specs(module, specs)  # type: ignore[attr-defined]

    return then


def _on_dynamo(dynamo: object, started: int) -> None:
    watch = _child_module("exec_watch")
    if watch.Process.__dict__.get("stream") is not None:  # type: ignore[attr-defined]
        watch.on_dynamo(dynamo)  # type: ignore[attr-defined]


def _tell(why: str) -> None:
    """One line saying why this process runs unwatched (from now on: a stream that was up is
    ended, and its timers then only pass calls through): on the stream if it is up, else on a
    connection of its own, else in the log file. Never raises."""
    try:
        stream = _child_module("exec_stream").STREAM  # type: ignore[attr-defined]
        if stream and stream[0].on:
            stream[0].note({"t": "unwatched", "why": why})
            stream[0].flush(wait=True)
            stream[0].end()
            return
    except Exception:
        pass
    try:
        import json
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2.0)
            sock.connect(os.environ[SOCKET_ENV])
            hello = {"t": "hello", "v": 1, "source": "exec", "pid": os.getpid()}
            lines = [hello, {"t": "unwatched", "why": why}]
            sock.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        return
    except Exception:
        pass
    try:
        with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} unwatched: {why}\n")
    except Exception:
        pass


def _start() -> None:
    path = os.environ.get(SOCKET_ENV)
    if not path:
        return
    try:
        _child_module("exec_stream").start(path)  # type: ignore[attr-defined]
    except OSError as exc:
        _tell(f"cannot reach warmscope at {path}: {exc}")
        return
    except Exception as exc:
        _tell(f"the bootstrap failed: {type(exc).__name__}: {exc}")
        return
    try:
        then: dict[str, Callable[[object, int], None]] = {
            "torch": _on_torch,
            "torch._dynamo": _on_dynamo,
        }
        for name, specs in _watch_specs().items():
            then[name] = _on_watched_module(specs)
        if "torch" in sys.modules:
            _on_torch(sys.modules["torch"], time.perf_counter_ns())
            del then["torch"]
        sys.meta_path.insert(0, AfterImport(then))  # type: ignore[arg-type]
    except Exception as exc:
        _tell(f"the bootstrap failed: {type(exc).__name__}: {exc}")


def _chain() -> None:
    """The ``sitecustomize`` next on the path, run as the interpreter would have run it."""
    import importlib.machinery
    import importlib.util

    rest = [entry for entry in sys.path if not _is_here(entry)]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["sitecustomize"]
        raise


# The program sees the path it would have seen; its children inherit PYTHONPATH, so this file.
sys.path[:] = [entry for entry in sys.path if not _is_here(entry)]
_start()
_chain()
