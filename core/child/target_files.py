"""What a file target is, told from the file itself: standard library only.

The parent uses it for a target on this machine; over ``--host`` its source goes to the remote
interpreter (run as a program: ``main``), so that a path names a file there. It answers with a
plain dict, the fields of ``core.data.targets.Target`` it decides: ``kind``, ``path`` (absolute,
on the machine that looked), ``factory``, ``default_mode``.

Archives are recognised by their zip layout, nothing is imported or unpickled. Their central
directory is checked before any child loads them (torch extracts an AOTInductor package's members
as named, and inflates a member to what it declares): every name stays inside its folder, no
member is a link, and the sizes declared stay within what the file could honestly hold. The
kind is told by content and name together (a package is a ``.pt2``), and a package's compiled
library runs only with ``--trust-native``. The code keeps to what old interpreters have: the
remote one may be any Python 3 with torch.
"""

from __future__ import annotations

import ast
import json
import os
import re
import stat
import sys
import zipfile
from typing import Any

PICKLE_PROTOCOL_BYTE = 0x80
AOTI_MEMBER = re.compile(r"^[^/]+/data/aotinductor/[^/]+/")
EXPORT_MEMBER = re.compile(r"^[^/]+/models/[^/]+\.json$")
PT2_SUFFIX = ".pt2"
STORED, DEFLATED = zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED
MAX_RATIO = 32
"""The members of an archive may declare at most this many times the file's size (plus
``SLACK``) in all: torch stores tensors as they are and deflates only code and metadata, so its
archives declare about what they weigh; a zip bomb declares a thousand times more."""
SLACK = 64 << 20
"""Declared bytes any archive may have beyond ``MAX_RATIO`` times its size: small archives of
compressible text."""
DEFLATE_RATIO = 1032
"""No deflated member inflates to more than this many times its compressed bytes (deflate's
own limit): a member that declares more is not a real one."""


class Refused(Exception):
    """A file that cannot be the target: the one line says why."""


def archive_kind(path: str) -> str:
    """``torchscript``, ``aoti`` (an AOTInductor package), ``export`` (torch.export.save),
    ``pickle`` (torch.save of a module), ``corrupt`` or ``unknown``.

    Both ``.pt2`` kinds are torch's PT2 archive (``ROOT/archive_format`` reads ``pt2``): an
    AOTInductor package holds ``ROOT/data/aotinductor/MODEL/`` (the compiled library), an
    exported program ``ROOT/models/MODEL.json``; a package may hold both, and runs compiled.
    """
    return inspect(path)[0]


def inspect(path: str) -> tuple[str, list[zipfile.ZipInfo]]:
    """The archive's kind (``archive_kind``) and, for a zip, its members as its central
    directory lists them (nothing is inflated)."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path) as zf:
                # Only the central directory is read: a truncated file loses it first.
                infos = zf.infolist()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError):
            return "corrupt", []
        return zip_kind([i.filename for i in infos]), infos
    if head[:1] == bytes([PICKLE_PROTOCOL_BYTE]):
        return "pickle", []
    return "unknown", []


def zip_kind(names: list[str]) -> str:
    """What torch would take a zip with these member names for."""
    if any(AOTI_MEMBER.match(n) for n in names):
        return "aoti"
    if any(EXPORT_MEMBER.match(n) for n in names) or "serialized_exported_program.json" in names:
        return "export"
    if any("/code/" in n for n in names) or any(n.endswith("constants.pkl") for n in names):
        return "torchscript"
    if any(n.endswith("data.pkl") for n in names):
        return "pickle"
    return "unknown"


def _shown(name: str) -> str:
    # repr: a member's name may hold anything, escape sequences included.
    return repr(name if len(name) <= 80 else f"{name[:38]}...{name[-38:]}")


def bad_name(name: str) -> str | None:
    """Why a member named ``name`` could land outside the folder it is extracted to."""
    if "\x00" in name:
        return "holds a NUL byte"
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "is an absolute path"
    if ".." in re.split(r"[/\\]", name):
        return "climbs out of its folder (..)"
    return None


def check_members(path: str, infos: list[zipfile.ZipInfo]) -> None:
    """``Refused`` for a zip that could write outside its folder or inflate past what its
    file could hold, from its central directory alone: each name inside its folder, no link,
    no name twice, a compression torch reads, each member's bytes inside the file and no two
    sharing them, each declared size one its compressed bytes could give, and all of them
    within ``MAX_RATIO`` times the file's size."""
    size = os.path.getsize(path)
    seen: set[str] = set()
    declared = packed = 0
    for info in infos:
        name, shown = info.filename, _shown(info.filename)
        why = bad_name(name)
        if why:
            raise Refused(
                f"{path}: its member {shown} {why}: loading it could write outside its "
                "folder; refused before anything reads it"
            )
        if name in seen:
            raise Refused(f"{path}: it names the member {shown} twice")
        seen.add(name)
        if stat.S_ISLNK(info.external_attr >> 16):
            raise Refused(f"{path}: its member {shown} is a symbolic link")
        if info.compress_type not in (STORED, DEFLATED):
            raise Refused(
                f"{path}: its member {shown} is compressed with method {info.compress_type}, "
                "which torch does not read"
            )
        if info.header_offset + info.compress_size > size:
            raise Refused(f"{path}: its member {shown} runs past the end of the file")
        most = (
            info.compress_size
            if info.compress_type == STORED
            else info.compress_size * DEFLATE_RATIO
        )
        if info.file_size > most + (0 if info.compress_type == STORED else 64):
            raise Refused(
                f"{path}: its member {shown} declares {_mib(info.file_size)} in "
                f"{_mib(info.compress_size)}, more than its bytes can hold (a zip bomb?); "
                "refused before anything inflates it"
            )
        declared += info.file_size
        packed += info.compress_size
    if packed > size:
        raise Refused(f"{path}: its members share their bytes (a zip bomb?), refused")
    if declared > SLACK + MAX_RATIO * size:
        raise Refused(
            f"{path}: its members declare {_mib(declared)} in a file of {_mib(size)}, more "
            f"than {MAX_RATIO} times its size (a zip bomb?); refused before anything inflates it"
        )


