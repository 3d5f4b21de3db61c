"""The trust prompt against records that choose what runs: one list, exactly what
``RunSettings.untrusted()`` returns, every item with what it would do, scrolling however long.

Each record is a real file, a checked-in record of a real run with its header's settings
rewritten; the app opens it as ``warmscope open`` does and ``r`` re-runs it (a fake session
stands in for the child: what is checked is what the user is asked, and what then runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Static

from tests.test_tui_hostile import SCRIPT, recording, rewrite
from tests.tui_support import run, screen_text, wait_for
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.fields import FIELDS
from warmscope.core.data.settings.setting import Setting, argv
from warmscope.tui.app import build_app
from warmscope.tui.screens.main_screen import MainScreen
from warmscope.tui.screens.trust_screen import TrustScreen

UNTRUSTED = [f for f in FIELDS if not f.trusted]
"""Every setting a file may not choose: a field declared later joins the test by itself."""

VALUES: dict[str, Any] = {
    "str": "/srv/from-record/value",
    "str?": "/srv/from-record/value",
    "bool": True,
    "strs": ["from_record_module"],
    "int": 7,
    "float": 1.5,
    "float?": 1.5,
    "floats": [1.5],
}


def record_value(f: Setting) -> Any:
    """A value a record could give ``f`` that is not its default."""
    if f.kind == "strmap":
        key = "env" if f.name == "env" else "inductor"
        return {f"{'LD_PRELOAD' if key == 'env' else 'inductor.cpp.cxx'}": "/srv/evil"}
    value = VALUES[f.kind]
    assert value != f.default(), f"{f.name}: pick a value that is not its default"
    return value


def asking(folder: Path, name: str, **settings: Any) -> Path:
    def change(line: dict[str, Any]) -> None:
        if line["type"] == "header":
            line["settings"].update(settings)

    return rewrite(SCRIPT, folder / name, change)


def prompt_text(screen: TrustScreen) -> str:
    return str(screen.query_one("#trust-items", Static).render())


def test_every_setting_that_chooses_what_runs_is_in_the_prompt(tmp_path: Path) -> None:
    # Each alone is one a file may not choose (RunSettings' own rule, for each field)...
    for f in UNTRUSTED:
        alone = RunSettings(target="sample:trivial")
        setattr(alone, f.name, record_value(f))
        assert set(alone.untrusted()) == {f.name} and alone.consent_items(), f.name
    # ... and a record that sets them all asks for them all, each as the reproduce line
    # writes it, with what it would do.
    values = {f.name: record_value(f) for f in UNTRUSTED}
    made: list[RunSettings] = []
    app = build_app(records=[asking(tmp_path, "all.jsonl", **values)], start=recording(made))

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("r")
        screen = app.screen
        assert isinstance(screen, TrustScreen), "settings from a record ran unasked"
        settings = app.runs[0].data.settings
        assert set(settings.untrusted()) == set(values)
        shown = prompt_text(screen)
        for field in UNTRUSTED:
            for part in argv(field, settings):
                assert part in shown, (field.name, part, shown)
        assert screen.items == settings.consent_items()
        await pilot.press("n")
        await wait_for(pilot, lambda: len(made) == 1)
        assert made[0].untrusted() == {}
        assert isinstance(app.screen, MainScreen)

    run(app, scenario)


def test_a_recipe_a_host_and_inputs_say_what_they_would_do(tmp_path: Path) -> None:
    record = asking(
        tmp_path,
        "remote.jsonl",
        recipe="/home/me/recipe.py",
        host="lab-gpu",
        inputs_file="/home/me/secret-inputs.pt",
    )
    made: list[RunSettings] = []
    app = build_app(records=[record], start=recording(made))

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("r")
        assert isinstance(app.screen, TrustScreen)
        shown = prompt_text(app.screen)
        assert "runs /home/me/recipe.py" in shown
        assert "sends --recipe /home/me/recipe.py and --inputs /home/me/secret-inputs.pt" in shown
        assert "to host lab-gpu" in shown
        await pilot.press("escape")
        await pilot.pause()
        assert made == []

    run(app, scenario)


def test_a_long_list_scrolls_to_its_last_item_and_keeps_the_keys_on_screen(
    tmp_path: Path,
) -> None:
    env = {f"HARMLESS_{n:02d}": "1" for n in range(60)}
    env["LD_PRELOAD"] = "/tmp/evil.so"
    record = asking(tmp_path, "long.jsonl", env=env)
    made: list[RunSettings] = []
    app = build_app(records=[record], start=recording(made))

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("r")
        screen = app.screen
        assert isinstance(screen, TrustScreen)
        assert len(screen.items) == 61 and "LD_PRELOAD=/tmp/evil.so" in screen.items[-1]
        listing = screen.query_one("#trust-list", VerticalScroll)
        keys = screen.query_one("#trust-keys", Static)
        assert listing.max_scroll_y > 0, "61 items fit in 24 rows?"
        assert keys.region.bottom <= app.size.height and keys.region.height > 0
        await pilot.press("end")
        await pilot.pause()
        assert listing.scroll_y == listing.max_scroll_y
        assert "LD_PRELOAD=/tmp/evil.so" in screen_text(app)
        await pilot.press("n")
        await wait_for(pilot, lambda: len(made) == 1)
        assert made[0].env == {}

    run(app, scenario, size=(80, 24))
