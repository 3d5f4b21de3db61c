"""Finding things in the TUI: fields of the settings form, events by text and by kind, the
slowest iterations, graph text; what empty panes say; text that used to be cut."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Label, TextArea

from tests.fake_session import FakeSession, Moment, end, factory, iterations
from tests.tui_support import SharedApp, run, screen_text, settle, wait_for
from warmscope.core.child import outcome
from warmscope.core.data.settings import RunSettings
from warmscope.tui.app import build_app
from warmscope.tui.screens.compare_screen import CompareScreen
from warmscope.tui.screens.event_screen import EventDetailScreen
from warmscope.tui.screens.graphs_screen import GraphsScreen
from warmscope.tui.screens.settings_screen import SettingsScreen
from warmscope.tui.widgets.choice_field import ChoiceField
from warmscope.tui.widgets.row_list import RowList
from warmscope.tui.widgets.run.events_pane import EventsPane
from warmscope.tui.widgets.run.iteration_table import IterationTable
from warmscope.tui.widgets.search_line import SearchLine

DATA = Path(__file__).parent / "data"
SPEECH = DATA / "speech-script.jsonl"
SETTINGS = RunSettings(target="sample:trivial", iters=6)
QUANTIZED = DATA / "quantized-profiled.jsonl"


@pytest.fixture(scope="module")
def speech() -> Iterator[SharedApp]:
    """``warmscope open speech-script.jsonl``: one app for the tests that search it (each
    starts from the first frame's screen: ``SharedApp``)."""
    with SharedApp(build_app(records=[SPEECH])) as shared:
        yield shared


@pytest.fixture(scope="module")
def quantized() -> Iterator[SharedApp]:
    """``warmscope open quantized-profiled.jsonl``: a profiled TorchScript run, its graphs."""
    with SharedApp(build_app(records=[QUANTIZED])) as shared:
        yield shared


def short_run() -> list[Moment]:
    return [Moment([iterations(0, [30.0, 5.0, 2.0, 2.0, 2.0, 2.0])]), Moment([end(outcome.OK)])]


def test_settings_the_profiling_executor_is_a_few_keys_away() -> None:
    """The mission's first step by hand: e /pe ⏎ ← ^r (the initials find the field), then c."""
    made: list[FakeSession] = []
    app = build_app(settings=SETTINGS, start=factory(short_run(), made))

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: made and made[0].is_finished())
        await settle(pilot)
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, SettingsScreen)
        assert form.focused is form.query_one("#preset")
        await pilot.press("down")
        assert form.focused is form.query_one("#field-target"), "↓ moves to the next field"
        await pilot.press("up")
        assert form.focused is form.query_one("#preset")
        await pilot.press("j")
        assert form.focused is form.query_one("#field-target"), "j too, outside a text field"
        await pilot.press("end", "j")
        assert form.query_one("#field-target", Input).value == "sample:trivialj", "j is typed"
        await pilot.press("backspace")
        await pilot.press("up")
        # The workflow, eight keys: jump to the profiling executor, turn it off, apply and run.
        await pilot.press("slash", "p", "e")
        await pilot.pause()
        assert "→ profiling_executor" in screen_text(app)
        await pilot.press("enter")
        field = form.query_one("#knob-profiling_executor", ChoiceField)
        assert form.focused is field
        name = form.query_one("#row-profiling_executor .field-name", Label)
        assert str(name.render()).startswith("▶ profiling_executor"), "marked without colour"
        assert "▶ profiling_executor" in screen_text(app), "scrolled into view"
        assert str(form.query_one("#row-preset .field-name", Label).render()).startswith("  ")
        await pilot.press("left")
        assert field.value == "off"
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: len(made) == 2 and made[1].is_finished())
        assert made[1].data.settings.knobs["profiling_executor"] is False
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen)
        assert "profiling_executor" in screen_text(app)

    run(app, scenario)


