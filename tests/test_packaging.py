"""A built wheel ships every module (and the stylesheet) under the warmscope namespace."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {
    "core": "warmscope/core",
    "tui": "warmscope/tui",
    "sample_models": "warmscope/sample_models",
}


def test_wheel_contains_every_source_file(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("warmscope-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"{FOLDERS[folder]}/{path.relative_to(ROOT / folder).as_posix()}"
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".tcss") and "__pycache__" not in path.parts
    }
    assert expected - names == set()
    assert not any(
        n.startswith(("core/", "tui/", "warmscope/__init__")) for n in names
    )  # no generic top-level names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "warmscope = warmscope.core.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_every_tui_module_ships_in_the_wheel() -> None:
    """pyproject lists packages one by one: a module in a tui/ subfolder would be left out."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    packages = set(config["tool"]["setuptools"]["packages"])
    folders = {p.parent for p in (root / "tui").rglob("*.py") if "__pycache__" not in p.parts}
    names = {"warmscope." + ".".join(f.relative_to(root).parts) for f in folders}
    assert names <= packages, f"not packaged: {sorted(names - packages)}"
    data = config["tool"]["setuptools"]["package-data"]["warmscope.tui"]
    assert any(Path("warmscope.tcss").match(pattern) for pattern in data)
