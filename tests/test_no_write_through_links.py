"""No file warmscope writes is written through a link: a link planted at each path a command
writes (a record, a --json document, an export, a report, an emitted recipe) leaves the file it
points to as it was (real commands, real files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FACTORIES, warmscope


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("linked") / "run.jsonl"
    r = warmscope("run", "sample:trivial", "--iters", "4", "--record", str(path), "--quiet")
    assert r.code == 0, r.stderr
    return path


def planted(tmp_path: Path, name: str) -> tuple[Path, Path]:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / name
    link.symlink_to(victim)
    return link, victim


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("out.json", lambda rec, out: ["export", str(rec), "-o", str(out)]),
        ("out.md", lambda rec, out: ["report", str(rec), "-o", str(out)]),
        ("out.csv", lambda rec, out: ["export", str(rec), "--format", "csv", "-o", str(out)]),
        ("run.json", lambda rec, out: ["run", "sample:trivial", "--iters", "3", "--quiet",
                                       "--record", str(out.with_suffix(".jsonl")),
                                       "--json", str(out)]),
    ],
)  # fmt: skip
def test_a_link_where_a_command_writes_is_replaced_not_written_through(
    tmp_path: Path, record: Path, name: str, args: object
) -> None:
    link, victim = planted(tmp_path, name)
    r = warmscope(*args(record, link))  # type: ignore[operator]
    assert r.code == 0, r.stderr
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.stat().st_size > 0


def test_a_link_at_the_record_path_is_refused_in_one_line(tmp_path: Path) -> None:
    link, victim = planted(tmp_path, "run.jsonl")
    r = warmscope("run", "sample:trivial", "--iters", "3", "--record", str(link), "--quiet")
    assert r.code == 2
    assert "does not write through links" in r.stderr and len(r.stderr.splitlines()) == 1
    assert victim.read_text() == "keep me"


def test_a_link_where_warmup_emits_its_recipe_and_document(tmp_path: Path) -> None:
    """The smallest warm-up that hands over a recipe (an eager model: one candidate, two
    processes): what is under test is where it writes."""
    link, victim = planted(tmp_path, "recipe.py")
    doc = tmp_path / "doc.json"
    doc.symlink_to(victim)
    r = warmscope(
        "warmup", f"{FACTORIES}:tiny", "--input", "2x8", "--iters", "8",
        "--repeat", "1", "--emit", str(link), "--json", str(doc), "--quiet",
        "--record", str(tmp_path / "w"), timeout=300,
    )  # fmt: skip
    assert r.code in (0, 3), r.stderr
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and "def prepare(model" in link.read_text()
    assert not doc.is_symlink() and "warmscope-warmup" in doc.read_text()
