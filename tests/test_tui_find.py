"""Finding things in the TUI: fields of the settings form, events by text and by kind, the
slowest iterations, graph text; what empty panes say; text that used to be cut."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input, Label

from tests.fake_session import FakeSession, Moment, end, factory, iterations
from tests.tui_support import run, screen_text, settle, wait_for
from warmscope.core import outcome
from warmscope.core.settings import RunSettings
from warmscope.tui.app import build_app
from warmscope.tui.choice_field import ChoiceField
from warmscope.tui.settings_screen import SettingsScreen

DATA = Path(__file__).parent / "data"
SPEECH = DATA / "speech-script.jsonl"
SETTINGS = RunSettings(target="sample:trivial", iters=6)


def short_run() -> list[Moment]:
    return [Moment([iterations(0, [30.0, 5.0, 2.0, 2.0, 2.0, 2.0])]), Moment([end(outcome.OK)])]


def test_settings_the_profiling_executor_is_a_few_keys_away() -> None:
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
        # The workflow: jump to the profiling executor, turn it off, apply and run.
        for key in ("slash", "p", "r", "o", "f"):
            await pilot.press(key)
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
        await wait_for(pilot, lambda: len(made) == 2)
        assert made[1].data.settings["knobs"]["profiling_executor"] is False

    run(app, scenario)


def test_settings_jump_line_escape_goes_back_and_the_form_stays() -> None:
    app = build_app(records=[SPEECH])

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

    run(app, scenario)


def test_settings_presets_fit_at_80_columns() -> None:
    app = build_app(records=[SPEECH])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("e")
        await pilot.pause()
        text = screen_text(app)
        for name in ("torchscript", "no-profiling", "frozen", "eager", "compile"):
            assert name in text, name

    run(app, scenario, size=(80, 24))
