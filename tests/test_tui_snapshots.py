"""Snapshots of the main screens, fed by checked-in records of real runs (no clock, no child).

The 80×24 ones also read the screen's text for what must show whole there. Regenerate after a
deliberate change, and look at them before committing:
``pytest tests/test_tui_snapshots.py --snapshot-update``.

The tests that open the same records share one app (``SharedApp``: each starts from the first
frame's screen, at its own size), and compare its screenshot as ``snap_compare`` would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from textual.pilot import Pilot

from tests.tui_support import SharedApp, matches_snapshot, screen_text, screenshot, settle
from warmscope.tui.app import WarmscopeApp, build_app

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "speech-script.jsonl"
NO_PROFILING = DATA / "speech-no-profiling.jsonl"
FAILED = DATA / "failed-at-3.jsonl"


def app(*records: Path) -> WarmscopeApp:
    return build_app(records=list(records))


@pytest.fixture(scope="module")
def two_runs() -> Iterator[SharedApp]:
    """``warmscope open speech-script.jsonl speech-no-profiling.jsonl``"""
    with SharedApp(app(SCRIPT, NO_PROFILING)) as shared:
        yield shared


@pytest.fixture(scope="module")
def one_run() -> Iterator[SharedApp]:
    """``warmscope open speech-script.jsonl``"""
    with SharedApp(app(SCRIPT)) as shared:
        yield shared


def keys(*pressed: str, whole: Callable[[str], None] | None = None):
    """Press ``pressed``, each settled; then ``whole`` reads the screen's text (what must not
    be cut at that size) before the snapshot is taken."""

    async def before(pilot: Pilot) -> None:
        await settle(pilot)
        for key in pressed:
            await pilot.press(key)
            await settle(pilot)
        if whole is not None:
            whole(screen_text(pilot.app))  # type: ignore[arg-type]

    return before


# What each screen must show whole at 80×24, read from the screen itself.


def main_whole(main: str) -> None:
    assert "O optimized" in main or "O=opt" in main, "the chart's legend"
    assert "P profiling" in main or "P=prof" in main
    assert "p50" in main and "warm-up" in main
    assert "?" in main.splitlines()[-1] and "Help" in main.splitlines()[-1], "the footer ends whole"


def settings_whole(settings: str) -> None:
    for preset in ("torchscript", "no-profiling", "no-optimizer", "frozen", "eager", "compile"):
        assert preset in settings, f"the preset {preset}"


def compare_whole(compare: str) -> None:
    for figure in ("first iteration", "p50", "p99", "throughput", "B/A", "can't tell"):
        assert figure in compare, figure
    assert "no-profiling" in compare, "B's title names its preset"
    assert "profiling_executor" in compare, "the setting that differs"


def help_whole(help_text: str) -> None:
    assert "Quit" in help_text and "Run" in help_text


def test_main_screen_80x24(
    two_runs: SharedApp, snapshot: SnapshotAssertion, request: pytest.FixtureRequest
) -> None:
    main = keys(whole=main_whole)
    assert matches_snapshot(snapshot, request, screenshot(two_runs, main, (80, 24)))


def test_main_screen_120x40(
    two_runs: SharedApp, snapshot: SnapshotAssertion, request: pytest.FixtureRequest
) -> None:
    assert matches_snapshot(snapshot, request, screenshot(two_runs, settle, (120, 40)))


def test_settings_screen(
    one_run: SharedApp, snapshot: SnapshotAssertion, request: pytest.FixtureRequest
) -> None:
    assert matches_snapshot(snapshot, request, screenshot(one_run, keys("e"), (100, 30)))


def test_compare_screen(
    two_runs: SharedApp, snapshot: SnapshotAssertion, request: pytest.FixtureRequest
) -> None:
    assert matches_snapshot(snapshot, request, screenshot(two_runs, keys("c"), (100, 30)))


def test_failed_run(snap_compare) -> None:
    assert snap_compare(app(FAILED), terminal_size=(80, 24), run_before=settle)


def test_help_screen(
    one_run: SharedApp, snapshot: SnapshotAssertion, request: pytest.FixtureRequest
) -> None:
    helps = keys("question_mark", whole=help_whole)
    assert matches_snapshot(snapshot, request, screenshot(one_run, helps, (80, 24)))


def test_settings_screen_80x24(
    one_run: SharedApp, snapshot: SnapshotAssertion, request: pytest.FixtureRequest
) -> None:
    settings = keys("e", whole=settings_whole)
    assert matches_snapshot(snapshot, request, screenshot(one_run, settings, (80, 24)))


def test_compare_screen_80x24(
    two_runs: SharedApp, snapshot: SnapshotAssertion, request: pytest.FixtureRequest
) -> None:
    compare = keys("c", whole=compare_whole)
    assert matches_snapshot(snapshot, request, screenshot(two_runs, compare, (80, 24)))
