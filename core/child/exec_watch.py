"""The program's own forward calls (``warmscope exec``): each outermost module call timed,
with its module, input signature and thread, sent on the process's stream (``exec_stream``).

A call is an outermost forward: a call of an ``nn.Module`` (eager, scripted, traced,
``torch.compile``'d) not nested in another module's call on the same thread.

How, and why so:

- The timer sits in ``_compiled_call_impl``, in the module's own ``__dict__``: the slot that
  ``Module.__call__`` consults before ``_call_impl`` (``module.compile()`` keeps its compiled
  call there). The module's type stays its own (``type(m) is M``, TorchScript), pickling and
  ``deepcopy`` drop the slot (``Module.__getstate__``), and dynamo, which goes straight to
  ``forward`` for a submodule without hooks, never reads it.
- A module is watched from its making: ``Module.__init__`` and ``Module.__setstate__`` are
  wrapped, as dynamo wraps them itself (so scripted, traced, loaded, unpickled and
  ``torch.compile``'d modules are too); ``module.compile()`` gets the timer around its compiled
  call. A module's first outermost call unwatches all its descendants, before anything in that
  call runs or is traced; a watched module called inside another module's call unwatches
  itself. Submodules thus pay nothing, and a module that is a root somewhere (a child called
  by the program directly, as Lightning's ``self.model``) is timed there.
- No global forward hook, not even to find the outermost modules: dynamo guards on how many
  there are (adding or removing one recompiles what was compiled), strict ``torch.export``
  traces another way while one exists, and a ``torch.compile``'d module warns when called
  while one exists. Nothing of torch's logging is changed either: compiles come from dynamo's
  callbacks, graph breaks from its counters.
- Dynamo never compiles a frame of this file (``on_dynamo`` marks them all to be run as they
  are, as it runs torch's own ``Module.__call__``), and the timer calls no Python function
  outside it on its way: a call timed inside a compiled region's eager part leaves the
  region's frames, graphs and breaks as they were. Inside a trace the timer is a plain call.

Child side: standard library only at import; torch is passed in when the program imports it.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

from .exec_stream import MAX_PENDING, Stream

CALL_SLOT = "_compiled_call_impl"
"""The attribute ``Module.__call__`` calls instead of ``_call_impl`` when it is set."""
NESTED_ITEMS = 8  # items of a tuple, list or dict an input signature looks into
NESTED_DEPTH = 4
SIGNATURE_CHARS = 400
perf_ns = time.perf_counter_ns


def _never() -> bool:
    return False


class Torch:
    """What the timer needs of torch, set by ``install``."""

    tensor: Any = type(None)
    is_compiling: Callable[[], bool] = _never
    """``torch.compiler.is_compiling``: dynamo folds it to True without a guard, and
    ``torch.export`` sets it while it runs the module."""
    module_type: Any = type(None)
    optimized_type: Any = None
    cuda_event: Any = None
    """``torch.cuda.Event``: a call whose inputs are on a GPU is timed there too."""
    script_type: Any = None
    traced_type: Any = None


class Process:
    """This process's tables; a forked child starts them again (``reborn``)."""

    stream: Stream
    module_ids = itertools.count()
    graph_breaks: ClassVar[dict[str, int]] = {}


GENERATION = [0]
"""Bumped in a forked child: what was numbered for the parent's stream is numbered again."""
NUMBERS = itertools.count()
SIGNATURES: dict[tuple[Any, ...], int] = {}
"""Input signature ids by key (``_key``), per stream."""
ON_GPU: set[int] = set()
"""The signatures with a tensor on a CUDA device: their calls are timed on the device too,
with CUDA events on the calling thread's current stream (``exec_stream.Stream.device``)."""


class ThreadIds(threading.local):
    """This thread's native id (what ``/proc`` and the parent know it by), once told: per
    thread, since a new thread may get an ended one's ident."""

    tid = 0


THREAD = ThreadIds()
SEEN: dict[int, weakref.ref[Any]] = {}
"""The modules watched once (by ``id``, while they live): each is watched at most once. Not a
``WeakSet``, whose methods are Python frames outside this file (see ``on_dynamo``)."""


def _seen(module: Any) -> bool:
    """Whether ``module`` was seen before; it is from now on."""
    key = id(module)
    if key in SEEN:
        return True
    SEEN[key] = weakref.ref(module, functools.partial(_forget, key))
    return False


def _forget(key: int, ref: Any) -> None:
    SEEN.pop(key, None)


