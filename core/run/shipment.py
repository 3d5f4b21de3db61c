"""Local files a run's settings name, sent to the machine that runs the child, and the files
the run makes beside them brought back (``--host`` and ``--executor ray`` alike).

The machine that runs the child shares no filesystem with this one: ``--recipe`` (and the
compile-cache artifact beside it) and ``--inputs FILE`` travel with the run, each field's file
in a folder of its own there, and the child is given their paths there. What the run makes
there is data from another machine, and the model chooses it: only the files the run is known
to make come back (the artifact a recipe saves beside itself when it finds none), by name, with
mode 0644, into the local folder its neighbour was sent from; never a dotfile or a name Python
or a shell runs at start-up. Anything else made there is named to the user, not copied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from warmscope.core.base import files
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
    expected: dict[int, set[str]] = field(default_factory=dict)
    """The names a run may make in each folder there that come back here."""

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
            out.expected.setdefault(index, set()).add(artifact.name)
    return out


STARTUP_NAMES = frozenset(
    ("sitecustomize.py", "usercustomize.py", "__init__.py", "conftest.py", "setup.py")
)
"""Names Python runs by themselves from a folder it is started in or imports from."""
STARTUP_SUFFIXES = (".pth", ".pyc", ".so")


def comes_back(name: str, expected: set[str]) -> bool:
    """Whether a file the run made there, named ``name``, is one to copy here: a name the run
    is known to make, and never one a shell or Python would run by itself."""
    return (
        name in expected
        and Path(name).name == name
        and not name.startswith(".")
        and name not in STARTUP_NAMES
        and not name.endswith(STARTUP_SUFFIXES)
    )


def side_comes_back(record: str, name: str) -> bool:
    """Whether a file beside a record made elsewhere (a Ray task's folder) is one of the
    record's own side files: its stderr (``NAME.stderr.txt``) or a profiled iteration's trace
    (``NAME.iterN.trace.json``)."""
    stem = re.escape(Path(record).stem)
    return re.fullmatch(rf"{stem}(\.stderr\.txt|\.iter\d+\.trace\.json)", name) is not None


def write_data(path: Path, data: bytes) -> None:
    """A file from another machine written at ``path`` as data (``MADE_MODE``), never through
    a link planted there."""
    files.atomic_write_bytes(path, data, mode=MADE_MODE, unique=True)


MADE_MODE = 0o644
"""What a file from another machine is here: data, whatever mode it had there."""


def keep_made(path: Path, data: bytes) -> None:
    """A file a run made beside a shipped one (``comes_back``), written at ``path`` unless one
    is there already (the first process to make it wins, as when the processes run here);
    written beside and renamed, so a process shipping it meanwhile never reads half of it."""
    if path.exists() or path.is_symlink():
        return
    files.atomic_write_bytes(path, data, mode=MADE_MODE, unique=True)
