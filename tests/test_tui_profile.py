"""An iteration's breakdown, the graphs view and profiling the next run, over a record of a
real profiled run: ``warmscope run sample:quantized_cnn --iters 20 --profile-iters 0,1,steady
--set intra_op_threads=1`` (its traces are not checked in: the TUI does not need them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from textual.pilot import Pilot
from textual.widgets import DataTable, Static, TextArea

from tests.tui_support import SharedApp, matches_snapshot, screen_text, screenshot, settle
from warmscope.tui.app import build_app
from warmscope.tui.screens.event_screen import EventDetailScreen
from warmscope.tui.screens.graphs_screen import GraphsScreen, without_sources
from warmscope.tui.screens.iteration_screen import IterationScreen
from warmscope.tui.screens.profile_screen import ProfileScreen
from warmscope.tui.widgets.run.iteration_table import IterationTable
from warmscope.tui.widgets.run.run_header import RunHeader

DATA = Path(__file__).parent / "data"
QUANTIZED = DATA / "quantized-profiled.jsonl"
SCRIPT = DATA / "speech-script.jsonl"


@pytest.fixture(scope="module")
def quantized() -> Iterator[SharedApp]:
    """``warmscope open quantized-profiled.jsonl``: one app for the tests that read the profiled
    run (each starts from the first frame's screen: ``SharedApp``)."""
    with SharedApp(build_app(records=[QUANTIZED])) as shared:
        yield shared


@pytest.fixture(scope="module")
def unprofiled() -> Iterator[SharedApp]:
    """``warmscope open speech-script.jsonl``: a run that profiled no iteration."""
    with SharedApp(build_app(records=[SCRIPT])) as shared:
        yield shared


def table_text(table: DataTable) -> str:
    return "\n".join(
        " ".join(str(cell) for cell in table.get_row_at(r)) for r in range(table.row_count)
    )


def test_selecting_iteration_0_shows_its_operators_and_the_diff_against_steady(
    quantized: SharedApp,
) -> None:
    app = quantized.app

    async def scenario(pilot: Pilot) -> None:
        assert isinstance(app.focused, IterationTable)
        await pilot.press("home", "enter")
        screen = app.screen
        assert isinstance(screen, IterationScreen)
        title = str(screen.query_one("#iteration-title", Static).render())
        assert title.startswith("#0 · ") and "profiling run" in title
        text = screen_text(app)
        assert "vs steady #20" in text and "not in any operator" in text
        diff = table_text(screen.query_one("#iteration-diff", DataTable))
        assert "(not in any operator)" in diff and "quantized::" in diff
        first = screen.query_one("#iteration-diff", DataTable).get_row_at(0)
        assert str(first[0]) == "(not in any operator)"  # by what it adds: most of 75 ms

        await pilot.press("2")
        ops = table_text(screen.query_one("#iteration-ops", DataTable))
        assert ops.splitlines()[0].startswith("quantized::conv2d_relu")
        assert "1x3x64x64" in ops
        assert "quantized::" in screen_text(app)

        await pilot.press("3", "enter")  # the first event, in full
        assert isinstance(app.screen, EventDetailScreen)
        assert "graph(" in app.screen.query_one(TextArea).text
        await pilot.press("escape")
        assert app.screen is screen
        await pilot.press("q")  # closes the screen, does not quit
        assert app.screen.id == "main" and app.is_running

    quantized.run(scenario)


def test_an_unprofiled_iteration_says_how_to_profile_it(quantized: SharedApp) -> None:
    app = quantized.app

    async def scenario(pilot: Pilot) -> None:
        table = app.screen.query_one(IterationTable)
        table.cursor = 3
        await pilot.press("enter")
        assert isinstance(app.screen, IterationScreen)
        text = screen_text(app)
        assert "not profiled (this run profiled #0, #1, #20)" in text and "press p" in text
        assert not app.screen.query("#iteration-ops")
        await pilot.press("p")
        assert isinstance(app.screen, ProfileScreen)
        await pilot.press("escape", "escape")
        assert app.screen.id == "main"

    quantized.run(scenario)


def test_graphs_view_shows_the_loaded_and_the_warm_graph_side_by_side(quantized: SharedApp) -> None:
    app = quantized.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("g")
        screen = app.screen
        assert isinstance(screen, GraphsScreen)
        loaded = screen.query_one("#graph-loaded", TextArea)
        warm = screen.query_one("#graph-optimized", TextArea)
        assert loaded.text.startswith("graph(") and warm.text.startswith("graph(")
        assert loaded.text != warm.text
        assert loaded.region.y == warm.region.y and loaded.region.x < warm.region.x
        assert "# /" not in loaded.text  # source locations hidden until s
        await pilot.press("s")
        assert "# /" in loaded.text
        await pilot.press("2")
        assert "def forward" in screen.query_one("#graph-code", TextArea).text
        await pilot.press("escape")
        assert app.screen.id == "main"

    quantized.run(scenario)


def test_graphs_stack_at_80_columns_and_an_eager_run_has_none(quantized: SharedApp) -> None:
    app = quantized.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("g")
        loaded = app.screen.query_one("#graph-loaded")
        warm = app.screen.query_one("#graph-optimized")
        assert loaded.region.x == warm.region.x and loaded.region.y < warm.region.y
        await pilot.press("escape")
        graphs, app.runs[0].data.graphs = app.runs[0].data.graphs, {}  # as an eager run has
        try:
            await pilot.press("g")
            assert "has no TorchScript graphs" in screen_text(app)
        finally:  # the record as it was read, for the tests after this one
            app.runs[0].data.graphs = graphs

    quantized.run(scenario, (80, 24))


def test_without_sources_keeps_the_nodes() -> None:
    line = "  %x.9 : Tensor = aten::max_pool2d(%112, %4) # /a/functional.py:837:11"
    assert without_sources(line) == "  %x.9 : Tensor = aten::max_pool2d(%112, %4)"


def test_profile_prompt_refuses_a_bad_list_and_sets_the_next_run(unprofiled: SharedApp) -> None:
    app = unprofiled.app  # not profiled: the note shows the change

    async def scenario(pilot: Pilot) -> None:
        assert app.state.next_settings is not None and app.state.next_settings.profile_iters is None
        await pilot.press("p")
        prompt = app.screen
        assert isinstance(prompt, ProfileScreen)
        await pilot.press(*"first", "enter")
        assert app.screen is prompt
        error = prompt.query_one("#profile-error", Static)
        assert error.display and "bad --profile-iters item 'first'" in str(error.render())
        await pilot.press("ctrl+u", *"0,1,steady", "enter")
        assert app.screen.id == "main"
        assert app.state.next_settings.profile_iters == "0,1,steady"
        assert "next run: profile_iters=0,1,steady" in app.screen.query_one(RunHeader).plain

    unprofiled.run(scenario)


def test_profile_prompt_knows_the_run_length_and_is_in_the_palette(unprofiled: SharedApp) -> None:
    app = unprofiled.app

    async def scenario(pilot: Pilot) -> None:
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Profile iterations", "Graphs"} <= titles
        await pilot.press("p", "ctrl+u", *"0,500", "enter")
        assert "the run has only 60 iterations" in screen_text(app)

    unprofiled.run(scenario)


def test_iteration_screen_snapshot(
    quantized: SharedApp, snapshot: SnapshotAssertion, request: pytest.FixtureRequest
) -> None:
    async def before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("home", "enter")
        await settle(pilot)

    assert matches_snapshot(snapshot, request, screenshot(quantized, before, (100, 30)))
