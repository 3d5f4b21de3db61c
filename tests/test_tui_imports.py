"""Import hygiene: the UI never pays for torch, and core never depends on Textual."""

from __future__ import annotations

import subprocess
import sys

TUI_MODULES = (
    "warmscope.tui.app",
    "warmscope.tui.main_screen",
    "warmscope.tui.settings_screen",
    "warmscope.tui.compare_screen",
    "warmscope.tui.history_screen",
    "warmscope.tui.export_screen",
    "warmscope.tui.help_screen",
    "warmscope.tui.event_screen",
)


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def test_tui_app_does_not_import_torch() -> None:
    out = _python("import warmscope.tui.app, sys; print('torch' in sys.modules)")
    assert out == "False"


def test_no_tui_module_imports_torch() -> None:
    imports = "; ".join(f"import {m}" for m in TUI_MODULES)
    out = _python(
        f"{imports}; import sys; print(sorted(k for k in sys.modules if k == 'torch' or k.startswith('torch.')))"
    )
    assert out == "[]"


def test_core_does_not_import_textual() -> None:
    code = (
        "import importlib, pkgutil, sys, warmscope.core as core\n"
        "for m in pkgutil.iter_modules(core.__path__):\n"
        "    importlib.import_module('warmscope.core.' + m.name)\n"
        "print(sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'torch')))"
    )
    assert _python(code) == "[]"


def test_every_tui_module_ships_in_the_wheel() -> None:
    """pyproject lists packages one by one: a module in a tui/ subfolder would be left out."""
    from pathlib import Path

    import tomllib

    root = Path(__file__).resolve().parent.parent
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    packages = set(config["tool"]["setuptools"]["packages"])
    folders = {p.parent for p in (root / "tui").rglob("*.py") if "__pycache__" not in p.parts}
    names = {"warmscope." + ".".join(f.relative_to(root).parts) for f in folders}
    assert names <= packages, f"not packaged: {sorted(names - packages)}"
    data = config["tool"]["setuptools"]["package-data"]["warmscope.tui"]
    assert any(Path("warmscope.tcss").match(pattern) for pattern in data)
