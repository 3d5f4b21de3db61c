"""The module maps in ``core/__init__.py`` and ``tui/__init__.py`` are where a newcomer finds
their way: every module of core/ and of tui/ is named there, under its package, and nothing
named there is gone."""

from __future__ import annotations

import re
from pathlib import Path

import warmscope.core
import warmscope.tui

CORE = Path(warmscope.core.__file__).parent
TUI = Path(warmscope.tui.__file__).parent


def sections(doc: str | None) -> dict[str, set[str]]:
    """Each package's heading (``data/ — ...``, ``widgets/run/ — ...``) and the names listed
    under it."""
    named: dict[str, set[str]] = {}
    package = None
    for line in (doc or "").splitlines():
        if heading := re.match(r"^([\w/]+)/ —", line):
            package = heading.group(1)
            named[package] = set()
        elif package and (entry := re.match(r"^    (\w+)(?:\.cpp)?/?\s", line)):
            named[package].add(entry.group(1))
    return named


def modules(folder: Path) -> set[str]:
    """The modules of a package's folder, and the packages in it."""
    files = [*folder.glob("*.py"), *folder.glob("*.cpp")]
    present = {p.stem for p in files if p.stem != "__init__"}
    return present | {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}


def test_every_core_module_is_in_the_map_and_every_entry_exists() -> None:
    named = sections(warmscope.core.__doc__)
    for package in ("base", "child", "run", "data", "output"):
        present = modules(CORE / package)
        listed = named[package]
        assert present - listed == set(), f"{package}/ modules missing from the map"
        assert listed - present == set(), f"{package}/ entries in the map that do not exist"


def test_every_tui_module_is_in_the_map_and_every_entry_exists() -> None:
    """tui/ itself under ``tui/ —``, each of its packages under its own path."""
    named = sections(warmscope.tui.__doc__)
    packages = {str(p.parent.relative_to(TUI)) for p in TUI.rglob("__init__.py") if p.parent != TUI}
    assert set(named) == {"tui", *packages}, "a package of tui/ without its heading, or gone"
    for package, listed in named.items():
        present = modules(TUI if package == "tui" else TUI / package)
        assert present - listed == set(), f"{package}/ modules missing from the map"
        assert listed - present == set(), f"{package}/ entries in the map that do not exist"
