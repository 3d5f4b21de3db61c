"""Hooks in the child: warnings and torch.compile's compiles, recompiles and graph breaks,
each sent as an event of the iteration (or setup phase) in which it happened.

Child side: loaded by the agent by path (standard library only at import; torch is passed in).
"""

from __future__ import annotations

import contextlib
import logging
import re
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
    """Dynamo compile start/end, recompiles with their guard failures, graph breaks, the
    recompile limit (from there dynamo runs the function eagerly), CUDA graph trees' steps and
    max-autotune's time. Once per process."""
    if _installed:
        return
    _installed.append(True)
    try:
        # dynamo loads only in a process that compiles; an old torch lacks the callbacks
        from torch._dynamo import callback
    except ImportError as exc:
        channel.send(event("info", f"compile events unavailable: {exc}"))
        return
    watch = CompileWatch(torch, channel)
    callback.on_compile_start(watch.on_start)
    callback.on_compile_end(watch.on_end)
    watch.install_logs()


class CompileWatch:
    """What the compile hooks keep between torch's callbacks and its log records."""

    def __init__(self, torch: Any, channel: Channel) -> None:
        self.torch = torch
        self.channel = channel
        self.started: dict[str, int] = {}
        self.tuned_before: dict[str, float] = {}
        # A recompile (logged just before its compile starts) is sent once that compile ends:
        # by then automatic dynamic shapes has said which dimensions the new graph takes as
        # dynamic.
        self.pending: list[tuple[str, str]] = []
        self.dynamic: list[tuple[str, int]] = []

    # -- torch's compile callbacks ----------------------------------------------------------

    def on_start(self, args: Any = None) -> None:
        cid = _compile_id(args)
        self.started[cid] = time.perf_counter_ns()
        self.tuned_before[cid] = _autotune_seconds(self.torch)
        State.activity = f"compiling {cid}"

    def on_end(self, args: Any = None) -> None:
        self.flush_recompiles()
        cid = _compile_id(args)
        begin = self.started.pop(cid, None)
        ms = (time.perf_counter_ns() - begin) / 1e6 if begin else None
        State.activity = ""
        trigger = getattr(getattr(args, "callback_trigger", None), "name", "")
        title = f"compile {cid}" + (f" ({trigger.lower()})" if trigger else "")
        extra: dict[str, Any] = {"compile_id": cid}
        tuned = _autotune_seconds(self.torch) - self.tuned_before.pop(cid, 0.0)
        if tuned > 0:  # max-autotune benchmarked kernels inside this compile
            extra["autotune_ms"] = round(tuned * 1000, 3)
        self.channel.send(event("compile", title, "", ms=ms, **extra))

    def flush_recompiles(self) -> None:
        made = list(dict.fromkeys(self.dynamic))
        self.dynamic.clear()
        while self.pending:
            title, text = self.pending.pop(0)
            self.channel.send(event("recompile", _with_dynamic(title, made), text + _advice(made)))
            made = []

    # -- torch's logs ----------------------------------------------------------------------

    def install_logs(self) -> None:
        """Recompiles and graph breaks as events, the recompile limit as a warning, the
        dimensions automatic dynamic shapes makes dynamic, CUDA graph trees' steps."""
        logging.getLogger("torch._dynamo.convert_frame").addFilter(self.limit_hit)
        with contextlib.suppress(Exception):
            self.torch._logging.set_logs(recompiles=True, graph_breaks=True, cudagraphs=True)
        # The logger exists once cudagraph trees are imported: named here, it is the same one.
        graphs = logging.getLogger(CUDAGRAPHS_LOG)
        graphs.setLevel(logging.DEBUG)
        graphs.addHandler(CudaGraphEvents(self.channel))
        graphs.propagate = False
        pgo = logging.getLogger("torch._dynamo.pgo")
        self.pgo_level = pgo.getEffectiveLevel()  # what TORCH_LOGS asked for prints as ever
        pgo.setLevel(logging.DEBUG)
        pgo.addFilter(self.automatic_dynamic)
        from torch._logging._internal import log_registry  # torch's, imported with dynamo

        for qname in sorted(log_registry.artifact_log_qnames):
            artifact = qname.rpartition(".__")[2]
            if artifact in ("recompiles", "graph_breaks"):
                logger = logging.getLogger(qname)
                kind = "recompile" if artifact == "recompiles" else "graph_break"
                logger.addHandler(ForwardLog(kind, self))
                logger.propagate = False  # caught here, with the iteration; not printed again

    def limit_hit(self, record: logging.LogRecord) -> bool:
        """The recompile/cache-size limit: an event of its iteration, not a raw stderr line."""
        with contextlib.suppress(Exception):
            text = record.getMessage()
            if record.levelno >= logging.WARNING and "hit config." in text:
                self.flush_recompiles()
                head = text.strip().splitlines()[0].removeprefix("torch._dynamo ")
                self.channel.send(event("warning", f"{head}: falls back to eager from here", text))
                return False
        return True

    def automatic_dynamic(self, record: logging.LogRecord) -> bool:
        """torch's "automatic dynamic size L['x'] size(1) 48 != 24": dimension 1 of x is
        dynamic in the graph now compiling."""
        with contextlib.suppress(Exception):
            if record.levelno == logging.DEBUG and str(record.msg).startswith("automatic dynamic"):
                kind, name, which = (str(a) for a in record.args[:3])  # type: ignore[index,union-attr]
                at = re.fullmatch(r"size\((\d+)\)", which)
                if kind == "size" and at:
                    self.dynamic.append((_source_name(name), int(at.group(1))))
        return record.levelno >= self.pgo_level


