"""Local files a run's settings name, sent to the machine that runs the child, and the files
the run makes beside them brought back (``--host`` and ``--executor ray`` alike).

The machine that runs the child shares no filesystem with this one: ``--recipe`` (and the
compile-cache artifact beside it) and ``--inputs FILE`` travel with the run, each field's file
in a folder of its own there, and the child is given their paths there. A file the run makes
in such a folder (the artifact a recipe saves when it finds none) comes back into the local
folder its neighbour was sent from.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from warmscope.core.data.settings import RunSettings
from warmscope.core.output.recipe import artifact_path_for

SHIPPED_FIELDS = ("recipe", "inputs_file")
"""The settings' fields that name a local file the child reads."""
FLAGS = {"recipe": "--recipe", "inputs_file": "--inputs"}
"""The option that set each field, as the user wrote it."""


@dataclass
class Shipment:
    """The local files one process needs where it runs: each field's file, and the files
    beside it that go with it; the folders they came from, where files made beside them come
    back."""

    folders: list[Path] = field(default_factory=list)
    files: list[tuple[int, str, Path]] = field(default_factory=list)
    """``(folder index, name, local path)``"""
    fields: dict[str, tuple[int, str]] = field(default_factory=dict)
    """A field of the settings: the folder index and name its file has there."""

    def place(self, index: int, name: str) -> str:
        """A file's path there, relative to the folder the files are unpacked in."""
        return f"in/{index}/{name}"


def shipment(settings: RunSettings) -> Shipment:
    """What the settings name that must travel: each shipped field's file in a folder of its
    own there, a recipe with its compile-cache artifact where one lies beside it."""
    out = Shipment()
    for name in SHIPPED_FIELDS:
        value = getattr(settings, name)
        if not value:
            continue
        path = Path(value).resolve()
        index = len(out.folders)
        out.folders.append(path.parent)
        out.fields[name] = (index, path.name)
        out.files.append((index, path.name, path))
        if name == "recipe":
            artifact = Path(artifact_path_for(str(path)))
            if artifact.is_file():
                out.files.append((index, artifact.name, artifact))
    return out


def keep_made(path: Path, data: bytes, mode: int | None = None) -> None:
    """A file a run made beside a shipped one, written at ``path`` unless one is there
    already (the first process to make it wins, as when the processes run here); written
    beside and renamed, so a process shipping it meanwhile never reads half of it. ``mode``:
    the permissions it had where it was made (else the umask's, as the recipe would open it)."""
    if path.exists():
        return
    part = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.part")
    try:
        with open(part, "xb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(part, mode & 0o777)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
