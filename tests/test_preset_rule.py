"""One preset rule and one builder of a sweep's cells, for the command line and the TUI: a
preset sets its knobs and keeps the others, as ``--preset`` does for one run."""

from __future__ import annotations

from warmscope.cli import make_parser
from warmscope.cli.sweep import sweep_cells
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.sweep_plan import SweepPlan
from warmscope.core.run.sweep import grid

ARGV = [
    "sample:speech",
    "--preset",
    "torchscript,frozen",
    "--set",
    "fusion_strategy=STATIC,2",
    "--set",
    "intra_op_threads=1",
]


def test_a_sweep_of_presets_keeps_a_knob_no_preset_names_on_the_command_line() -> None:
    cells = sweep_cells(make_parser("sweep").parse_args(ARGV), sweep=True)
    assert [c.label for c in cells] == ["torchscript", "frozen"]
    for cell in cells:
        assert cell.settings.knobs["fusion_strategy"] == "STATIC,2"
        assert cell.settings.knobs["intra_op_threads"] == 1
    assert cells[1].settings.knobs["freeze"] is True and cells[0].settings.knobs["freeze"] is False
    assert [c.settings.preset for c in cells] == ["torchscript", "frozen"]


def test_the_tuis_sweep_builds_the_same_cells_as_the_command_line() -> None:
    from_cli = sweep_cells(make_parser("sweep").parse_args(ARGV), sweep=True)
    base = RunSettings(target="sample:speech")
    base.set("fusion_strategy=STATIC,2")
    base.set("intra_op_threads=1")
    plan = SweepPlan(repeat=3, presets=("torchscript", "frozen"))
    from_tui = grid(base, plan.presets, plan.varies)
    assert [c.label for c in from_tui] == [c.label for c in from_cli]
    assert [c.settings.knobs for c in from_tui] == [c.settings.knobs for c in from_cli]


def test_a_preset_for_one_run_is_the_same_rule() -> None:
    args = make_parser("run").parse_args(
        ["sample:speech", "--preset", "no-profiling", "--set", "fusion_strategy=STATIC,2"]
    )
    from warmscope.cli.options import build_settings

    one = build_settings(args)
    s = RunSettings(target="sample:speech")
    s.set("fusion_strategy=STATIC,2")
    s.apply_preset("no-profiling")
    assert one.knobs == s.knobs
    assert one.knobs["profiling_executor"] is False and one.knobs["fusion_strategy"] == "STATIC,2"