class ForwardLog(logging.Handler):
    """A recompile or graph-break log record as an event (a recompile waits for its compile's
    end: ``CompileWatch.flush_recompiles``)."""

    def __init__(self, kind: str, watch: CompileWatch) -> None:
        super().__init__(logging.DEBUG)
        self.kind = kind
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            text = record.getMessage()
            if self.kind == "recompile":
                self.watch.pending.append((_log_title(self.kind, text), text))
                return
            self.watch.channel.send(event(self.kind, _log_title(self.kind, text), text))


def _compile_id(args: Any) -> str:
    return str(getattr(args, "compile_id", "") or "?")


CUDAGRAPHS_LOG = "torch._inductor.cudagraph_trees.__cudagraphs"
"""torch's ``cudagraphs`` logging artifact (``torch._logging.getArtifactLogger``)."""
CUDAGRAPH_STEPS = (
    ("Running warmup", "CUDA graph warm-up"),
    ("Re-recording", "CUDA graph re-recording"),
    ("Recording function", "CUDA graph recording"),
)
"""cudagraph trees' log lines that start a step of a graph's life, and the event's title."""


class CudaGraphEvents(logging.Handler):
    """cudagraph trees' warm-up, recording and re-recording (with its reason) as events;
    its other lines (eager runs, checkpoints) are left out."""

    def __init__(self, channel: Channel) -> None:
        super().__init__(logging.DEBUG)
        self.channel = channel

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            text = record.getMessage()
            for lead, title in CUDAGRAPH_STEPS:
                if lead in text:
                    function = re.search(r"function=([^,\s]+)", text)
                    named = f" ({function.group(1)})" if function else ""
                    self.channel.send(event("cudagraph", title + named, text))
                    return


def _autotune_seconds(torch: Any) -> float:
    """Seconds inductor has spent benchmarking and precompiling kernel choices so far
    (max-autotune; ``torch._dynamo.utils.compilation_time_metrics``, kept by ``dynamo_timed``)."""
    with contextlib.suppress(Exception):
        metrics = torch._dynamo.utils.compilation_time_metrics
        return float(
            sum(
                sum(times)
                for key, times in metrics.items()
                if key.endswith(("_template_autotuning", "_template_precompiling"))
            )
        )
    return 0.0


