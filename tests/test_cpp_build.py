"""Building the C++ agent: the torch found without importing it, the line that builds it, the
cache key, and one clear line where there is no compiler or the build fails (real compilers,
real files; the full build itself is the ``cpp_agent`` fixture's)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from warmscope.core.child.outcome import UsageError
from warmscope.core.run import cpp_build


def fake_torch(root: Path, config: str = "", version: str = "9.9.0+cpu") -> cpp_build.Torch:
    """A torch folder as its files say: headers and libraries absent, a version and a CMake
    config (what ``command`` reads)."""
    (root / "include" / "torch").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "share" / "cmake" / "Torch").mkdir(parents=True)
    (root / "share" / "cmake" / "Torch" / "TorchConfig.cmake").write_text(config)
    (root / "version.py").write_text(f"__version__ = '{version}'\ngit_version = 'abc'\n")
    return cpp_build.Torch(root, version, "abc", "")


def test_the_torch_of_an_interpreter_is_found_without_importing_it() -> None:
    torch = cpp_build.locate_torch(sys.executable)
    assert (torch.root / "include" / "torch" / "script.h").exists()
    assert torch.version == cpp_build.locate_torch(None).version
    assert torch.libraries[:3] == ["torch", "torch_cpu", "c10"]


def test_an_interpreter_without_torch_is_one_line(tmp_path: Path) -> None:
    bare = tmp_path / "python"
    bare.write_text("#!/bin/sh\nexit 0\n")
    bare.chmod(0o755)
    with pytest.raises(UsageError, match="has no torch") as caught:
        cpp_build.locate_torch(str(bare))
    assert "\n" not in str(caught.value)


def test_no_compiler_names_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(cpp_build.BuildError, match="install g\\+\\+") as caught:
        cpp_build.compiler()
    assert caught.value.exit_code == 2 and "\n" not in str(caught.value)
    monkeypatch.setenv("CXX", "no-such-compiler")
    with pytest.raises(cpp_build.BuildError, match="CXX=no-such-compiler"):
        cpp_build.compiler()


def test_the_line_follows_the_torch_config(tmp_path: Path) -> None:
    new = fake_torch(tmp_path / "new", "set_target_properties(torch PROPERTIES CXX_STANDARD 20)")
    line = cpp_build.command(new, "g++", Path("a.cpp"), Path("a"))
    assert "-std=c++20" in line and '-DWARMSCOPE_TORCH_VERSION="9.9.0+cpu"' in line
    assert f"-Wl,-rpath,{new.root / 'lib'}" in line
    old = fake_torch(tmp_path / "old", 'set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")')
    line = cpp_build.command(old, "g++", Path("a.cpp"), Path("a"))
    assert "-std=c++17" in line and "-D_GLIBCXX_USE_CXX11_ABI=0" in line


def test_the_key_changes_with_the_source_and_the_torch(tmp_path: Path) -> None:
    a = fake_torch(tmp_path / "a")
    b = fake_torch(tmp_path / "b", version="9.9.1+cpu")
    key = cpp_build.build_key(a, "g++", b"one")
    assert key.startswith("9.9.0-cpu-")
    assert key == cpp_build.build_key(a, "g++", b"one")
    assert key != cpp_build.build_key(a, "g++", b"two")
    assert key != cpp_build.build_key(b, "g++", b"one")


def test_a_failed_build_is_one_line_naming_the_error_and_the_log(tmp_path: Path) -> None:
    """Against a torch without its headers, the real compiler fails at once: the first error
    and where the whole output is, in one line; nothing is left where the binary goes."""
    try:
        cxx = cpp_build.compiler()
    except cpp_build.BuildError as exc:
        pytest.skip(str(exc))
    agent = cpp_build.Agent(fake_torch(tmp_path / "torch"), cxx, tmp_path / "cache")
    with pytest.raises(cpp_build.BuildError) as caught:
        cpp_build.build(agent)
    message = str(caught.value)
    assert "\n" not in message and "did not build against torch 9.9.0+cpu" in message
    assert "No such file" in message and str(agent.folder / "build.log") in message
    assert not agent.built
    assert [p.name for p in agent.folder.iterdir() if p.name.startswith(".building")] == []


def test_a_stopped_build_leaves_nothing(tmp_path: Path) -> None:
    try:
        cxx = cpp_build.compiler()
    except cpp_build.BuildError as exc:
        pytest.skip(str(exc))
    torch = cpp_build.locate_torch(None)
    agent = cpp_build.Agent(torch, cxx, tmp_path / "cache")
    asked = []

    def cancelled() -> bool:  # asked once the compiler has run 0.2 s: cc1plus is at work
        asked.append(True)
        return True

    with pytest.raises(UsageError, match="stopped while building"):
        cpp_build.build(agent, cancelled=cancelled)
    assert asked
    assert not agent.built
    assert not any(p.name.startswith(".building") for p in agent.folder.iterdir())

    # Nothing of the build still runs: g++'s compiler proper (cc1plus, its child, which
    # names the scratch file's folder) was ended with it. Killed, not yet gone: the kernel
    # takes a moment to tear down a compiler's memory (a CI run saw cc1plus still running).
    # (A zombie has ended, its parent killed before it could reap it: as survivors() counts.)
    def left() -> list[psutil.Process]:
        return [
            p
            for p in psutil.process_iter(["cmdline", "status"])
            if str(tmp_path) in " ".join(p.info["cmdline"] or ())
            and p.info["status"] != psutil.STATUS_ZOMBIE
        ]

    deadline = time.monotonic() + 5
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left() == []


def test_the_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cpp_build.CACHE_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cpp_build.cache_root() == tmp_path / "warmscope"
    monkeypatch.setenv(cpp_build.CACHE_VAR, str(tmp_path / "mine"))
    assert cpp_build.cache_root() == tmp_path / "mine"
    assert os.environ[cpp_build.CACHE_VAR].endswith("mine")