def test_the_jump_line_finds_by_start_initials_part_and_help() -> None:
    from warmscope.tui.screens.settings_screen import find_fields

    names = ["profiling_executor", "preset", "intra_op_threads", "inter_op_threads", "iters"]
    helps = {"iters": "forward passes to run", "preset": "a named set of knobs"}
    assert find_fields("prof", names, helps) == ["profiling_executor"]
    assert find_fields("pe", names, helps)[0] == "profiling_executor", "its initials"
    assert find_fields("p", names, helps)[:2] == ["profiling_executor", "preset"], "starts first"
    assert find_fields("Threads", names, helps) == ["intra_op_threads", "inter_op_threads"]
    assert find_fields("forward", names, helps) == ["iters"], "the help text too"
    assert find_fields("  ", names, helps) == [] and find_fields("zz", names, helps) == []


def test_settings_jump_line_escape_goes_back_and_the_form_stays(speech: SharedApp) -> None:
    app = speech.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, SettingsScreen)
        for key in ("slash", "t", "h", "r", "e", "a", "d", "s"):
            await pilot.press(key)
        assert form.found == ["intra_op_threads", "inter_op_threads"]
        await pilot.press("down")
        assert "inter_op_threads (2 of 2" in screen_text(app)
        await pilot.press("escape")
        assert app.screen is form, "Esc leaves the jump line, not the form"
        assert form.focused is form.query_one("#preset")
        assert not form.query_one("#settings-find-line").display
        await pilot.press("escape")
        assert app.screen is not form

    speech.run(scenario)


def header(pane: RowList) -> str:
    return pane.header_text().plain


def test_events_search_finds_next_and_previous_and_esc_clears(speech: SharedApp) -> None:
    app = speech.app

    async def scenario(pilot: Pilot) -> None:
        pane = app.screen.query_one(EventsPane)
        assert not pane.has_focus
        # Typed fast, straight after `/`: every key lands in the search.
        await pilot.press("slash", "o", "p", "t", "i", "m", "enter")
        assert pane.has_focus
        assert pane.current_row().title == "Optimized Graph"
        assert header(pane).endswith("/optim: 1/1 · n N")
        await pilot.press("slash", "g", "r", "a", "p", "h", "enter")
        hits = pane.hits()
        assert len(hits) >= 9 and pane.cursor in hits
        first = pane.cursor
        await pilot.press("n")
        assert pane.cursor == next((i for i in hits if i > first), hits[0])
        await pilot.press("N")
        assert pane.cursor == first
        at = hits.index(first) + 1
        assert f"/graph: {at}/{len(hits)}" in screen_text(app), "the header says where"
        await pilot.press("escape")
        assert pane.term == "" and header(pane).endswith("title")
        await pilot.press("slash", "z", "z", "q")
        assert "/zzq▏" in header(pane)
        await pilot.press("escape")
        assert pane.draft is None and pane.cursor == first, "Esc while typing goes back"

    speech.run(scenario)


def test_events_filter_by_kind_cycles_and_esc_shows_all(speech: SharedApp) -> None:
    app = speech.app

    async def scenario(pilot: Pilot) -> None:
        pane = app.screen.query_one(EventsPane)
        total = len(pane.rows)
        assert pane.kinds() == ["warning", "jit"]
        await pilot.press("f")
        assert pane.has_focus and {e.kind for e in pane.rows} == {"warning"}
        assert "only warning (1)" in screen_text(app)
        await pilot.press("f")
        assert {e.kind for e in pane.rows} == {"jit"} and len(pane.rows) == total - 1
        assert "only jit (9)" in header(pane)
        await pilot.press("f")
        assert pane.kind is None and len(pane.rows) == total, "after the last kind: all"
        await pilot.press("f", "f", "escape")
        assert pane.kind is None and len(pane.rows) == total

    speech.run(scenario)


