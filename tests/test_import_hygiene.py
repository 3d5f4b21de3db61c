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
    modules = [
        "cli",
        "export",
        "jitlog",
        "knobs",
        "protocol",
        "record",
        "run",
        "sampler",
        "session",
        "settings",
        "stats",
        "targets",
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module('warmscope.core.' + m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch'))\n"
        "print(','.join(bad))\n"
    )
    assert run(code).stdout.strip() == ""
