"""Every hint the tool prints is a command that runs: each kind is parsed by the real command
line, and the sweep a TorchScript run suggests runs for real (issue 31: a hint that stopped at
"has no example inputs", then failed 15 times at torch.jit.script on a traced model)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.conftest import warmscope
from warmscope.cli import make_parser
from warmscope.cli.options import build_settings
from warmscope.cli.sweep import sweep_cells
from warmscope.core.data.record import read_run
from warmscope.core.output.hints import hints, profiling_sweep

DATA = Path(__file__).parent / "data"
TRACED = ["sample:speech", "--mode", "trace", "--input", "1xTx40", "--dim", "T=20,30"]


def commands(text: str) -> list[list[str]]:
    """The ``warmscope …`` commands a hint quotes in backticks."""
    return [shlex.split(c) for c in re.findall(r"`(warmscope [^`]+)`", text)]


def fragments(text: str) -> list[list[str]]:
    """The options a hint quotes for the user to add (```--set KNOB=V```)."""
    return [shlex.split(c) for c in re.findall(r"`(--[^`]+)`", text)]


def test_the_profiling_sweep_keeps_the_runs_mode_inputs_and_shapes() -> None:
    traced = build_settings(make_parser("run").parse_args([*TRACED, "--profile-iters", "0"]))
    line = profiling_sweep(traced)
    args = make_parser("sweep").parse_args(line[2:])
    cells = sweep_cells(args, sweep=True)
    assert [c.label for c in cells] == ["profiling_executor=on", "profiling_executor=off"]
    for cell in cells:
        assert cell.settings.knobs["mode"] == "trace"  # never scripted: it may not script
        assert cell.settings.dims == traced.dims and cell.settings.inputs == traced.inputs
    scripted = build_settings(make_parser("run").parse_args(["sample:speech", "--mode", "script"]))
    cells = sweep_cells(make_parser("sweep").parse_args(profiling_sweep(scripted)[2:]), sweep=True)
    assert [c.label for c in cells] == ["torchscript", "no-profiling", "no-optimizer"]


def test_each_kind_of_hint_parses_as_the_command_line_takes_it() -> None:
    """A recorded TorchScript run's hints: the sweep they quote and each option fragment."""
    data = read_run(DATA / "speech-script.jsonl")
    said = " ".join(hints(data))
    quoted = commands(said)
    assert quoted, said
    for line in quoted:
        assert line[1] == "sweep"
        sweep_cells(make_parser("sweep").parse_args(line[2:]), sweep=True)
    own = data.settings.command_line()[2:]
    for fragment in fragments(said):
        build_settings(make_parser("run").parse_args([*own, *fragment]))


def test_the_suggested_sweep_of_a_traced_run_runs(tmp_path: Path) -> None:
    """The hinted sweep as printed, one process a cell and few iterations (the hint's own
    --repeat 5 is what tells; these settings are what must run)."""
    traced = build_settings(make_parser("run").parse_args([*TRACED, "--iters", "4"]))
    line = profiling_sweep(traced)
    result = warmscope(
        *line[1:], "--repeat", "1", "--quiet", "--record", str(tmp_path / "s"),
        json_path=tmp_path / "s.json", timeout=200,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert result.doc is not None
    assert all(p["status"] == "ok" for c in result.doc["cells"] for p in c["processes"])
