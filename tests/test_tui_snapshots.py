"""Snapshots of the main screens, fed by checked-in records of real runs (no clock, no child).

Regenerate after a deliberate change, and look at them before committing:
``pytest tests/test_tui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from tests.tui_support import settle
from warmscope.tui.app import WarmscopeApp, build_app

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "speech-script.jsonl"
NO_PROFILING = DATA / "speech-no-profiling.jsonl"
FAILED = DATA / "failed-at-3.jsonl"


def app(*records: Path) -> WarmscopeApp:
    return build_app(records=list(records))


def keys(*pressed: str):
    async def before(pilot: Pilot) -> None:
        await settle(pilot)
        for key in pressed:
            await pilot.press(key)
            await settle(pilot)

    return before


def test_main_screen_80x24(snap_compare) -> None:
    assert snap_compare(app(SCRIPT, NO_PROFILING), terminal_size=(80, 24), run_before=settle)


def test_main_screen_120x40(snap_compare) -> None:
    assert snap_compare(app(SCRIPT, NO_PROFILING), terminal_size=(120, 40), run_before=settle)


def test_settings_screen(snap_compare) -> None:
    assert snap_compare(app(SCRIPT), terminal_size=(100, 30), run_before=keys("e"))


def test_compare_screen(snap_compare) -> None:
    assert snap_compare(app(SCRIPT, NO_PROFILING), terminal_size=(100, 30), run_before=keys("c"))


def test_failed_run(snap_compare) -> None:
    assert snap_compare(app(FAILED), terminal_size=(80, 24), run_before=settle)


def test_help_screen(snap_compare) -> None:
    assert snap_compare(app(SCRIPT), terminal_size=(80, 24), run_before=keys("question_mark"))


def test_settings_screen_80x24(snap_compare) -> None:
    assert snap_compare(app(SCRIPT), terminal_size=(80, 24), run_before=keys("e"))


def test_compare_screen_80x24(snap_compare) -> None:
    assert snap_compare(app(SCRIPT, NO_PROFILING), terminal_size=(80, 24), run_before=keys("c"))


def test_nothing_that_matters_is_cut_at_80x24() -> None:
    """What each screen must show whole at 80×24, read from the screen itself."""
    from tests.tui_support import run, screen_text

    a = app(SCRIPT, NO_PROFILING)
    seen: dict[str, str] = {}

    async def scenario(pilot: Pilot) -> None:
        await settle(pilot)
        seen["main"] = screen_text(a)
        for key, name in (("e", "settings"), ("c", "compare"), ("question_mark", "help")):
            await pilot.press(key)
            await settle(pilot)
            seen[name] = screen_text(a)
            await pilot.press("escape")
            await settle(pilot)

    run(a, scenario, size=(80, 24))
    main = seen["main"]
    assert "O optimized" in main or "O=opt" in main, "the chart's legend"
    assert "P profiling" in main or "P=prof" in main
    assert "p50" in main and "warm-up" in main
    assert "?" in main.splitlines()[-1] and "Help" in main.splitlines()[-1], "the footer ends whole"
    settings = seen["settings"]
    for preset in ("torchscript", "no-profiling", "no-optimizer", "frozen", "eager", "compile"):
        assert preset in settings, f"the preset {preset}"
    compare = seen["compare"]
    for figure in ("first iteration", "p50", "p99", "throughput", "B/A", "can't tell"):
        assert figure in compare, figure
    assert "no-profiling" in compare, "B's title names its preset"
    assert "profiling_executor" in compare, "the setting that differs"
    assert "Quit" in seen["help"] and "Run" in seen["help"]
