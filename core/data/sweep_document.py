"""The sweep document (``warmscope-sweep``): its format, and it read back like a record: whole
but bounded, checked by its schema (``sweep_schema``), the run records it names found where
they are. (It is written whole by the sweep, ``run/sweep``, from its digest,
``output/sweep_digest``.)"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from warmscope.core.base.safe_text import clean_line
from warmscope.core.data.reading import MAX_DOCUMENT_BYTES
from warmscope.core.data.schema import RecordError, Shape, describe
from warmscope.core.data.sweep_schema import check_sweep, finite_float, not_finite

FORMAT = "warmscope-sweep"
VERSION = 1
MAX_BY_ITERATION = 1000
"""A cell's ``by_iteration`` covers at most this many first iterations."""


def is_sweep_document(path: Path) -> bool:
    """Whether ``path`` is a sweep document (read no further than its format field)."""
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as f:
            head = f.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(r'"format"\s*:\s*"' + FORMAT + '"', head) is not None


def read_sweep(path: Path) -> dict[str, Any]:
    """A sweep document; ``RecordError`` (one line) for anything else. It is read whole, so
    one larger than any sweep writes (``MAX_DOCUMENT_BYTES``) is refused before it is read;
    then checked whole (``sweep_schema``), so no reader meets a field of the wrong type."""
    shown = clean_line(str(path))
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise RecordError(f"no such file: {shown}") from None
    except OSError as exc:
        raise RecordError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if size > MAX_DOCUMENT_BYTES:
        raise RecordError(
            f"{shown} holds {size >> 20} MB: more than a sweep document's "
            f"{MAX_DOCUMENT_BYTES >> 20} MB, not one warmscope wrote"
        )
    try:
        doc = json.loads(
            path.read_text(encoding="utf-8"), parse_constant=not_finite, parse_float=finite_float
        )
    except FileNotFoundError:
        raise RecordError(f"no such file: {shown}") from None
    except (OSError, ValueError, RecursionError) as exc:
        why = clean_line(describe(exc) if isinstance(exc, RecursionError) else str(exc))[:200]
        raise RecordError(f"{shown} is not a warmscope sweep document: {why}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RecordError(f"{shown} is not a warmscope sweep document")
    if not isinstance(doc.get("version"), int) or doc["version"] > VERSION:
        version = clean_line(repr(doc.get("version")))[:40]
        raise RecordError(f"{shown}: sweep document version {version} is not known")
    try:
        check_sweep(doc)
    except Shape as exc:
        raise RecordError(f"{shown}: not a sweep document warmscope wrote: {exc}") from None
    return doc


def record_path(record: str, doc: dict[str, Any], path: Path) -> Path | None:
    """Where the run record a sweep document names is, ``None`` where it is nowhere: as
    written (a relative path from the folder the sweep ran in, ``ran_in``), else beside the
    document (a sweep keeps its records there, and the two move together), else from here
    (a document from before ``ran_in``, read where its sweep ran)."""
    written = Path(record)
    ran_in = doc.get("ran_in")
    places = []
    if written.is_absolute():
        places.append(written)
    elif isinstance(ran_in, str) and os.path.isabs(ran_in):
        places.append(Path(ran_in) / written)
    places.append(path.parent / written.name)
    if not written.is_absolute():
        places.append(written)
    return next((p for p in places if p.is_file()), None)


def sweep_runs(doc: dict[str, Any], path: Path) -> list[Path]:
    """Every record of a sweep document that exists, each once (``record_path``). A record
    named again is looked for once: a document may name a few records thousands of times,
    and each look is a walk of the file system (a path resolved)."""
    out: list[Path] = []
    seen: set[Path] = set()
    named: set[str] = set()
    for cell in doc["cells"]:
        for p in cell.get("processes", []):
            record = p.get("record") if isinstance(p, dict) else None
            if not isinstance(record, str) or record in named:
                continue
            named.add(record)
            found = record_path(record, doc, path)
            if found is not None and (resolved := found.resolve()) not in seen:
                seen.add(resolved)
                out.append(found)
    return out
