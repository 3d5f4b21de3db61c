"""The C++ build cache runs only what warmscope built: private folders whatever the umask, no
link followed, another user's or a world-writable folder refused, and a binary that is not the
bytes its build recorded built again, saying which file. Real files and a real build process
(``sh`` standing in for the compiler, so each build takes milliseconds, not a g++ minute)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_cpp_build import fake_torch
from warmscope.core.child.cpp_make import HASH_SUFFIX, Agent, built_once, unsound
from warmscope.core.child.outcome import UsageError


def agent_in(tmp_path: Path) -> Agent:
    root = tmp_path / "cache"
    return Agent(fake_torch(tmp_path / "torch"), "/bin/sh", root / "cpp-agent" / "KEY", root=root)


def build(agent: Agent, told: list[str] | None = None) -> Path:
    """A build whose "compiler" writes a script that says it was built here."""
    return built_once(
        agent.folder,
        agent.binary,
        lambda out: ["sh", "-c", f"printf '#!/bin/sh\\necho built\\n' > '{out}'"],
        "the test binary",
        agent,
        lambda: False,
        (told if told is not None else []).append,
    )


@pytest.fixture
def umask_000() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_folders_and_files_are_private_whatever_the_umask(tmp_path: Path, umask_000: None) -> None:
    agent = agent_in(tmp_path)
    binary = build(agent)
    assert unsound(binary) is None
    for folder in (agent.root, agent.folder.parent, agent.folder):
        assert folder is not None and mode(folder) == 0o700, folder
    for name in ("lock", "build.log", "build.json", binary.name + HASH_SUFFIX):
        assert mode(agent.folder / name) & 0o077 == 0, name
    assert mode(binary) == 0o700


@pytest.mark.parametrize(
    ("plant", "why"),
    [
        (lambda b: b.write_text("#!/bin/sh\necho planted\n"), "SHA-256 differs"),
        (lambda b: b.write_bytes(b""), "empty"),
        (lambda b: (b.unlink(), b.symlink_to("/bin/true")), "a link"),
    ],
)
def test_a_binary_that_is_not_what_was_built_is_built_again_saying_so(
    tmp_path: Path, plant: object, why: str
) -> None:
    agent = agent_in(tmp_path)
    binary = build(agent)
    plant(binary)  # type: ignore[operator]
    assert why in (unsound(binary) or "")
    told: list[str] = []
    assert build(agent, told) == binary
    assert told[0].startswith(f"replacing {binary}: ") and why in told[0]
    assert unsound(binary) is None and "built" in binary.read_text()


def test_a_binary_planted_without_a_checksum_is_never_taken(tmp_path: Path) -> None:
    """The round-4 case: whatever sits at the agent's path was run. Now only what a build of
    warmscope's recorded is."""
    agent = agent_in(tmp_path)
    agent.folder.mkdir(parents=True, mode=0o700)
    agent.binary.write_text("#!/bin/sh\ntouch PWNED\n")
    agent.binary.chmod(0o700)
    assert not agent.built
    told: list[str] = []
    build(agent, told)
    assert "without the checksum its build records" in told[0]
    assert "PWNED" not in agent.binary.read_text()


def test_a_key_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    agent.folder.parent.mkdir(parents=True, mode=0o700)
    agent.folder.symlink_to(elsewhere)
    with pytest.raises(UsageError, match="is a link; the cache holds none: remove it"):
        build(agent)
    assert list(elsewhere.iterdir()) == []


def test_a_folder_others_can_write_is_refused_with_the_fix(tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    agent.folder.mkdir(parents=True)
    agent.folder.parent.chmod(0o777)
    with pytest.raises(UsageError) as caught:
        build(agent)
    assert f"writable by others (mode 777): chmod go-w {agent.folder.parent}" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["lock", "build.log"])
def test_a_lock_or_log_that_is_a_link_empties_nothing(tmp_path: Path, name: str) -> None:
    agent = agent_in(tmp_path)
    build(agent)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (agent.folder / name).unlink()
    (agent.folder / name).symlink_to(victim)
    agent.binary.write_bytes(b"")  # so the build runs and would write its log
    with pytest.raises(UsageError, match="is a link"):
        build(agent)
    assert victim.read_text() == "keep me"