class Watch:
    """One watched module: its timer's state."""

    __slots__ = ("__weakref__", "generation", "kind", "module_id", "ref", "target")

    def __init__(self, module: Any, target: Callable[..., Any] | None, kind: str) -> None:
        # A weak reference: the timer lives in the module's own dict, a strong one would make
        # a cycle that keeps a dropped model (and its GPU memory) until the cyclic collector.
        self.ref = weakref.ref(module)
        self.target = target
        self.kind = kind
        self.generation = -1
        self.module_id = -1


def timer_for(watch: Watch) -> Callable[..., Any]:
    """The timer that goes in the module's call slot. A plain function (TorchScript, meeting
    it in a module's ``__dict__``, tries to script a function and gives up at its mark, where
    any other callable fails the slot's annotation). What it uses is bound here, once: each
    lookup saved is a few tens of nanoseconds a call."""
    is_compiling = Torch.is_compiling
    stream = Process.stream
    calls = stream.calls
    running = stream.running  # a thread in it is inside a call: a module called now is nested
    thread = THREAD
    signatures = SIGNATURES
    generations = GENERATION
    numbers = NUMBERS
    tensor = Torch.tensor
    get_ident = threading.get_ident
    on_gpu = ON_GPU
    device = stream.device

    def watched_call(*args: Any, **kwargs: Any) -> Any:
        target = watch.target or watch.ref()._call_impl  # type: ignore[union-attr]
        if is_compiling():  # inside a trace (dynamo's, export's): a plain call
            return target(*args, **kwargs)
        ident = get_ident()
        if ident in running:  # inside another module's call: a submodule, for good
            if watch.target is None:
                _unwatch(watch.ref())
            return target(*args, **kwargs)
        if not stream.on:
            return target(*args, **kwargs)
        tid = thread.tid or _new_thread(ident)
        generation = generations[0]
        if watch.generation != generation:
            _describe_module(watch)
        if kwargs or len(args) != 1 or type(args[0]) is not tensor:
            key = _key(args, kwargs, 0)
        else:  # the usual call, one tensor: no function call to make its key
            key = (args[0].dtype, args[0].shape, args[0].device)
        signature = signatures.get(key)
        if signature is None:
            signature = _new_signature(key, args, kwargs)
        number = next(numbers)
        module_id = watch.module_id
        began = _device_mark() if signature in on_gpu else None
        start = perf_ns()
        running[ident] = (number, module_id, tid, start)
        try:
            return target(*args, **kwargs)
        except BaseException:
            stream.raised.append(number)
            raise
        finally:
            end = perf_ns()
            if began is not None:
                device.append((number, began, _device_mark()))
            del running[ident]
            if generation == generations[0]:  # not a call that began before a fork
                if len(calls) < MAX_PENDING:
                    calls.append((number, module_id, signature, tid, start, end - start))
                else:
                    stream.lost += 1

    watched_call.__script_unsupported = "warmscope's timer"  # type: ignore[attr-defined]
    watched_call.warmscope_watch = watch  # type: ignore[attr-defined]
    return watched_call


# -- which modules are watched ---------------------------------------------------------------


def watch(module: Any, target: Callable[..., Any] | None = None, kind: str = "") -> Any:
    """Put the timer in ``module``'s call slot (once); with ``target`` (a compiled call),
    the timer to store there instead, which is returned."""
    if target is not None:
        _seen(module)
        return timer_for(Watch(module, target, kind))
    if _seen(module):
        return None
    slots = vars(module)
    if slots.get(CALL_SLOT) is None:  # already compiled in place: that call stays as it is
        slots[CALL_SLOT] = timer_for(Watch(module, None, kind))
    return None


class Named:
    """What stands for a callable named with ``--watch MODULE:ATTR`` where a module would:
    its name, as the views show it."""

    def __init__(self, spec: str) -> None:
        self.spec = spec


HELD: list[Named] = []
"""The ``Named`` of every watched callable (their timers hold them only weakly)."""


def watch_callable(target: Callable[..., Any], spec: str) -> Callable[..., Any]:
    """The timer for ``target`` (``--watch MODULE:ATTR``), to put where it was found."""
    named = Named(spec)
    HELD.append(named)
    return timer_for(Watch(named, target, "function"))


