"""A watched program's forward calls as a warm-up's inputs (``warmscope warmup --traffic``).

A ``warmscope exec`` record groups its calls by module and input signature; the signature is
the text ``core/child/exec_watch.py`` writes: ``float32[8,64]`` for a tensor (``@cuda:0``
after one not on the CPU), positional arguments joined by ``", "``, a keyword one as
``name=...``, a tuple ``(...)``, a list ``[...]``, a dict ``{k: ...}``, anything else its type
name (``int``, ``None``). Here one module's signatures become ``--input`` specs and ``--dim``
sizes: where every signature has the same tensor arguments (names, dtypes, ranks), each
dimension that varies is a symbolic one (``B``, ``T``, ``C``, ``H``, ``W``, or ``D0``, ``D1``…
past five), its sizes in the order the traffic first showed them; dimensions that vary
together, equal in every call, are one name. Anything else is refused in one line
(``TrafficError``) naming the signature.

Pure: ``from_run`` takes the record as read (``RunData``); nothing here reads a file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from warmscope.core.base.safe_text import clean_line
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.run import RunData
from warmscope.core.data.settings.run_settings import MAX_SHAPES
from warmscope.core.data.targets import DTYPES, InputSpec

NAMES = ("B", "T", "C", "H", "W")
"""The symbolic dimensions' names, in the order they vary first; more than these: ``D0``…"""
OPENERS = {"(": "a tuple", "[": "a list", "{": "a dict"}
_TENSOR = re.compile(
    r"^(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)=)?(?P<dtype>[a-z][a-z0-9_]*)"
    r"\[(?P<dims>\d+(?:,\d+)*)?\](?:@(?P<device>[A-Za-z0-9_:.]+))?$"
)
_KEYWORD = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
CPU = "cpu"


class TrafficError(UsageError):
    """Traffic that cannot become a warm-up's inputs: one line, exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(clean_line(message))


@dataclass(frozen=True)
class Arg:
    """One tensor argument of a call: positional (``name`` ``None``) or a keyword."""

    name: str | None
    dtype: str
    shape: tuple[int, ...]
    device: str = CPU


# -- one signature -----------------------------------------------------------------------------


def split_top(text: str) -> list[str]:
    """``text`` split at the commas outside any bracket (a tensor's dims, a tuple's items)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _what(value: str) -> str:
    """What an argument that is not a tensor is, in words: ``a tuple``, ``an int``, ``None``."""
    if value[:1] in OPENERS:
        return OPENERS[value[0]]
    if value == "None":
        return "None"
    return f"{'an' if value[:1] in 'aeiou' else 'a'} {value}"


def parse_signature(text: str, shown: str = "") -> tuple[Arg, ...]:
    """A signature's arguments, each a tensor; ``TrafficError`` naming the signature (as
    ``shown``: ``Net(float32[8,64], int)``) and the argument that is not a plain tensor of a
    dtype ``--input`` makes."""
    shown = shown or repr(text)
    if text.endswith("…") or text == "?":
        raise TrafficError(f"{shown}: the signature was cut short in the record")
    if not text.strip():
        raise TrafficError("the module was called with no arguments: no --input specs to make")
    args: list[Arg] = []
    for n, part in enumerate(split_top(text), 1):
        match = _TENSOR.match(part)
        if match is None:
            keyword = _KEYWORD.match(part)
            where = f"keyword {keyword['name']}" if keyword else f"argument {n}"
            value = keyword["value"] if keyword else part
            raise TrafficError(f"{shown}: {where} is {_what(value)}, not a tensor")
        dtype = match["dtype"]
        if dtype not in DTYPES:
            raise TrafficError(f"{shown}: argument {n} is {dtype}, a dtype --input does not make")
        if match["name"] is None and any(a.name is not None for a in args):
            raise TrafficError(f"{shown}: a positional argument after a keyword one")
        dims = tuple(int(d) for d in match["dims"].split(",")) if match["dims"] else ()
        args.append(Arg(match["name"], dtype, dims, match["device"] or CPU))
    names = [a.name for a in args if a.name is not None]
    if len(set(names)) != len(names):
        raise TrafficError(f"{shown}: a keyword given twice")
    return tuple(args)


def layout(args: Sequence[Arg]) -> tuple[tuple[str | None, str, int], ...]:
    """What must be the same in every call for one set of specs: each argument's name (the
    positional ones in order, the keywords by name), dtype and rank."""
    positional = [(a.name, a.dtype, len(a.shape)) for a in args if a.name is None]
    keywords = sorted((a.name, a.dtype, len(a.shape)) for a in args if a.name is not None)
    return (*positional, *keywords)


