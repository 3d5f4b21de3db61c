"""Target and input specs, checked in the parent so a bad one fails before any child starts.

Targets: ``model.pt`` (a TorchScript archive), ``model.pt2`` (an exported program or an
AOTInductor package, told apart by their contents), ``path/file.py:factory``,
``package.module:factory``, ``sample:NAME``. Inputs: ``1x300x40`` (float32), ``int64[1,128]``, ``bfloat16[2,3]``.
Nothing here imports torch: a file target is told from the file itself by
``core/child/target_files.py``, here or, over ``--host``, on the remote.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from warmscope.core.child import target_files
from warmscope.core.child.outcome import UsageError
from warmscope.sample_models import SAMPLES

DTYPES = (
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)
DTYPE_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
}


class TargetError(UsageError):
    """A target or input that cannot be used: bad usage, exit code 2."""


GENERATORS = {
    "zeros": 0,
    "ones": 0,
    "normal": 0,
    "fill": 1,
    "randint": 2,
    "uniform": 2,
}
"""Value generators of ``--input SPEC:GEN`` and how many numbers each takes."""
FLOAT_ONLY = ("normal", "uniform")


@dataclass(frozen=True)
class InputSpec:
    """One forward argument: a tensor of this dtype and shape, filled by ``gen``.

    ``name`` makes it a keyword argument; a dimension may be a symbolic name (``T``), given
    its values by ``--dim``. ``gen`` is ``None`` for the default: zeros for integers (valid
    indices for embeddings), a seeded normal for floats.
    """

    dtype: str
    shape: tuple[int | str, ...]
    name: str | None = None
    gen: str | None = None
    args: tuple[float, ...] = ()

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        plain = (
            self.dtype == "float32"
            and self.shape
            and "x" not in "".join(d for d in self.shape if isinstance(d, str))
        )
        text = dims if plain else f"{self.dtype}[{','.join(map(str, self.shape))}]"
        if self.name:
            text = f"{self.name}={text}"
        if self.gen:
            text += f":{self.gen_text}"
        return text

    @property
    def gen_text(self) -> str:
        if not self.gen:
            return ""
        return self.gen + (f"({','.join(_num(a) for a in self.args)})" if self.args else "")

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(d for d in self.shape if isinstance(d, str))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dtype": self.dtype, "shape": list(self.shape)}
        if self.name:
            out["name"] = self.name
        if self.gen:
            out["gen"] = self.gen
            out["args"] = list(self.args)
        return out


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_KEYWORD = re.compile(rf"^\s*({_NAME})\s*=(.*)$")
_BRACKETED = re.compile(r"^\s*([a-z0-9_]+)\s*\[\s*([A-Za-z0-9_,\s]*)\]\s*$")
_PLAIN = re.compile(r"^\s*[A-Za-wyz0-9_]+(\s*x\s*[A-Za-wyz0-9_]+)*\s*$")
_GEN = re.compile(r"^\s*([a-z]+)\s*(?:\((.*)\))?\s*$")


def parse_input(text: str) -> InputSpec:
    """``[NAME=]SPEC[:GEN]``: ``1x300x40`` -> float32 (1, 300, 40); ``int64[1,L]`` -> int64
    (1, L) with L a symbolic dimension; ``mask=int64[1,128]:ones`` a keyword argument of ones."""
    name = None
    body = text
    keyword = _KEYWORD.match(text)
    if keyword:
        name, body = keyword.group(1), keyword.group(2)
    shape_text, colon, gen_text = body.partition(":")
    dtype, dims = _parse_shape(text, shape_text)
    gen, args = _parse_gen(text, gen_text, dtype) if colon else (None, ())
    return InputSpec(dtype, dims, name, gen, args)


def _dim(text: str, item: str) -> int | str:
    if item.isdigit():
        return int(item)
    if re.fullmatch(_NAME, item):
        return item
    raise TargetError(f"bad --input {text!r}: dimension {item!r} is neither a number nor a name")


def _parse_shape(text: str, shape: str) -> tuple[str, tuple[int | str, ...]]:
    if _PLAIN.match(shape):
        return "float32", tuple(_dim(text, d) for d in shape.replace(" ", "").split("x"))
    match = _BRACKETED.match(shape)
    if not match:
        raise TargetError(
            f"bad --input {text!r}: expected [NAME=]SHAPE[:GEN], a shape like 1x300x40 or "
            "dtype[shape] like int64[1,128]"
        )
    dtype = DTYPE_ALIASES.get(match.group(1), match.group(1))
    if dtype not in DTYPES:
        raise TargetError(
            f"bad --input {text!r}: unknown dtype {match.group(1)!r} (one of {', '.join(DTYPES)})"
        )
    body = match.group(2).replace(" ", "")
    if body and not all(body.split(",")):
        raise TargetError(f"bad --input {text!r}: the shape must be dimensions separated by commas")
    return dtype, tuple(_dim(text, d) for d in body.split(",")) if body else ()


def _parse_gen(text: str, gen: str, dtype: str) -> tuple[str, tuple[float, ...]]:
    match = _GEN.match(gen)
    kinds = "zeros, ones, fill(v), randint(lo,hi), normal, uniform(lo,hi)"
    if not match or match.group(1) not in GENERATORS:
        raise TargetError(f"bad --input {text!r}: unknown values {gen!r} (one of {kinds})")
    kind, raw = match.group(1), match.group(2)
    try:
        args = tuple(float(a) for a in raw.split(",")) if raw and raw.strip() else ()
    except ValueError:
        raise TargetError(f"bad --input {text!r}: {gen!r} takes numbers") from None
    want = GENERATORS[kind]
    if len(args) != want:
        raise TargetError(
            f"bad --input {text!r}: {kind} takes {want or 'no'} number{'s' if want != 1 else ''}"
        )
    if any(a != a or a in (float("inf"), float("-inf")) for a in args):
        raise TargetError(f"bad --input {text!r}: {gen!r} takes finite numbers")
    if kind in ("randint", "uniform") and not args[0] < args[1]:
        raise TargetError(f"bad --input {text!r}: {kind}(lo,hi) needs lo < hi")
    if kind == "randint" and not all(float(a).is_integer() for a in args):
        raise TargetError(f"bad --input {text!r}: randint(lo,hi) takes integers")
    if kind in FLOAT_ONLY and not dtype.startswith(("float", "bfloat")):
        raise TargetError(f"bad --input {text!r}: {kind} needs a floating dtype, not {dtype}")
    return kind, args


def parse_dim(text: str) -> tuple[str, tuple[int, ...]]:
    """``--dim T=200,300,400`` or ``--dim L=32..512:32`` -> (name, values in order)."""
    name, sep, body = text.partition("=")
    name = name.strip()
    if not sep or not re.fullmatch(_NAME, name):
        raise TargetError(f"bad --dim {text!r}: expected NAME=V1,V2 or NAME=A..B:STEP")
    values: list[int] = []
    for item in (p.strip() for p in body.split(",")):
        span, colon, step_text = item.partition(":")
        low, dots, high = span.partition("..")
        try:
            if dots:
                step = int(step_text) if colon else 1
                first, last = int(low), int(high)
                if step < 1 or last < first:
                    raise ValueError
                if (last - first) // step >= MAX_DIM_VALUES:
                    raise TargetError(f"bad --dim {text!r}: more than {MAX_DIM_VALUES} values")
                values += range(first, last + 1, step)
            elif colon:
                raise ValueError
            else:
                values.append(int(item))
        except ValueError:
            raise TargetError(
                f"bad --dim {text!r}: {item!r} is not a size or a range A..B:STEP"
            ) from None
    if any(v < 0 for v in values):
        raise TargetError(f"bad --dim {text!r}: sizes cannot be negative")
    if len(set(values)) != len(values):
        raise TargetError(f"bad --dim {text!r}: a size is given twice")
    if len(values) > MAX_DIM_VALUES:
        raise TargetError(f"bad --dim {text!r}: more than {MAX_DIM_VALUES} values")
    return name, tuple(values)


MAX_DIM_VALUES = 256
"""At most this many sizes per ``--dim``: each shape's inputs are built before the run."""