def watch_specs(module: Any, specs: list[str]) -> None:
    """Once ``module`` has executed: each ``ATTR`` path of ``specs`` (``MODULE:ATTR``) replaced
    by its timer; one that cannot be is said on the stream, the rest watched."""
    for spec in specs:
        path = spec.partition(":")[2].split(".")
        try:
            owner = module
            for name in path[:-1]:
                owner = getattr(owner, name)
            target = getattr(owner, path[-1])
            if not callable(target):
                raise TypeError(f"{type(target).__name__} is not callable")
            setattr(owner, path[-1], watch_callable(target, spec))
        except Exception as exc:
            why = (
                f"{module.__name__} has no {'.'.join(path)} once imported"
                if isinstance(exc, AttributeError)
                else f"{type(exc).__name__}: {exc}"
            )
            title = f"--watch {spec}: not watched ({why})"
            Process.stream.note({"t": "event", "kind": "warning", "title": title[:300]})


def _unwatch(module: Any) -> None:
    slots = vars(module) if module is not None else {}
    timer = slots.get(CALL_SLOT)
    watch = getattr(timer, "warmscope_watch", None)
    if isinstance(watch, Watch) and watch.target is None:
        del slots[CALL_SLOT]


def _unwatch_descendants(module: Any) -> None:
    """At a module's first outermost call, before anything in it runs (or is traced)."""
    for name, sub in module.named_modules(remove_duplicate=True):
        if name:
            _unwatch(sub)
            _seen(sub)


def _describe_module(watch: Watch) -> None:
    """The ``module`` line, once per stream; the first call also unwatches the descendants."""
    module = watch.ref()
    first = watch.module_id < 0
    watch.module_id = next(Process.module_ids)
    watch.generation = GENERATION[0]
    message: dict[str, Any] = {"t": "module", "id": watch.module_id}
    if isinstance(module, Named):
        name = module.spec.rpartition(":")[2]
        message.update(cls=module.spec, name=name, kind="function", params=0)
        Process.stream.note(message)
        return
    try:
        message.update(_module_facts(module, watch.kind))
    except Exception as exc:  # a module whose attributes raise is still timed
        message.update(cls=type(module).__qualname__, kind=watch.kind or "eager", why=str(exc))
    Process.stream.note(message)
    if first and module is not None:
        _unwatch_descendants(module)


TORCH_MANGLE = re.compile(r"^__torch__\.|___torch_mangle_\d+\.")


def _module_facts(module: Any, kind: str) -> dict[str, Any]:
    """The class as best known: for ``torch.compile(m)``, ``m``'s; for TorchScript, the class
    it was made from."""
    shown, kind = module, kind or "eager"
    if Torch.optimized_type is not None and isinstance(module, Torch.optimized_type):
        shown, kind = module._orig_mod, "compiled"
    # A class made per instance (fx's GraphModuleImpl) is named by the class it derives from.
    cls = next(c for c in type(shown).__mro__ if "<locals>" not in c.__qualname__)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if Torch.script_type is not None and isinstance(shown, Torch.script_type):
        traced = Torch.traced_type is not None and isinstance(shown, Torch.traced_type)
        kind = "traced" if traced else "scripted"
        name = TORCH_MANGLE.sub("", shown._c._type().qualified_name())
    params = sum(p.numel() for p in shown.parameters())
    return {"cls": name, "name": name.rpartition(".")[2], "kind": kind, "params": params}


def _new_thread(ident: int) -> int:
    tid = THREAD.tid = threading.get_native_id()
    # threading's table and the name's attribute, not current_thread() and .name: Python
    # frames outside this file, which dynamo would try to compile in a compiled region's
    # eager part.
    thread = threading._active.get(ident)  # type: ignore[attr-defined]
    name = getattr(thread, "_name", None) or f"thread {tid}"
    Process.stream.note({"t": "thread", "th": tid, "name": name})
    Process.stream.start_flusher()
    return tid


# -- input signatures ------------------------------------------------------------------------


def _key(args: tuple[Any, ...], kwargs: dict[str, Any], depth: int) -> tuple[Any, ...]:
    """What tells two calls' inputs apart (dtype, shape, device of each tensor; the type of
    anything else), cheap to build and hash: the text is made only for a new one."""
    key = tuple([_leaf(a, depth) for a in args])
    if kwargs:
        key += tuple([(name, _leaf(value, depth)) for name, value in kwargs.items()])
    return key


