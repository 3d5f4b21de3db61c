"""Hooks in the child: warnings and torch.compile's compiles, recompiles and graph breaks,
each sent as an event of the iteration (or setup phase) in which it happened.

Child side: loaded by the agent by path (standard library only at import; torch is passed in).
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from typing import Any

from .channel import Channel, State, event


def install_warning_hook(channel: Channel) -> None:
    def showwarning(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        first = str(message).strip().splitlines()[0] if str(message).strip() else ""
        title = f"{category.__name__}: {first}"[:300]
        channel.send(
            event("warning", title, f"{filename}:{lineno}: {category.__name__}: {message}")
        )

    warnings.showwarning = showwarning


_installed: list[bool] = []


def watch_compile(torch: Any, channel: Channel) -> None:
    """Install the compile hooks when the model first uses torch.compile, whatever the mode:
    a factory that compiles its model itself gets its compiles labelled too. (Importing
    torch._dynamo costs seconds: a run that never compiles does not pay it.)"""
    original = getattr(torch, "compile", None)
    if original is None or getattr(original, "_warmscope_watch", False):
        return

    def compile(*args: Any, **kwargs: Any) -> Any:
        install_compile_hooks(torch, channel)
        return original(*args, **kwargs)

    compile._warmscope_watch = True  # type: ignore[attr-defined]
    compile.__wrapped__ = original  # type: ignore[attr-defined]
    compile.__doc__ = original.__doc__
    torch.compile = compile


def install_compile_hooks(torch: Any, channel: Channel) -> None:
    """Dynamo compile start/end, recompiles with their guard failures, graph breaks, and the
    recompile limit (from there dynamo runs the function eagerly). Once per process."""
    if _installed:
        return
    _installed.append(True)
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

    def limit_hit(record: logging.LogRecord) -> bool:
        """The recompile/cache-size limit: an event of its iteration, not a raw stderr line."""
        with contextlib.suppress(Exception):
            text = record.getMessage()
            if record.levelno >= logging.WARNING and "hit config." in text:
                head = text.strip().splitlines()[0].removeprefix("torch._dynamo ")
                channel.send(event("warning", f"{head}: falls back to eager from here", text))
                return False
        return True

    logging.getLogger("torch._dynamo.convert_frame").addFilter(limit_hit)

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
    return _graph_break_title(lines)[:300]


def _graph_break_title(lines: list[str]) -> str:
    """``graph break: REASON (file.py:LINE)``. Where the reason line is only a lead-in (newer
    torch: "...when attempting to trace CALL: a function call, e.g. f(x, y):"), the reason is
    what follows it: the break's type and its explanation, as the event's full text has them."""
    at = next((i for i, ln in enumerate(lines) if ln.startswith("Graph Break Reason:")), None)
    reason = lines[0] if at is None else lines[at].removeprefix("Graph Break Reason:").strip()
    rest = lines[1:] if at is None else lines[at + 1 :]
    if not reason or reason.endswith(":"):
        parts = [ln.removeprefix("Explanation:").strip() for ln in rest[:2]]
        parts = [p for p in parts if p and not p.startswith(("Hint:", "User code traceback"))]
        reason = ": ".join(parts) or reason.rstrip(":")
    place = next((ln for ln in lines if ln.startswith("Graph break in user code at ")), "")
    where = place.rpartition("/")[2].rpartition(" at ")[2] if place else ""
    return f"graph break: {reason}" + (f" ({where})" if where else "")
