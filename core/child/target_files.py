"""What a file target is, told from the file itself: standard library only.

The parent uses it for a target on this machine; over ``--host`` its source goes to the remote
interpreter (run as a program: ``main``), so that a path names a file there. It answers with a
plain dict, the fields of ``core.data.targets.Target`` it decides: ``kind``, ``path`` (absolute,
on the machine that looked), ``factory``, ``default_mode``.

Archives are recognised by their zip layout, nothing is imported or unpickled. The code keeps to
what old interpreters have: the remote one may be any Python 3 with torch.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import zipfile
from typing import Any

PICKLE_PROTOCOL_BYTE = 0x80
AOTI_MEMBER = re.compile(r"^[^/]+/data/aotinductor/[^/]+/")
EXPORT_MEMBER = re.compile(r"^[^/]+/models/[^/]+\.json$")


class Refused(Exception):
    """A file that cannot be the target: the one line says why."""


def archive_kind(path: str) -> str:
    """``torchscript``, ``aoti`` (an AOTInductor package), ``export`` (torch.export.save),
    ``pickle`` (torch.save of a module), ``corrupt`` or ``unknown``.

    Both ``.pt2`` kinds are torch's PT2 archive (``ROOT/archive_format`` reads ``pt2``): an
    AOTInductor package holds ``ROOT/data/aotinductor/MODEL/`` (the compiled library), an
    exported program ``ROOT/models/MODEL.json``; a package may hold both, and runs compiled.
    """
    with open(path, "rb") as f:
        head = f.read(4)
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path) as zf:
                # Only the central directory is read: a truncated file loses it first.
                names = zf.namelist()
        except (zipfile.BadZipFile, OSError, EOFError):
            return "corrupt"
        if any(AOTI_MEMBER.match(n) for n in names):
            return "aoti"
        if (
            any(EXPORT_MEMBER.match(n) for n in names)
            or "serialized_exported_program.json" in names
        ):
            return "export"
        if any("/code/" in n for n in names) or any(n.endswith("constants.pkl") for n in names):
            return "torchscript"
        if any(n.endswith("data.pkl") for n in names):
            return "pickle"
        return "unknown"
    if head[:1] == bytes([PICKLE_PROTOCOL_BYTE]):
        return "pickle"
    return "unknown"


def archive(path: str, trust_pickle: bool, there: str = "") -> dict[str, Any]:
    """A target given as one file: how to load it. ``there`` (`` there``) marks a missing
    file as another machine's."""
    if not os.path.exists(path):
        raise Refused(f"no such file{there}: {path}")
    if not os.path.isfile(path):
        raise Refused(f"not a file{there}: {path}")
    try:
        kind = archive_kind(path)
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror or exc}") from None
    full = os.path.realpath(path)
    if kind == "aoti":
        # aoti_compile_and_package: run as torch._inductor.aoti_load_package loads it.
        return _answer("aoti", full)
    if kind == "export" or (os.path.splitext(path)[1] == ".pt2" and kind in ("unknown", "pickle")):
        # torch.export.save: run as the exported program's module (torch.export.load).
        return _answer("export", full)
    if kind == "torchscript":
        return _answer("archive", full, default_mode="script")
    if kind == "pickle":
        if not trust_pickle:
            raise Refused(
                f"{path} is a pickled module, not a TorchScript archive: loading it runs code from the "
                "file; pass --trust-pickle if you trust it"
            )
        return _answer("pickle", full)
    if kind == "corrupt":
        raise Refused(f"{path} is a damaged or truncated archive (not a readable zip file)")
    raise Refused(
        f"{path} is not a TorchScript archive (expected a torch.jit.save file, file.py:factory, "
        "module:factory or sample:NAME)"
    )


def file_factory(path: str, factory: str, there: str = "") -> dict[str, Any]:
    """``path/file.py:factory``: the file parses and defines ``factory`` at top level (read,
    never run)."""
    if not os.path.isfile(path):
        raise Refused(f"no such file{there}: {path}")
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except SyntaxError as exc:
        raise Refused(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise Refused(f"cannot read {path}: {exc}") from None
    if factory not in top_level_names(tree):
        raise Refused(f"{path} defines no {factory!r} at top level")
    return _answer("file", os.path.realpath(path), factory=factory)


def top_level_names(tree: ast.Module) -> set[str]:
    """The names a module defines at import: definitions, assignments, imports, and those
    inside its top-level ``if``/``try``/``with`` blocks."""
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
            names.update(top_level_names(ast.Module(body=body, type_ignores=[])))
    return names


def _answer(
    kind: str, path: str, factory: str | None = None, default_mode: str = "eager"
) -> dict[str, Any]:
    return {"kind": kind, "path": path, "factory": factory, "default_mode": default_mode}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """One request (``path``, and ``factory`` or ``trust_pickle``) -> ``{"target": {...}}`` or
    ``{"error": "one line"}``. A relative path is taken from the current folder."""
    try:
        if request.get("factory"):
            found = file_factory(request["path"], request["factory"], " there")
        else:
            found = archive(request["path"], bool(request.get("trust_pickle")), " there")
    except Refused as exc:
        return {"error": str(exc)}
    return {"target": found}


def main() -> None:
    """Run as a program on the remote: one JSON request on stdin, one JSON answer on stdout."""
    request = json.loads(sys.stdin.readline())
    sys.stdout.write(json.dumps(answer(request)) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
