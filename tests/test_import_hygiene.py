"""The UI process never imports torch; core never imports Textual."""

from __future__ import annotations

import subprocess
import sys


def run(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-c", code], capture_output=True, text=True, check=True
    )


def test_session_import_pulls_no_torch() -> None:
    # The exact check a user can run: `python -X importtime -c "import warmscope.core.session"`.
    proc = run("import warmscope.core.session", "-X", "importtime")
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "warmscope.core.session" in imported
    assert not {m for m in imported if m == "torch" or m.startswith("torch.")}


def test_core_imports_neither_textual_nor_torch() -> None:
    # Every module of the package, found on disk: a new module is checked without a list to edit.
    # (The agent imports torch only inside main(), in the child.)
    code = (
        "import importlib, pkgutil, sys, warmscope.core as core\n"
        "names = [m.name for m in pkgutil.iter_modules(core.__path__)]\n"
        "assert len(names) > 15, names\n"
        "for name in names: importlib.import_module('warmscope.core.' + name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch'))\n"
        "print(','.join(bad))\n"
    )
    assert run(code).stdout.strip() == ""
