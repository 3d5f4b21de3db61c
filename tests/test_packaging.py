"""A built wheel ships every module (and the stylesheet) under the warmscope namespace."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {
    "core": "warmscope/core",
    "cli": "warmscope/cli",
    "tui": "warmscope/tui",
    "sample_models": "warmscope/sample_models",
}


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel pip builds from this tree, built once for the tests that read or install it."""
    pytest.importorskip("setuptools")
    folder = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(folder), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return next(folder.glob("warmscope-*.whl"))


def test_wheel_contains_every_source_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"{FOLDERS[folder]}/{path.relative_to(ROOT / folder).as_posix()}"
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".tcss", ".cpp") and "__pycache__" not in path.parts
    }
    assert expected - names == set()
    assert not any(
        n.startswith(("core/", "cli/", "tui/", "warmscope/__init__")) for n in names
    )  # no generic top-level names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "warmscope = warmscope.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_every_module_ships_in_the_wheel() -> None:
    """pyproject lists packages one by one: a module in a subfolder of core/ or tui/ (the
    foundation, ``core/base``) would be left out unless listed."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    packages = set(config["tool"]["setuptools"]["packages"])
    # A folder of Python files that is no package ships as its package's data (the
    # bootstrap a watched program loads: ``core/child/exec_boot``).
    shipped_as_data = {
        root.joinpath(*package.split(".")[1:], Path(pattern).parent)
        for package, patterns in config["tool"]["setuptools"]["package-data"].items()
        for pattern in patterns
        if "/" in pattern
    }
    folders = {
        p.parent
        for top in ("core", "cli", "tui")
        for p in (root / top).rglob("*.py")
        if "__pycache__" not in p.parts and p.parent not in shipped_as_data
    }
    assert root / "core" / "base" in folders and root / "cli" in folders
    names = {"warmscope." + ".".join(f.relative_to(root).parts) for f in folders}
    assert names <= packages, f"not packaged: {sorted(names - packages)}"
    data = config["tool"]["setuptools"]["package-data"]["warmscope.tui"]
    assert any(Path("warmscope.tcss").match(pattern) for pattern in data)


def test_the_cli_package_imports_from_a_wheel_and_from_the_tree(
    wheel: Path, tmp_path: Path
) -> None:
    """The ``warmscope.cli`` package: from the editable install (this tree) and from a
    built wheel installed on its own, ``python -m warmscope.cli`` answers."""
    import warmscope.cli

    assert Path(warmscope.cli.__file__).parent == ROOT / "cli"
    site = tmp_path / "site"
    subprocess.run(
        [*PIP, "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    probe = (
        "import warmscope.cli as c, warmscope.cli.run as r; print(c.__file__); print(r.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    shown = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert all(Path(line).is_relative_to(site) for line in shown.stdout.split()), shown.stdout
    version = subprocess.run(
        [sys.executable, "-m", "warmscope.cli", "--version"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert version.returncode == 0 and version.stdout.startswith("warmscope "), version.stderr
