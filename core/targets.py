"""Target and input specs, checked in the parent so a bad one fails before any child starts.

Targets: ``model.pt`` (a TorchScript archive), ``path/file.py:factory``, ``package.module:factory``,
``sample:NAME``. Inputs: ``1x300x40`` (float32), ``int64[1,128]``, ``bfloat16[2,3]``.
Nothing here imports torch: archives are recognised by their zip layout.
"""

from __future__ import annotations

import ast
import re
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from warmscope.core.outcome import UsageError
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
PICKLE_PROTOCOL_BYTE = 0x80


class TargetError(UsageError):
    """A target or input that cannot be used: bad usage, exit code 2."""


@dataclass(frozen=True)
class InputSpec:
    """One forward argument: a tensor of this dtype and shape."""

    dtype: str
    shape: tuple[int, ...]

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        return (
            dims if self.dtype == "float32" else f"{self.dtype}[{','.join(map(str, self.shape))}]"
        )

    def to_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": list(self.shape)}


_BRACKETED = re.compile(r"^\s*([a-z0-9_]+)\s*\[\s*([0-9,\s]*)\]\s*$")
_PLAIN = re.compile(r"^\s*[0-9]+(\s*x\s*[0-9]+)*\s*$")


def parse_input(text: str) -> InputSpec:
    """``1x300x40`` -> float32 (1, 300, 40); ``int64[1,128]`` -> int64 (1, 128)."""
    if _PLAIN.match(text):
        dims = [int(d) for d in text.replace(" ", "").split("x")]
        return InputSpec("float32", tuple(dims))
    match = _BRACKETED.match(text)
    if not match:
        raise TargetError(
            f"bad --input {text!r}: expected a shape like 1x300x40 or dtype[shape] like int64[1,128]"
        )
    dtype = DTYPE_ALIASES.get(match.group(1), match.group(1))
    if dtype not in DTYPES:
        raise TargetError(
            f"bad --input {text!r}: unknown dtype {match.group(1)!r} (one of {', '.join(DTYPES)})"
        )
    body = match.group(2).replace(" ", "")
    try:
        dims = [int(d) for d in body.split(",")] if body else []
    except ValueError:
        raise TargetError(
            f"bad --input {text!r}: the shape must be integers separated by commas"
        ) from None
    return InputSpec(dtype, tuple(dims))


@dataclass(frozen=True)
class Target:
    """A resolved target: what the agent loads, and how."""

    spec: str
    kind: str  # "archive" | "pickle" | "file" | "module" | "sample"
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


def resolve_target(spec: str, *, trust_pickle: bool = False) -> Target:
    """Check ``spec`` and say how to load it; ``TargetError`` with one clear line otherwise."""
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
        if head.endswith(".py") or "/" in head or Path(head).exists():
            return _file_factory(spec, Path(head), factory)
        if all(part.isidentifier() for part in head.split(".")):
            # Imported in the child: importing it here could import torch into the UI.
            return Target(spec, "module", None, head, factory)
        raise TargetError(
            f"bad target {spec!r}: expected file.py:factory or package.module:factory"
        )
    return _archive(spec, Path(spec), trust_pickle)


def _looks_like_windows_drive(spec: str) -> bool:
    return len(spec) > 2 and spec[1] == ":" and spec[0].isalpha() and spec[2] in "/\\"


def _file_factory(spec: str, path: Path, factory: str) -> Target:
    if not path.is_file():
        raise TargetError(f"no such file: {path}")
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise TargetError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TargetError(f"cannot read {path}: {exc}") from None
    if factory not in _top_level_names(tree):
        raise TargetError(f"{path} defines no {factory!r} at top level")
    return Target(spec, "file", str(path.resolve()), None, factory)


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            # Conditional definitions (try/except ImportError, if TYPE_CHECKING...): look inside.
            body = [n for n in ast.walk(node) if isinstance(n, ast.stmt) and n is not node]
            names.update(_top_level_names(ast.Module(body=body, type_ignores=[])))
    return names


def _archive(spec: str, path: Path, trust_pickle: bool) -> Target:
    if not path.exists():
        raise TargetError(f"no such file: {path}")
    if not path.is_file():
        raise TargetError(f"not a file: {path}")
    kind = archive_kind(path)
    if kind == "torchscript":
        return Target(spec, "archive", str(path.resolve()), default_mode="script")
    if kind == "pickle":
        if not trust_pickle:
            raise TargetError(
                f"{path} is a pickled module, not a TorchScript archive: loading it runs code from the "
                "file; pass --trust-pickle if you trust it"
            )
        return Target(spec, "pickle", str(path.resolve()))
    if kind == "corrupt":
        raise TargetError(f"{path} is a damaged or truncated archive (not a readable zip file)")
    raise TargetError(
        f"{path} is not a TorchScript archive (expected a torch.jit.save file, file.py:factory, "
        "module:factory or sample:NAME)"
    )


def archive_kind(path: Path) -> str:
    """``torchscript``, ``pickle`` (torch.save of a module), ``corrupt`` or ``unknown``."""
    with path.open("rb") as f:
        head = f.read(4)
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path) as zf:
                # Only the central directory is read: a truncated file loses it first.
                names = zf.namelist()
        except (zipfile.BadZipFile, OSError, EOFError):
            return "corrupt"
        if any("/code/" in n for n in names) or any(n.endswith("constants.pkl") for n in names):
            return "torchscript"
        if any(n.endswith("data.pkl") for n in names):
            return "pickle"
        return "unknown"
    if head[:1] == bytes([PICKLE_PROTOCOL_BYTE]):
        return "pickle"
    return "unknown"