@dataclass(frozen=True)
class Target:
    """A resolved target: what the agent loads, and how."""

    spec: str
    kind: str  # "archive" | "pickle" | "export" | "aoti" | "file" | "module" | "sample"
    path: str | None = None
    module: str | None = None
    factory: str | None = None
    default_mode: str = "eager"
    default_inputs: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def scripted(self) -> bool:
        """A TorchScript archive is already scripted: ``--mode`` cannot change that."""
        return self.kind == "archive"


def resolve_target(
    spec: str,
    *,
    trust_pickle: bool = False,
    trust_native: bool = False,
    there: Callable[[str], Target] | None = None,
) -> Target:
    """Check ``spec`` and say how to load it; ``TargetError`` with one clear line otherwise.

    ``there``: where file targets are paths on another machine (``--host``), what checks one
    there, given the spec. The local disk is then never looked at: ``head:factory`` is a file
    when ``head`` ends in ``.py`` or holds a ``/``, else a module imported there.
    """
    if spec.startswith("sample:"):
        name = spec.removeprefix("sample:")
        sample = SAMPLES.get(name)
        if sample is None:
            raise TargetError(
                f"unknown sample {name!r}: one of {', '.join(SAMPLES)} (`warmscope samples`)"
            )
        return Target(
            spec, "sample", str(sample.path), None, sample.factory, sample.mode, sample.inputs
        )

    head, sep, factory = spec.rpartition(":")
    if sep and factory and not _looks_like_windows_drive(spec):
        if not factory.isidentifier():
            raise TargetError(f"bad target {spec!r}: {factory!r} is not a Python name")
        if head.endswith(".py") or "/" in head or (there is None and Path(head).exists()):
            return (
                there(spec)
                if there
                else _found(spec, target_files.file_factory, str(Path(head)), factory)
            )
        if all(part.isidentifier() for part in head.split(".")):
            # Imported in the child: importing it here could import torch into the UI.
            return Target(spec, "module", None, head, factory)
        raise TargetError(
            f"bad target {spec!r}: expected file.py:factory or package.module:factory"
        )
    if there:
        return there(spec)
    return _found(spec, target_files.archive, str(Path(spec)), trust_pickle, "", trust_native)


def file_request(spec: str, trust_pickle: bool, trust_native: bool = False) -> dict[str, Any]:
    """What ``target_files.answer`` is asked about a file target ``spec`` (one that
    ``resolve_target`` hands to ``there``)."""
    head, sep, factory = spec.rpartition(":")
    if sep and factory and not _looks_like_windows_drive(spec):
        return {"path": str(PurePosixPath(head)), "factory": factory}
    path = str(PurePosixPath(spec))
    return {"path": path, "trust_pickle": trust_pickle, "trust_native": trust_native}


def from_answer(spec: str, found: dict[str, Any]) -> Target:
    """The ``Target`` for ``spec`` that ``target_files`` described."""
    return Target(
        spec,
        str(found["kind"]),
        str(found["path"]),
        None,
        found.get("factory"),
        str(found.get("default_mode") or "eager"),
    )


def _found(spec: str, check: Callable[..., dict[str, Any]], *args: Any) -> Target:
    try:
        return from_answer(spec, check(*args))
    except target_files.Refused as exc:
        raise TargetError(str(exc)) from None


def _looks_like_windows_drive(spec: str) -> bool:
    return len(spec) > 2 and spec[1] == ":" and spec[0].isalpha() and spec[2] in "/\\"
