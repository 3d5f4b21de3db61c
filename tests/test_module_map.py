"""The module map in ``core/__init__.py`` is where a newcomer finds their way: every module
of core/ is named there, under its package, and nothing named there is gone."""

from __future__ import annotations

import re
from pathlib import Path

import warmscope.core

CORE = Path(warmscope.core.__file__).parent


def sections() -> dict[str, set[str]]:
    """Each package's heading (``data/ — ...``) and the names listed under it."""
    named: dict[str, set[str]] = {}
    package = None
    for line in (warmscope.core.__doc__ or "").splitlines():
        if heading := re.match(r"^(\w+)/ —", line):
            package = heading.group(1)
            named[package] = set()
        elif package and (entry := re.match(r"^    (\w+)(?:\.cpp)?/?\s", line)):
            named[package].add(entry.group(1))
    return named


def test_every_core_module_is_in_the_map_and_every_entry_exists() -> None:
    named = sections()
    for package in ("base", "child", "run", "data", "output"):
        folder = CORE / package
        files = [*folder.glob("*.py"), *folder.glob("*.cpp")]
        present = {p.stem for p in files if p.stem != "__init__"}
        present |= {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
        listed = named[package]
        assert present - listed == set(), f"{package}/ modules missing from the map"
        assert listed - present == set(), f"{package}/ entries in the map that do not exist"
