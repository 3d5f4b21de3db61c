"""Every file warmscope writes goes through ``core/base/files.py``: a scan of the source finds
no other writer (but the listed ones, each with its reason), and links planted where a Ray
task's notes and a warm-up's candidates are written leave their targets as they were."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_no_write_through_links import planted
from warmscope.core.base import files
from warmscope.core.data.settings import RunSettings
from warmscope.core.run import ray_executor, shipment
from warmscope.core.run.warmup import Warmup

ROOT = Path(__file__).resolve().parent.parent
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC")
ELSEWHERE = {
    "core/base/files.py": "the one writer",
    "core/child": "the child side: loaded by path, standard library only (its C++ build "
    "cache opens its own files O_NOFOLLOW, 0600, in folders it checks)",
    "core/run/cgroup.py": "the kernel's cgroupfs control files, in a cgroup warmscope made",
    "core/run/hangup.py": "/dev/null over a terminal that hung up",
    "cli/console.py": "/dev/null over a closed stdout",
}
"""Where a file may be opened for writing other than through ``files``, and why."""


def writes(tree: ast.AST) -> list[tuple[int, str]]:
    """The calls in a module that open a file for writing."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        owner = (
            func.value.id
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            else None
        )
        text = ast.unparse(node)
        if name in ("write_text", "write_bytes") or (
            owner == "shutil" and name.startswith(("copy", "move"))
        ):
            found.append((node.lineno, text))
        elif name == "open" and owner == "os":
            if any(flag in text for flag in WRITE_FLAGS) or "O_RDONLY" not in text:
                found.append((node.lineno, text))
        elif name == "open":
            modes = [kw.value for kw in node.keywords if kw.arg == "mode"]
            position = 1 if owner is None and isinstance(func, ast.Name) else 0
            if len(node.args) > position:
                modes.append(node.args[position])
            for mode in modes:
                if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+"):
                    found.append((node.lineno, text))
    return found


def test_no_module_writes_a_file_but_through_the_one_writer() -> None:
    stray = []
    for top in ("core", "cli", "tui"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if any(rel == place or rel.startswith(place + "/") for place in ELSEWHERE):
                continue
            stray += [f"{rel}:{line}: {text}" for line, text in writes(ast.parse(path.read_text()))]
    assert stray == [], "write through core/base/files.py:\n" + "\n".join(stray)


def test_the_scan_finds_what_it_looks_for() -> None:
    source = (
        "open(p, 'w')\nPath(p).open('a')\np.write_text('x')\nos.open(p, os.O_WRONLY)\n"
        "os.open(p, flags)\nshutil.copyfile(a, b)\nopen(p)\nos.open(p, os.O_RDONLY)\n"
    )
    assert [line for line, _ in writes(ast.parse(source))] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(
    "write",
    [
        lambda p: files.atomic_write(p, "new"),
        lambda p: files.atomic_write_bytes(p, b"new", unique=True),
        lambda p: shipment.write_data(p, b"new"),
        lambda p: shipment.keep_made(p, b"new"),
    ],
)
def test_a_whole_file_replaces_a_planted_link_and_leaves_its_target(tmp_path: Path, write) -> None:  # type: ignore[no-untyped-def]
    link, victim = planted(tmp_path, "out")
    write(link)
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() or link.resolve() == victim  # keep_made leaves what is there


def test_appending_and_creating_never_follow_a_link(tmp_path: Path) -> None:
    link, victim = planted(tmp_path, "notes.stderr.txt")
    with pytest.raises(OSError), files.appending(link, create=True) as f:
        f.write("more")
    with pytest.raises(FileExistsError):
        files.create_new(link)
    source = tmp_path / "artifact.bin"
    source.write_bytes(b"cache")
    files.copy_beside(source, link)
    assert victim.read_text() == "keep me" and link.read_bytes() == b"cache"


def test_a_link_where_a_ray_task_s_notes_go_is_left_as_it_was(tmp_path: Path) -> None:
    link, victim = planted(tmp_path, "run.stderr.txt")
    ray_executor._note_left(tmp_path / "run.jsonl", {"hostname": "node"}, ["made.bin"])
    assert victim.read_text() == "keep me" and link.is_symlink()


def test_a_link_where_a_warmup_writes_a_candidate_is_replaced(tmp_path: Path) -> None:
    job = Warmup(settings=RunSettings(target="sample:trivial"), repeat=1, folder=tmp_path)
    (tmp_path / "recipes").mkdir()
    link, victim = planted(tmp_path / "recipes", "recipe0.py")
    assert job.propose([])[0].path == link
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and "def prepare(model" in link.read_text()
