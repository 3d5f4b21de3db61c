"""Figures that say what they are, panes that say why they are empty, presets that keep their
promise, help that explains the figures (the TUI issue's items 3, 6, 13 and 15)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from textual.pilot import Pilot

from tests.fake_session import Moment, end, factory, iterations
from tests.tui_support import SharedApp, run, screen_text, wait_for
from warmscope.core.child import outcome
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.digest import warmup_rows
from warmscope.tui.app import build_app
from warmscope.tui.screens.help_screen import HelpScreen
from warmscope.tui.widgets.run.events_pane import EventsPane
from warmscope.tui.widgets.run.run_header import RunHeader
from warmscope.tui.widgets.run.summary_panel import SummaryPanel

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


@dataclass
class Shown:
    header: str
    summary: str
    events_first_line: str


@pytest.fixture(scope="module")
def two_runs() -> list[Shown]:
    """One app, two runs to their end (``r`` starts the second): a warm-up, then a flat run
    with no events; what the header, the summary and the events pane show of each."""
    warm = [Moment([iterations(0, [30.0, 5.0] + [1.0] * 38)]), Moment([end(outcome.OK, "", 0)])]
    flat = [Moment([iterations(0, [1.0] * 40)]), Moment([end(outcome.OK, "", 0)])]
    scripts = iter([warm, flat])

    def start(settings, record_path, command):  # type: ignore[no-untyped-def]
        return factory(next(scripts))(settings, record_path, command)

    app = build_app(settings=SETTINGS, start=start)
    shown: list[Shown] = []

    async def scenario(pilot: Pilot) -> None:
        for n in (1, 2):
            if n == 2:
                await pilot.press("r")
            await wait_for(
                pilot, lambda n=n: len(app.runs) == n and app.runs[-1].view.finished, timeout=10
            )
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            assert app.state.viewed is app.runs[-1], "the new run is shown"
            events = app.screen.query_one(EventsPane)
            shown.append(
                Shown(
                    app.screen.query_one(RunHeader).plain,
                    str(app.screen.query_one(SummaryPanel).render()),
                    events.render_line(1).text,
                )
            )

    run(app, scenario, settled=False)
    return shown


def test_the_header_rate_and_the_summary_rate_say_which_is_which(two_runs: list[Shown]) -> None:
    warm = two_runs[0]
    assert "it/s overall" in warm.header
    assert "steady" in warm.summary and "throughput" not in warm.summary


def test_no_zero_excess_and_an_empty_events_pane_says_why(two_runs: list[Shown]) -> None:
    # A flat run: steady from #0, no excess to show; no events at all.
    flat = two_runs[1]
    assert "+0.00" not in flat.summary and "+-" not in flat.summary
    assert "no events" in flat.events_first_line


@pytest.fixture(scope="module")
def empty() -> Iterator[SharedApp]:
    """``warmscope`` with nothing to run or show yet: one app for the help and footer tests."""
    with SharedApp(build_app(settings=None, records=[])) as shared:
        yield shared


def test_help_explains_the_figures(empty: SharedApp) -> None:
    app = empty.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for word in ("What the figures mean", "excess", "CV", "ev", "p50", "it/s now"):
            assert word in text

    empty.run(scenario, (120, 60))


def test_a_steady_difference_inside_both_runs_noise_is_not_called() -> None:
    from warmscope.core.data.stats import summarize
    from warmscope.core.output.comparison import metric_rows

    quiet = summarize([10.0] + [1.00, 1.01, 0.99] * 30)
    noisy = summarize([10.0] + [1.0, 1.3, 0.8, 1.1] * 25)
    other = summarize([10.0] + [2.0, 2.02, 1.98] * 30)
    rows = {r.metric: r for r in metric_rows(quiet, noisy)}
    assert rows["p50_ms"].within_noise, "5% apart, with a CV near 20%"
    assert rows["p50_ms"].ratio_text.endswith("× within noise")
    assert not rows["first_ms"].within_noise, "one sample a process: no noise to speak of"
    far = {r.metric: r for r in metric_rows(quiet, other)}
    assert not far["p50_ms"].within_noise and far["p50_ms"].ratio_text == "2.00× worse"
    # The same both ways: 0.4x the rate is as far apart as 2.4x the time per iteration, more
    # than a CV of 117% (a ratio's distance below 1 must not be read as at most 100%).
    wild = summarize([10.0] + [1.0, 1.0, 1.0, 1.0, 8.0] * 20)
    assert wild.cv is not None and 1.1 < wild.cv < 1.3
    rows = {r.metric: r for r in metric_rows(quiet, wild)}
    assert rows["throughput_per_s"].ratio < 0.45
    assert not rows["throughput_per_s"].within_noise
    assert rows["throughput_per_s"].ratio_text.endswith("worse")


def test_every_iteration_is_reachable_home_and_go_to() -> None:
    from warmscope.tui.screens.goto_screen import GotoScreen
    from warmscope.tui.widgets.run.iteration_table import IterationTable

    many = [Moment([iterations(i, [1.0] * 10_000)]) for i in range(0, 300_000, 10_000)]
    app = build_app(settings=SETTINGS, start=factory([*many, Moment([end(outcome.OK, "", 0)])]))

    async def scenario(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.finished, timeout=20)
        await pilot.pause()
        table = app.screen.query_one(IterationTable)
        table.focus()
        await pilot.press("home")
        assert table.rows[table.cursor][0] == 0, "iteration 0 after 300,000 iterations"
        await pilot.press("colon")
        assert isinstance(app.screen, GotoScreen)
        await pilot.press(*"abc", "enter")
        assert isinstance(app.screen, GotoScreen), "refused: not a number"
        await pilot.press("backspace", "backspace", "backspace", *"123456", "enter")
        await pilot.pause()
        assert app.screen is app.main and table.rows[table.cursor][0] == 123_456

    run(app, scenario, settled=False)


def test_the_footer_is_whole_after_a_resize(empty: SharedApp) -> None:
    from textual.widgets import Footer

    app = empty.app

    async def scenario(pilot: Pilot) -> None:
        footer = app.screen.query_one(Footer)
        assert footer.show_command_palette
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert not footer.show_command_palette
        text = screen_text(app)
        assert "Help" in text and "palette" not in text, "nothing cut at 80 columns"
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.pause()
        assert "palette" in screen_text(app)

    empty.run(scenario, (100, 30))


def test_compare_names_the_mode_as_each_run_ran() -> None:
    """A preset that names the mode a sample runs in anyway is no difference (it showed
    'mode default → script')."""
    from warmscope.core.child.knobs import default_values
    from warmscope.core.output.settings_diff import run_diff

    def run_of(mode_knob: str | None, mode: str, preset: str | None = None) -> RunData:
        knobs = default_values()
        knobs["mode"] = mode_knob
        return RunData(settings=RunSettings(knobs=knobs, preset=preset), mode=mode)

    same = run_diff(run_of(None, "script"), run_of("script", "script", "no-profiling"))
    assert [c.name for c in same] == ["preset"]
    other = run_diff(run_of(None, "script"), run_of("eager", "eager", "eager"))
    assert ("mode", "script", "eager") in [(c.name, c.a, c.b) for c in other]
