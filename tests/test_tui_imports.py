"""Import hygiene: the UI never pays for torch, and core never depends on Textual."""

from __future__ import annotations

import subprocess
import sys

TUI_MODULES = (
    "warmscope.tui.app",
    "warmscope.tui.screens.main",
    "warmscope.tui.screens.settings",
    "warmscope.tui.screens.compare",
    "warmscope.tui.screens.history",
    "warmscope.tui.screens.export",
    "warmscope.tui.screens.help",
    "warmscope.tui.screens.event_detail",
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