def check_zip(path: str) -> tuple[str, list[zipfile.ZipInfo]]:
    """``inspect`` and, for a zip, ``check_members``; ``Refused`` where the file could not be
    read or its members could not be loaded safely."""
    try:
        kind, infos = inspect(path)
        check_members(path, infos)
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror or exc}") from None
    return kind, infos


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def native_members(infos: list[zipfile.ZipInfo]) -> list[zipfile.ZipInfo]:
    """The compiled code an AOTInductor package would load: its models' files that are not
    sources, metadata or weights (the ``.so``, or objects it links)."""
    text = (".cpp", ".h", ".json", ".txt", ".py")
    return [
        i
        for i in infos
        if AOTI_MEMBER.match(i.filename)
        and not i.filename.endswith("/")
        and not i.filename.endswith(text)
    ]


def archive(
    path: str, trust_pickle: bool, there: str = "", trust_native: bool = False
) -> dict[str, Any]:
    """A target given as one file: how to load it. ``there`` (`` there``) marks a missing
    file as another machine's."""
    if not os.path.exists(path):
        raise Refused(f"no such file{there}: {path}")
    if not os.path.isfile(path):
        raise Refused(f"not a file{there}: {path}")
    kind, infos = check_zip(path)
    full = os.path.realpath(path)
    pt2 = os.path.splitext(path)[1] == PT2_SUFFIX
    if kind in ("aoti", "export") and not pt2:
        # torch tells these apart by content alone; a name that says otherwise is a disguise.
        what = "an AOTInductor package" if kind == "aoti" else "an exported program"
        raise Refused(
            f"{path} holds {what} (a PT2 archive) but is not named .pt2: rename it to "
            "model.pt2 if that is what it is"
        )
    if kind == "aoti":
        if not trust_native:
            native = native_members(infos)
            names = ", ".join(os.path.basename(i.filename) for i in native[:3])
            more = f" and {len(native) - 3} more" if len(native) > 3 else ""
            raise Refused(
                f"{path} is an AOTInductor package: it holds compiled native code "
                f"({names or 'its model library'}{more}) that runs as it loads; pass "
                "--trust-native if you trust it"
            )
        # aoti_compile_and_package: run as torch._inductor.aoti_load_package loads it.
        return _answer("aoti", full)
    if kind == "export" or (pt2 and kind in ("unknown", "pickle")):
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
    """One request (``path``, and ``factory`` or ``trust_pickle`` and ``trust_native``) ->
    ``{"target": {...}}`` or ``{"error": "one line"}``. A relative path is taken from the
    current folder."""
    try:
        if request.get("factory"):
            found = file_factory(request["path"], request["factory"], " there")
        else:
            found = archive(
                request["path"],
                bool(request.get("trust_pickle")),
                " there",
                bool(request.get("trust_native")),
            )
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
