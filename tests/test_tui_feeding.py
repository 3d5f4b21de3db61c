"""The TUI and fed models: the feed settings in the form, per-shape rows in the summary."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from tests.tui_support import SharedApp
from warmscope.tui.app import build_app
from warmscope.tui.run_view import RunView
from warmscope.tui.screens.settings_screen import SettingsScreen
from warmscope.tui.widgets.run.summary_panel import summary_content

SCRIPT = Path(__file__).parent / "data" / "speech-script.jsonl"
# A real run: warmscope run tests/targets/feeding.py:rows --input 2xT --dim T=4,8
# --iters 10 --idle-probe 0.05 (its command is in the record's header).
SHAPES = Path(__file__).parent / "data" / "feeding-shapes.jsonl"


@pytest.fixture(scope="module")
def opened() -> Iterator[SharedApp]:
    """``warmscope open speech-script.jsonl feeding-shapes.jsonl``: one app for the tests
    below (each starts from the first frame's screen, the first record viewed: ``SharedApp``)."""
    with SharedApp(build_app(records=[SCRIPT, SHAPES])) as shared:
        yield shared


def test_the_form_sets_how_the_model_is_fed(opened: SharedApp) -> None:
    app = opened.app  # the next run's settings: the first record's

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, SettingsScreen)
        values = {
            "inputs": "1xTx40",
            "dims": "T=20,30",
            "schedule": "random",
            "seed": "5",
            "gap": "0.01",
            "idle_probe": "1,2.5",
        }
        for name, text in values.items():
            form.query_one(f"#field-{name}", Input).value = text
        settings = form.build()
        assert settings.dims == ["T=20,30"] and settings.schedule == "random"
        assert settings.seed == 5 and settings.gap == 0.01 and settings.idle_probe == [1.0, 2.5]
        line = settings.command_line()
        assert "--dim" in line and "--idle-probe" in line and "1,2.5" in line
        form.query_one("#field-dims", Input).value = "T=5..1"
        await pilot.pause()
        assert "--dim" in str(form.errors.get("dims"))
        await pilot.press("escape")

    opened.run(scenario)


def test_the_summary_panel_shows_each_shape_against_its_p50() -> None:
    view = RunView()
    view.shapes = [
        {"key": "T=200", "first_vs_p50": 21.3, "p50_ms": 1.61, "events": []},
        {"key": "T=300", "first_vs_p50": 2.1, "p50_ms": 2.3, "events": [{"kind": "recompile"}]},
    ]
    content = summary_content(view)
    text = content.plain
    assert "1st÷p50" in text and "T=200" in text and "21.30×" in text
    recompiled = next(line for line in text.splitlines() if "T=300" in line)
    assert " R " in recompiled + " "
    assert any(span.style == "$warning" for span in content.spans), "the R is a warning"


def test_a_record_of_changing_shapes_shows_them_and_the_idle_probe(opened: SharedApp) -> None:
    from tests.tui_support import screen_text

    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        app.viewer.show(app.runs[1])  # SHAPES
        await pilot.pause()
        text = screen_text(app)
        assert "1st÷p50" in text and "T=4" in text and "T=8" in text
        assert "shape" in text
        assert "after 0.05 s" in text, "the idle probe against the steady p50"

    opened.run(scenario, size=(120, 40))