def test_iterations_slowest_first_over_the_whole_run_and_back(speech: SharedApp) -> None:
    app = speech.app

    async def scenario(pilot: Pilot) -> None:
        table = app.screen.query_one(IterationTable)
        view = table.view
        assert view is not None and view.count > 20
        await pilot.press("o")
        assert table.border_title == "iterations · slowest first"
        rows = list(table.rows)
        assert len(rows) == view.count
        assert [ms for _, ms in rows] == sorted(view.latencies[: view.count], reverse=True)
        assert table.cursor == 0 and rows[0][1] == max(view.latencies[: view.count])
        await pilot.press("colon", "5", "enter")
        assert table.current_row()[0] == 5, "go to iteration: by number, in either order"
        await pilot.press("o")
        assert table.border_title == "iterations" and table.cursor == 5

    speech.run(scenario)


def test_iterations_slowest_first_takes_new_iterations_of_a_live_run() -> None:
    made: list[FakeSession] = []
    script = [
        Moment([iterations(0, [5.0, 50.0, 2.0])]),
        *[Moment()] * 10,
        Moment([iterations(3, [100.0, 1.0, 50.0])]),
        *[Moment()] * 10,
        Moment([iterations(6, [3.0] * 100)]),
        Moment([end(outcome.OK)]),
    ]
    app = build_app(settings=SETTINGS, start=factory(script, made))

    async def scenario(pilot: Pilot) -> None:
        table = app.screen.query_one(IterationTable)
        await wait_for(pilot, lambda: table.view is not None and table.view.count == 3)
        await pilot.press("o")
        assert [i for i, _ in table.rows] == [1, 0, 2]
        await pilot.press("down")
        assert table.current_row() == (0, 5.0)
        await wait_for(pilot, lambda: made[0].is_finished())
        await settle(pilot)
        order = [i for i, _ in table.rows]
        assert order[:5] == [3, 1, 5, 0, 6] and len(order) == 106
        assert table.current_row() == (0, 5.0), "the cursor stays on its iteration"

    run(app, scenario)


def test_graphs_wrap_long_lines_and_find_text_with_n_and_esc(quantized: SharedApp) -> None:
    app = quantized.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("g")
        screen = app.screen
        assert isinstance(screen, GraphsScreen)
        loaded = screen.query_one("#graph-loaded", TextArea)
        longest = max(len(line) for line in loaded.text.splitlines())
        assert longest > loaded.size.width, "a line wider than its pane"
        assert loaded.soft_wrap and loaded.wrapped_document.height > loaded.document.line_count
        await pilot.press("w")
        assert not loaded.soft_wrap
        await pilot.press("w")
        # Typed fast, straight after `/`.
        await pilot.press("slash", *"callmethod", "enter")
        assert loaded.has_focus and loaded.selected_text.lower() == "callmethod"
        first = loaded.selection
        total = loaded.text.lower().count("callmethod")
        assert f"1/{total} · n N" in screen_text(app)
        await pilot.press("n")
        assert loaded.selection.start > first.start and loaded.selected_text == "CallMethod"
        assert f"2/{total}" in screen_text(app)
        await pilot.press("N", "N")
        assert f"{total}/{total}" in screen_text(app), "N before the first wraps to the last"
        await pilot.press("escape")
        assert app.screen is screen, "Esc clears the search first"
        assert not screen.query_one(SearchLine).display and loaded.selected_text == ""
        await pilot.press("escape")
        assert app.screen is not screen

    quantized.run(scenario)


def test_an_events_full_text_is_searchable(quantized: SharedApp) -> None:
    app = quantized.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("slash", *"optimized", "enter", "enter")
        screen = app.screen
        assert isinstance(screen, EventDetailScreen)
        text = screen.query_one(TextArea)
        assert text.soft_wrap
        await pilot.press("slash", *"prim::", "enter")
        assert text.selected_text == "prim::"

    quantized.run(scenario)


def test_an_empty_stderr_pane_says_so(speech: SharedApp) -> None:
    app = speech.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("3")
        assert "no output on stderr" in screen_text(app)

    speech.run(scenario)