def _leaf(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is Torch.tensor:
        return (value.dtype, value.shape, value.device)
    if kind is tuple or kind is list:
        if depth >= NESTED_DEPTH:
            return (kind, len(value))
        return (kind, len(value), *[_leaf(v, depth + 1) for v in value[:NESTED_ITEMS]])
    if kind is dict:
        if depth >= NESTED_DEPTH:
            return (kind, len(value))
        items = itertools.islice(value.items(), NESTED_ITEMS)
        return (kind, len(value), *[(str(k), _leaf(v, depth + 1)) for k, v in items])
    if isinstance(value, Torch.tensor):  # a Parameter, a tensor subclass
        return (value.dtype, value.shape, value.device)
    return kind


def _device_mark() -> Any:
    """A CUDA event recorded now on this thread's current stream (``None`` where it cannot
    be: the call is then timed on the host only)."""
    try:
        event = Torch.cuda_event(enable_timing=True)
        event.record()
    except Exception:
        return None
    return event


def _on_gpu(key: Any) -> bool:
    """Whether a signature's key holds a tensor on a CUDA device."""
    if isinstance(key, tuple):
        if len(key) == 3 and getattr(key[2], "type", None) == "cuda":
            return True
        return any(_on_gpu(part) for part in key)
    return False


def _new_signature(key: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    number = len(SIGNATURES)
    SIGNATURES[key] = number
    if Torch.cuda_event is not None and _on_gpu(key):
        ON_GPU.add(number)
    parts = [_text(a, 0) for a in args] + [f"{k}={_text(v, 0)}" for k, v in kwargs.items()]
    text = ", ".join(parts)
    if len(text) > SIGNATURE_CHARS:
        text = text[: SIGNATURE_CHARS - 1] + "…"
    Process.stream.note({"t": "signature", "id": number, "text": text})
    return number


def _text(value: Any, depth: int) -> str:
    """``float32[8,64]``, ``(int64[1,5], None)``, ``{mask: bool[1,5]}``; ``@cuda:0`` after a
    tensor that is not on the CPU."""
    if isinstance(value, Torch.tensor):
        dims = ",".join(str(d) for d in value.shape)
        dtype = str(value.dtype).removeprefix("torch.")
        device = "" if value.device.type == "cpu" else f"@{value.device}"
        return f"{dtype}[{dims}]{device}"
    if isinstance(value, (tuple, list, dict)):
        opening, closing = "()" if isinstance(value, tuple) else "[]"
        if isinstance(value, dict):
            opening, closing = "{}"
        if depth >= NESTED_DEPTH:
            return f"{opening}…{len(value)}{closing}"
        items: Any = value.items() if isinstance(value, dict) else enumerate(value)
        shown = [
            (f"{k}: " if isinstance(value, dict) else "") + _text(v, depth + 1)
            for k, v in itertools.islice(items, NESTED_ITEMS)
        ]
        if len(value) > NESTED_ITEMS:
            shown.append(f"…+{len(value) - NESTED_ITEMS}")
        comma = "," if isinstance(value, tuple) and len(value) == 1 else ""
        return f"{opening}{', '.join(shown)}{comma}{closing}"
    return "None" if value is None else type(value).__name__


# -- installing ------------------------------------------------------------------------------


def install(torch: Any, stream: Stream) -> None:
    """Once the program has imported torch: watch every module from its construction on."""
    Process.stream = stream
    Torch.tensor = torch.Tensor
    Torch.is_compiling = torch.compiler.is_compiling
    Torch.cuda_event = getattr(getattr(torch, "cuda", None), "Event", None)
    Torch.module_type = torch.nn.Module
    Torch.script_type = torch.jit.ScriptModule
    Torch.traced_type = torch.jit.TopLevelTracedModule
    _watch_made(torch.nn.Module)
    _watch_compile(torch)
    os.register_at_fork(after_in_child=reborn)
    if "torch._dynamo" in sys.modules:
        on_dynamo(sys.modules["torch._dynamo"])


def _watch_made(module_type: Any) -> None:
    """Every module is watched from its making: ``Module.__init__`` (which ``super().__init__()``
    reaches, TorchScript's and ``torch.compile``'s modules included) and ``Module.__setstate__``
    (``torch.load``, ``pickle``, ``copy.deepcopy``: pickling dropped the timer). Wrapped the
    way dynamo wraps them itself (``mutation_guard.install_generation_tagging_init``)."""
    init = module_type.__init__
    setstate = module_type.__setstate__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if not Torch.is_compiling():  # a module made inside a trace is the trace's
            _watch_quietly(self)

    @functools.wraps(setstate)
    def __setstate__(self: Any, state: Any) -> None:
        setstate(self, state)
        if not Torch.is_compiling():
            _watch_quietly(self)

    module_type.__init__ = __init__
    module_type.__setstate__ = __setstate__


def _watch_quietly(module: Any) -> None:
    # Not contextlib.suppress: its methods are Python frames outside this file (on_dynamo).
    try:  # noqa: SIM105
        watch(module)
    except Exception:  # never a failure of the program's own making of a module
        pass


def _watch_compile(torch: Any) -> None:
    """``module.compile()`` stores ``torch.compile(module._call_impl)`` in the call slot: the
    timer goes around it there. (``torch.compile(m)`` makes an ``OptimizedModule``: a module,
    watched from its making like any other; ``m`` is its descendant.)"""
    original = torch.compile

    @functools.wraps(original)
    def compile(*args: Any, **kwargs: Any) -> Any:
        compiled = original(*args, **kwargs)
        model = args[0] if args else kwargs.get("model")
        owner = getattr(model, "__self__", None)
        in_place = isinstance(owner, Torch.module_type)
        if in_place and getattr(model, "__name__", "") == "_call_impl" and callable(compiled):
            try:
                return watch(owner, compiled, "compiled")
            except Exception:
                return compiled
        return compiled

    torch.compile = compile


def on_dynamo(dynamo: Any) -> None:
    """Once the program has imported torch._dynamo: dynamo runs the timer's frame as it is,
    as it does ``Module.__call__``'s, and its compiles become events of the call they run in."""
    Torch.optimized_type = dynamo.eval_frame.OptimizedModule
    skip_code = getattr(dynamo.eval_frame, "skip_code", None)
    if skip_code is not None:
        for module in (sys.modules[__name__], sys.modules[Stream.__module__]):
            for code in _code_of(module):
                skip_code(code)
    else:
        Process.stream.note({"t": "event", "kind": "info", "title": "dynamo cannot skip the timer"})
    from . import hooks

    events = hooks.CompileWatch(sys.modules["torch"], Events())  # type: ignore[arg-type]
    dynamo.on_compile_start(events.on_start)
    dynamo.on_compile_end(events.on_end)
    dynamo.on_compile_end(_graph_breaks)


def _code_of(module: Any) -> list[types.CodeType]:
    """Every code object of ``module``'s functions and methods, nested ones included: a call
    timed inside a compiled region's eager part runs them with dynamo's frame hook on."""
    found: list[types.CodeType] = []
    functions = [v for v in vars(module).values() if isinstance(v, types.FunctionType)]
    for cls in (v for v in vars(module).values() if isinstance(v, type)):
        if cls.__module__ == module.__name__:
            functions += [v for v in vars(cls).values() if isinstance(v, types.FunctionType)]
    codes = [f.__code__ for f in functions if f.__module__ == module.__name__]
    while codes:
        code = codes.pop()
        found.append(code)
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


class Events:
    """Where ``hooks.CompileWatch`` sends: its events, with the call (number) they happened
    in on their thread, in place of the agent's iteration."""

    def send(self, message: dict[str, Any], *, now: bool = False) -> None:
        message.pop("iteration", None)
        message.pop("phase", None)
        _place(message)
        Process.stream.note(message)


def _place(message: dict[str, Any]) -> None:
    running = Process.stream.running.get(threading.get_ident())
    message["th"] = threading.get_native_id()
    if running is not None:
        message["call"] = running[0]


def _graph_breaks(args: Any = None) -> None:
    """Graph breaks the compile just made: dynamo counts them by reason
    (``counters["graph_break"]``), read here without touching torch's logging."""
    torch = sys.modules["torch"]
    try:
        counted = dict(torch._dynamo.utils.counters["graph_break"])
    except Exception:
        return
    for reason, count in counted.items():
        before = Process.graph_breaks.get(reason, 0)
        if count > before:
            Process.graph_breaks[reason] = count
            first = str(reason).strip().splitlines()[0] if str(reason).strip() else "graph break"
            message = {
                "t": "event",
                "kind": "graph_break",
                "title": f"graph break: {first}"[:300],
                "text": str(reason),
                "count": count - before,
            }
            _place(message)
            Process.stream.note(message)


def reborn() -> None:
    """In a forked child: its stream is new, so are its tables; its one thread's id too."""
    GENERATION[0] += 1
    SIGNATURES.clear()
    ON_GPU.clear()
    THREAD.tid = 0
    Process.module_ids = itertools.count()
