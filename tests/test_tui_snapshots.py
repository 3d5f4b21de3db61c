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