def _log_title(kind: str, text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return kind
    if kind == "recompile":
        return _recompile_title(lines)[:300]
    return _graph_break_title(lines)[:300]


RECOMPILING = re.compile(r"^Recompiling function (\S+) in (.+):(\d+)$")


def _recompile_title(lines: list[str]) -> str:
    """``REASON (function, file.py:LINE)``: torch's guard failure first (what changed), the
    place last, shortened to the file's name; further failures counted."""
    reasons = [
        re.sub(r"^\d+/\d+: ", "", ln.removeprefix("- ")) for ln in lines if ln.startswith("- ")
    ]
    head = RECOMPILING.match(lines[0])
    place = f"{head.group(1)}, {_short_path(head.group(2))}:{head.group(3)}" if head else lines[0]
    if not reasons:
        return f"recompiled {place}" if head else place
    more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return f"{_short_reason(reasons[0])}{more} ({place})"


AT_INDEX = re.compile(
    r"^tensor '(?P<name>.+)' (?P<what>[\w ]+?) mismatch at index (?P<index>\d+)\. "
    r"expected (?P<expected>[^,]+), actual (?P<actual>.+)$"
)
WHOLE = re.compile(
    r"^tensor '(?P<name>.+)' (?P<what>[\w ]+?) mismatch\. "
    r"expected (?P<expected>.+?), actual (?P<actual>.+)$"
)


def _short_reason(reason: str) -> str:
    """A guard failure as an 80-column row keeps it: ``tensor 'kwargs['input_ids']' size
    mismatch at index 1. expected 24, actual 48`` -> ``size mismatch input_ids[1]: 24 → 48``.
    A reason of another form stays as torch wrote it."""
    m = AT_INDEX.match(reason)
    if m:
        where = f"{_tensor_name(m['name'])}[{m['index']}]"
        return f"{m['what']} mismatch {where}: {m['expected']} → {m['actual']}"
    m = WHOLE.match(reason)
    if m:
        return f"{m['what']} mismatch {_tensor_name(m['name'])}: {m['expected']} → {m['actual']}"
    return reason


def _tensor_name(name: str) -> str:
    """``kwargs['input_ids']`` -> ``input_ids``; ``x`` stays ``x``."""
    keys = re.findall(r"\['([^']+)'\]", name)
    return keys[-1] if keys else name


def _short_path(path: str) -> str:
    return path.replace("\\", "/").rpartition("/")[2]


def _source_name(source: str) -> str:
    """dynamo's source ``L['x']`` or ``L['kwargs']['input_ids']`` as its guard messages name
    the tensor: ``x``, ``kwargs['input_ids']``."""
    match = re.fullmatch(r"L\['([^']+)'\](.*)", source)
    return match.group(1) + match.group(2) if match else source


def _with_dynamic(title: str, made: list[tuple[str, int]]) -> str:
    """``REASON — dim 1 now dynamic (place)``: what the recompile changed, before its place.
    The tensor is named only where the reason does not already name it."""
    if not made:
        return title
    reason, paren, place = title.rpartition(" (")
    if not paren:
        reason, place = title, ""
    named = {name for name, _ in made}
    dims = ", ".join(str(d) for _, d in made)
    name = next(iter(named))
    if len(named) == 1 and (f"'{name}'" in reason or f" {_tensor_name(name)}[" in reason):
        what = f"dim{'s' if len(made) > 1 else ''} {dims} now dynamic"
    else:
        what = ", ".join(f"{name} dim {d}" for name, d in made) + " now dynamic"
    return f"{reason} — {what}" + (f" ({place}" if paren else "")


def _advice(made: list[tuple[str, int]]) -> str:
    """warmscope's own knob for what torch did (the event's text; hints repeat it)."""
    if made:
        return (
            "\nwarmscope: automatic dynamic shapes made these dimensions dynamic after a size "
            "change; --set compile_dynamic=true compiles them dynamic from the first call (no "
            "recompile), --set compile_dynamic=false keeps every size static"
        )
    return ""


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