def _ordered(args: Sequence[Arg], like: Sequence[Arg]) -> tuple[Arg, ...]:
    """``args`` in ``like``'s order: positional ones as they are, keywords by name."""
    by_name = {a.name: a for a in args if a.name is not None}
    positional = [a for a in args if a.name is None]
    return tuple(positional.pop(0) if a.name is None else by_name[a.name] for a in like)


# -- the signatures together -------------------------------------------------------------------


@dataclass(frozen=True)
class Specs:
    """What a set of signatures makes: ``--input`` texts, ``--dim`` texts, the device their
    tensors were on, and how many of the dims' combinations the signatures showed."""

    inputs: tuple[str, ...]
    dims: tuple[str, ...]
    device: str
    seen: int
    """Distinct shapes among the signatures (the dims' every combination: ``combinations``)."""

    @property
    def combinations(self) -> int:
        return math.prod(len(d.partition("=")[2].split(",")) for d in self.dims)


def _one_device(calls: Sequence[Sequence[Arg]], shown: Sequence[str]) -> str:
    """The device every tensor of every call was on; ``TrafficError`` naming a signature
    whose tensors were elsewhere (a warm-up makes its inputs on one ``--device``)."""
    device = calls[0][0].device
    for text, args in zip(shown, calls, strict=True):
        other = next((a.device for a in args if a.device != device), None)
        if other is not None:
            where = f"where {shown[0]} had them on" if text != shown[0] else "and on"
            raise TrafficError(
                f"{text}: tensors on {other} {where} {device}; a warm-up makes its inputs on "
                "one --device"
            )
    return device


def names_for(count: int) -> list[str]:
    """``B``, ``T``, ``C``, ``H``, ``W`` for up to five varying dimensions, else ``D0``…"""
    if count <= len(NAMES):
        return list(NAMES[:count])
    return [f"D{k}" for k in range(count)]


def infer(signatures: Sequence[str], label: str = "") -> Specs:
    """The ``--input`` specs and ``--dim`` sizes of ``signatures`` (first seen first): a
    dimension fixed in all stays a number; one that varies is a name, its sizes in the order
    first seen; dimensions equal in every signature share their name. ``label`` (the
    module's) prefixes each signature in a refusal."""
    if not signatures:
        raise TrafficError("no calls to make --input specs of")
    shown = [f"{label}({s})" if label else s for s in signatures]
    calls = [parse_signature(s, text) for s, text in zip(signatures, shown, strict=True)]
    first = calls[0]
    for text, args in zip(shown[1:], calls[1:], strict=True):
        if layout(args) != layout(first):
            raise TrafficError(
                f"{text} and {shown[0]} differ in their tensors' names, dtypes or ranks: "
                "one set of --input specs cannot make both"
            )
    calls = [_ordered(args, first) for args in calls]
    device = _one_device(calls, shown)
    axes = [(j, k) for j, a in enumerate(first) for k in range(len(a.shape))]
    sizes = {axis: tuple(args[axis[0]].shape[axis[1]] for args in calls) for axis in axes}
    varying = list(dict.fromkeys(v for v in sizes.values() if len(set(v)) > 1))
    symbol = dict(zip(varying, names_for(len(varying)), strict=True))
    specs = []
    for j, a in enumerate(first):
        shape = tuple(symbol.get(sizes[(j, k)], a.shape[k]) for k in range(len(a.shape)))
        specs.append(str(InputSpec(a.dtype, shape, a.name)))
    dims = tuple(
        f"{name}={','.join(str(s) for s in dict.fromkeys(values))}"
        for values, name in symbol.items()
    )
    seen = len({tuple(v[i] for v in varying) for i in range(len(calls))})
    out = Specs(tuple(specs), dims, device, seen)
    if out.combinations > MAX_SHAPES:
        raise TrafficError(
            f"{len(varying)} dimensions vary across {len(calls)} signatures: their every "
            f"combination is more than {MAX_SHAPES} shapes"
        )
    return out


# -- a record's modules ------------------------------------------------------------------------


@dataclass(frozen=True)
class Module:
    """A watched module's calls in a record: its shapes (indices into ``shape_keys``) in the
    order first called."""

    number: int
    label: str
    """As the record's shapes name it: ``Net``, ``Net#3`` where two instances share a class."""
    cls: str
    calls: int
    groups: tuple[int, ...]


def calls_text(count: int) -> str:
    return f"{count} call{'s' if count != 1 else ''}"


def _label(key: str, signature: str) -> str:
    suffix = f"({signature})"
    return key[: -len(suffix)] if key.endswith(suffix) else key


