"""Figures that say what they are, panes that say why they are empty, presets that keep their
promise, help that explains the figures (the TUI issue's items 3, 6, 13 and 15)."""

from __future__ import annotations

from textual.pilot import Pilot

from tests.fake_session import Moment, end, factory, iterations
from tests.tui_support import run, screen_text, wait_for
from warmscope.core import outcome
from warmscope.core.digest import warmup_rows
from warmscope.core.run import RunData
from warmscope.core.settings import RunSettings
from warmscope.tui.app import build_app
from warmscope.tui.events_pane import EventsPane
from warmscope.tui.help_screen import HelpScreen
from warmscope.tui.run_header import RunHeader
from warmscope.tui.summary_panel import SummaryPanel

SETTINGS = RunSettings(target="sample:trivial", iters=40)


def test_a_preset_keeps_its_promise_after_an_earlier_choice() -> None:
    settings = RunSettings(target="sample:speech")
    settings.set("profiling_executor=off")
    settings.set("intra_op_threads=1")
    settings.apply_preset("torchscript")
    assert settings.knobs["profiling_executor"] is None, "back to torch's default: on"
    assert settings.knobs["intra_op_threads"] == 1, "how the model runs is kept"
    assert "profiling_executor" not in " ".join(settings.command_line())


def test_slow_iterations_are_slower_than_the_steady_p50() -> None:
    data = RunData()
    # A noisy warm-up: iteration 1 is fast, 0 and 2 are slow.
    data.add_iterations(0, [40.0, 1.0, 30.0, 25.0] + [2.0] * 40, [0.0] * 44)
    summary = data.summary()
    assert summary.steady_from == 4
    rows = [r.iteration for r in warmup_rows(data, summary)]
    assert rows == [0, 2, 3], "iteration 1 is faster than p50: not called slow"


def test_the_header_rate_and_the_summary_rate_say_which_is_which() -> None:
    script = [Moment([iterations(0, [30.0, 5.0] + [1.0] * 38)]), Moment([end(outcome.OK, "", 0)])]
    app = build_app(settings=SETTINGS, start=factory(script))

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished, timeout=10)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        header = app.screen.query_one(RunHeader).plain
        assert "it/s overall" in header
        summary = str(app.screen.query_one(SummaryPanel).render())
        assert "steady" in summary and "throughput" not in summary

    run(app, scenario, settled=False)


def test_no_zero_excess_and_an_empty_events_pane_says_why() -> None:
    # A flat run: steady from #0, no excess to show; no events at all.
    script = [Moment([iterations(0, [1.0] * 40)]), Moment([end(outcome.OK, "", 0)])]
    app = build_app(settings=SETTINGS, start=factory(script))

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished, timeout=10)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        summary = str(app.screen.query_one(SummaryPanel).render())
        assert "+0.00" not in summary and "+-" not in summary
        events = app.screen.query_one(EventsPane)
        assert "no events" in events.render_line(1).text

    run(app, scenario, settled=False)


def test_help_explains_the_figures() -> None:
    app = build_app(settings=None, records=[])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for word in ("What the figures mean", "excess", "CV", "ev", "p50", "it/s now"):
            assert word in text

    run(app, scenario, (120, 60), settled=False)
