"""The recipe a warm-up hands over: the very file its processes verified (its body unchanged),
under a header that states the verdict as measured (``--emit``, ``--emit-cpp``, the TUI's
recipe), its cache artifact beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from warmscope.core.base.files import atomic_write, copy_beside
from warmscope.core.output.recipe import (
    ARTIFACT_SUFFIX,
    Provenance,
    Recipe,
    emit_python,
    split_header,
)
from warmscope.core.output.recipe_cpp import emit_cpp
from warmscope.core.output.warmup_verdict import NOT_VERIFIED, cured_text


def provenance(doc: dict[str, Any], chosen: dict[str, Any], runtime: str) -> Provenance:
    """What the emitted file's header says: the verdict as the document has it. ``runtime``:
    the file's own language; a C++ file from a Python warm-up says it never ran in C++."""
    verdict, words = chosen["verdict"], chosen.get("why") or ""
    if runtime != doc.get("runtime", "python"):
        said = f"{verdict}: {words}" if words else verdict
        words = (
            f"not run in C++: this file is the same warm-up for libtorch, never run; its Python "
            f"form was {said}"
        )
        verdict = NOT_VERIFIED
    return Provenance(
        outcome=verdict,
        verdict=words,
        figures=[cured_text(row) for row in chosen.get("cured", [])],
        command=[str(c) for c in doc.get("command", [])],
        torch=str(doc.get("torch") or ""),
        runtime=doc.get("runtime", "python"),
        processes=int(doc.get("repeat") or 0),
    )


def emitted_text(doc: dict[str, Any], chosen: dict[str, Any], runtime: str) -> str:
    """The file handed over: the very file its processes verified (its body unchanged), under
    a header that states the verdict as measured."""
    recipe = Recipe.from_json(chosen["recipe"])
    verified = Path(chosen["file"]).read_text(encoding="utf-8")
    proof = provenance(doc, chosen, runtime)
    if runtime == "cpp" and not chosen["file"].endswith(".cpp"):
        # The same warm-up for libtorch, never run in C++: built from the same recipe.
        return emit_cpp(chosen["recipe"], doc["target"], proof)
    if runtime == "cpp":
        header, _ = split_header(emit_cpp(chosen["recipe"], doc["target"], proof))
    else:
        header, _ = split_header(emit_python(recipe, target=doc["target"], provenance=proof))
    _, body = split_header(verified)
    return header + body


def chosen_candidate(doc: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in doc["candidates"] if c["label"] == doc["chosen"]), None)


def copy_recipe(doc: dict[str, Any], target: Path) -> Path | None:
    """The chosen recipe's file at ``--emit`` (its cache artifact beside it, named after it),
    its header stating the verdict."""
    chosen = chosen_candidate(doc)
    if chosen is None:
        return None
    source = Path(chosen["file"])
    atomic_write(target, emitted_text(doc, chosen, "python"), parents=False)
    artifact = source.with_name(source.stem + ARTIFACT_SUFFIX)
    if artifact.exists():
        copy_beside(artifact, target.with_name(target.stem + ARTIFACT_SUFFIX))
    return target
