"""What a new user meets first: install lines that work from a clone, a help that lists every
command, a failed run that names its record and shows the model's traceback from its first
frame, a sweep that counts its processes the same way everywhere, and where the shell needs
quotes."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FACTORIES, warmscope
from warmscope.cli import MODULES, make_parser
from warmscope.cli.run import model_frames
from warmscope.core.output.report import sweep_report
from warmscope.core.output.sweep_digest import header_lines

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_no_page_installs_a_distribution_that_does_not_exist() -> None:
    """warmscope is not on PyPI: ``pip install warmscope`` (or ``'warmscope[ray]'``) fails."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"pip install '?warmscope\b", text), page.name


def test_the_readme_wheel_lines_build_the_wheel_they_install(tmp_path: Path) -> None:
    """The README's own commands, run in a copy of the clone: the wheel they build is the one
    the next line installs."""
    pytest.importorskip("setuptools")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    build = re.search(r"^python -m pip wheel (.+?)\s+#", text, re.M)
    install = re.search(r"^pip install (dist/\S+\.whl)", text, re.M)
    assert build and install, "the README gives a wheel to build and install"
    assert "pip install ." in text  # from the clone, into the environment that has torch
    args = build.group(1).split()
    assert args[-1] == "."
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "-q", *args[:-1], str(ROOT)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    wheel = tmp_path / install.group(1)
    assert wheel.exists(), sorted(p.name for p in (tmp_path / "dist").iterdir())
    assert any(n.endswith("entry_points.txt") for n in zipfile.ZipFile(wheel).namelist())


def test_the_help_lists_every_command() -> None:
    text = make_parser(None).format_help()
    for name in MODULES:
        assert re.search(rf"^  warmscope {name}\b", text, re.M), name


def test_input_help_and_docs_say_to_quote_a_generator() -> None:
    text = make_parser("run").format_help()
    assert "--input 'int64[1,128]:randint(0,1000)'" in " ".join(text.split())
    commands = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    assert "--input 'int64[1,128]:randint(0,1000)'" in commands


AGENT = '  File "/x/core/child/agent.py", line 740, in main'


@pytest.mark.parametrize(
    "under_agent",
    [
        ["    model = loading.prepare(torch, model, feeds[0], cfg, phase, channel)", "            ^^^^^^^^^^^^^^^^^^^^"],
        [],  # no source line: Python could not read the agent's file
        ["    model(*args, **kwargs)"],
    ],
)  # fmt: skip
def test_a_models_traceback_starts_at_its_first_frame(under_agent: list[str]) -> None:
    tb = "\n".join(
        [
            "Traceback (most recent call last):",
            AGENT,
            *under_agent,
            '  File "/models/my_agent.py", line 6, in forward',
            "    return {'y': self.l(x)}",
            "RuntimeError: boom",
        ]
    )
    shown = model_frames(tb).splitlines()
    assert shown[1] == '  File "/models/my_agent.py", line 6, in forward'
    assert shown[-1] == "RuntimeError: boom"


def test_a_run_that_fails_before_its_first_call_names_its_record(tmp_path: Path) -> None:
    """torch.jit.trace fails on the model (its forward raises, as traced): the summary still
    ends with the record, and the traceback shown begins with a frame, not with the agent's
    carets. (A mode the model refuses is bad usage, one line: ``test_mode_refusals``.)"""
    record = tmp_path / "failed.jsonl"
    result = warmscope(
        "run", f"{FACTORIES}:always_raises", "--mode", "trace", "--input", "2x8",
        "--iters", "5", "--record", str(record), "--quiet",
    )  # fmt: skip
    assert result.code == 1, result.stderr
    assert "iterations 0" in result.stdout
    assert f"record     {record}" in result.stdout.splitlines()
    lines = result.stderr.splitlines()
    start = lines.index("Traceback (most recent call last):")
    assert lines[start + 1].lstrip().startswith("File "), lines[start : start + 3]


def adaptive_doc() -> dict[str, Any]:
    """An adaptive sweep of 2 settings capped at 5 that decided after 4 rounds: its plan was
    cut to the 8 processes that ran."""
    return {
        "target": "sample:speech",
        "adaptive": True,
        "cap": 5,
        "repeat": 5,
        "finished": 8,
        "planned": 8,
        "processes_fixed": 10,
        "decided": True,
        "decided_round": 4,
        "wall_s": 80.0,
        "iters": 50,
        "cells": [],
        "answer": "…",
    }


def test_a_sweep_counts_its_processes_alike_on_the_command_line_and_in_the_report() -> None:
    doc = adaptive_doc()
    assert "8 of 10 ran" in header_lines(doc)[0]
    assert "8 of 10 ran" in sweep_report(doc)
    assert "8 of 8" not in sweep_report(doc)


def test_the_tuis_export_proposes_the_folder_it_was_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warmscope.tui import export_jobs

    monkeypatch.chdir(tmp_path)
    assert export_jobs.default_folder() == tmp_path