def modules_of(run: RunData) -> list[Module]:
    """The record's modules, in the order of their first call."""
    order: dict[int, list[int]] = {}
    calls: dict[int, int] = {}
    per_group: dict[int, int] = {}
    for k in run.shape_of:
        per_group[k] = per_group.get(k, 0) + 1  # dicts keep the order first seen
    for k, count in per_group.items():
        if not 0 <= k < len(run.shape_dims):
            continue
        number = int(run.shape_dims[k].get("module", -1))
        order.setdefault(number, []).append(k)
        calls[number] = calls.get(number, 0) + count
    out = []
    for number, groups in order.items():
        dims = run.shape_dims[groups[0]]
        label = _label(run.shape_keys[groups[0]], str(dims.get("signature", "")))
        out.append(Module(number, label, str(dims.get("cls", label)), calls[number], tuple(groups)))
    return out


def choose(modules: Sequence[Module], wanted: str | None) -> Module:
    """``--module NAME`` (its label, class name or qualified class), else the module called
    most (the first called among equals)."""
    if wanted is None:
        return max(modules, key=lambda m: m.calls)  # max keeps the first of equals
    found = [m for m in modules if m.label == wanted] or [
        m for m in modules if wanted in (m.cls, m.cls.rpartition(".")[2])
    ]
    if len(found) == 1:
        return found[0]
    if found:
        raise TrafficError(
            f"--module {wanted}: {len(found)} modules of that class; name one: "
            + ", ".join(m.label for m in found)
        )
    raise TrafficError(
        f"--module {wanted}: no such module in the record; its modules: "
        + ", ".join(f"{m.label} ({calls_text(m.calls)})" for m in modules)
    )


@dataclass(frozen=True)
class Traffic:
    """One module's calls in a record, as a warm-up's inputs."""

    record: str
    module: Module
    others: tuple[Module, ...]
    signatures: tuple[str, ...]
    specs: Specs

    def told(self, chosen: bool) -> list[str]:
        """What the warm-up says on stderr of where its inputs came from (``chosen``: the
        module was picked, not named by ``--module``)."""
        m, s = self.module, self.specs
        lines = [
            f"traffic    {m.label}: {calls_text(m.calls)}, "
            f"{len(self.signatures)} signature{'s' if len(self.signatures) != 1 else ''} → "
            + " ".join([*(f"--input {i}" for i in s.inputs), *(f"--dim {d}" for d in s.dims)])
        ]
        if chosen and self.others:
            lines.append(
                f"traffic    the module called most, of {1 + len(self.others)} ("
                + ", ".join(f"{o.label} {o.calls}" for o in self.others)
                + "): --module NAME picks another"
            )
        if s.combinations > s.seen:
            lines.append(
                f"traffic    the warm-up serves every combination of the --dim sizes: "
                f"{s.combinations} shapes, {s.seen} of them in the traffic"
            )
        return lines

    def to_json(self) -> dict[str, Any]:
        """The warm-up document's ``traffic``."""
        return {
            "record": self.record,
            "module": self.module.label,
            "cls": self.module.cls,
            "calls": self.module.calls,
            "signatures": list(self.signatures),
            "inputs": list(self.specs.inputs),
            "dims": list(self.specs.dims),
            "device": self.specs.device,
            "shapes_seen": self.specs.seen,
        }


def from_run(run: RunData, wanted: str | None, record: str) -> Traffic:
    """The warm-up inputs of ``run`` (a ``warmscope exec`` record, as read) for the module
    ``wanted`` (``--module``), else the one called most; ``TrafficError`` otherwise."""
    if run.mode != "exec":
        raise TrafficError(
            f"--traffic {record}: not a `warmscope exec` record (a run of "
            f"{run.settings.target or 'a target'}); record a program's calls with "
            "`warmscope exec --record PATH -- COMMAND`"
        )
    modules = modules_of(run)
    if not modules:
        streams = [str(p) for p in run.exec.get("streams") or []]
        where = f"; its other processes' records: {', '.join(streams)}" if streams else ""
        raise TrafficError(f"--traffic {record}: no forward calls in it{where}")
    module = choose(modules, wanted)
    others = tuple(m for m in modules if m is not module)
    signatures = tuple(str(run.shape_dims[k].get("signature", "?")) for k in module.groups)
    try:
        specs = infer(signatures, module.label)
    except TrafficError as exc:
        hint = ""
        if wanted is None and others:  # the module called most: another may serve
            hint = "; --module NAME takes another: " + ", ".join(
                f"{m.label} ({calls_text(m.calls)})" for m in others
            )
        raise TrafficError(f"--traffic {record}: {exc}{hint}") from None
    return Traffic(record, module, others, signatures, specs)
