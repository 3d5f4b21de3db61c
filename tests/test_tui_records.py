"""The TUI over checked-in records of real runs: no child process, deterministic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Log, TextArea

from tests.tui_support import run, screen_text, settle
from warmscope.tui.app import build_app
from warmscope.tui.event_screen import EventDetailScreen
from warmscope.tui.events_pane import EventsPane
from warmscope.tui.help_screen import HelpScreen
from warmscope.tui.history_screen import HistoryScreen
from warmscope.tui.iteration_table import IterationTable
from warmscope.tui.run_header import RunHeader

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "speech-script.jsonl"
NO_PROFILING = DATA / "speech-no-profiling.jsonl"
FAILED = DATA / "failed-at-3.jsonl"


def test_open_shows_the_first_record_lists_all_and_starts_nothing() -> None:
    app = build_app(records=[SCRIPT, NO_PROFILING])

    async def scenario(pilot: Pilot) -> None:
        assert [e.source for e in app.runs] == ["record", "record"]
        assert app.viewed is app.runs[0]
        assert app.live is None and all(e.session is None for e in app.runs)
        header = app.screen.query_one(RunHeader).plain
        assert "sample:speech" in header and "speech-script.jsonl" in header
        table = app.screen.query_one(IterationTable)
        assert len(table.rows) == 60 and table.rows[0][0] == 0  # a record opens at its start
        summary = app.runs[0].view.summary
        assert summary is not None and summary.steady_from is not None
        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        assert app.screen.query_one("DataTable").row_count == 2
        await pilot.press("down", "enter")
        assert app.viewed is app.runs[1]
        assert "speech-no-profiling.jsonl" in app.screen.query_one(RunHeader).plain

    run(app, scenario)


def test_an_event_opens_with_its_full_text() -> None:
    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        events = app.screen.query_one(EventsPane)
        titles = [e.title for e in events.rows]
        events.focus()
        await pilot.press("end")
        optimized = titles.index("Optimized Graph")
        events.cursor = optimized
        await pilot.press("enter")
        assert isinstance(app.screen, EventDetailScreen)
        text = app.screen.query_one(TextArea).text
        assert "Optimized Graph" in text and "graph(" in text
        await pilot.press("escape")
        table = app.screen.query_one(IterationTable)
        table.focus()
        await pilot.press("home", "enter", "t")  # iteration 0, all its text: the profiling run
        assert isinstance(app.screen, EventDetailScreen)
        assert "Profiled Graph" in app.screen.query_one(TextArea).text

    run(app, scenario)


def test_help_lists_every_run_key_and_q_closes_it_then_quits() -> None:
    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for word in (
            "start a new run",
            "stop the run",
            "kill the run",
            "Compare",
            "Export",
            "Quit",
        ):
            assert word in text
        await pilot.press("q")  # closes the help, as Esc does: q quits from the main screen only
        await pilot.pause()
        assert app.screen is app.main and app.is_running
        await pilot.press("q")  # nothing is running: no question
        await pilot.pause()
        assert app.return_code == 0

    run(app, scenario)


def test_a_failed_record_shows_its_status_and_why() -> None:
    app = build_app(records=[FAILED])

    async def scenario(pilot: Pilot) -> None:
        header = app.screen.query_one(RunHeader).plain
        assert "failed" in header and "mat1 and mat2" in header
        log = app.screen.query_one("#stderr", Log)
        assert any("RuntimeError: mat1" in line for line in log.lines)
        assert app.screen.query_one("TabbedContent").active == "tab-stderr"
        assert len(app.screen.query_one(IterationTable).rows) == 3  # what was measured

    run(app, scenario)


def test_palette_offers_every_action() -> None:
    app = build_app(records=[SCRIPT, NO_PROFILING])

    async def scenario(pilot: Pilot) -> None:
        titles = {c.title for c in app.get_system_commands(app.screen)}
        for title in ("Run", "Stop", "Kill", "Settings", "History", "Compare", "Export", "Help"):
            assert title in titles
        assert "Next run: preset no-profiling" in titles

    run(app, scenario)


def test_palette_runs_the_main_screens_own_actions() -> None:
    """A main-screen key picked in the palette acts on the main screen, as the key does."""
    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        commands = {c.title: c for c in app.get_system_commands(app.main)}
        table = app.main.query_one(IterationTable)
        assert not table.slowest_first
        await commands["Slowest first"].callback()  # as the palette runs it: awaited
        await pilot.pause()
        assert table.slowest_first
        assert "Slowest first" not in {c.title for c in app.get_system_commands(HelpScreen())}

    run(app, scenario)


def test_export_of_a_record_writes_four_files(tmp_path: Path) -> None:
    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("x")
        app.screen.query_one("#export-dir").value = str(tmp_path / "out")  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
        names = sorted(p.name for p in (tmp_path / "out").iterdir())
        assert names == [
            "speech-script.csv",
            "speech-script.json",
            "speech-script.md",
            "speech-script.report.md",
        ]
        assert "| first iteration |" in (tmp_path / "out" / "speech-script.md").read_text()
        assert "## Reproduce" in (tmp_path / "out" / "speech-script.report.md").read_text()

    run(app, scenario)


def test_no_color_draws_in_greys_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        assert app.no_color
        svg = app.export_screenshot()
        colours = set(re.findall(r"#([0-9a-fA-F]{6})\b", svg))
        colours -= {"ff5f57", "febc2e", "28c840"}  # the picture's window buttons, not the app
        assert colours
        for hex6 in colours:
            r, g, b = (int(hex6[i : i + 2], 16) for i in (0, 2, 4))
            assert max(r, g, b) - min(r, g, b) <= 4, hex6

    run(app, scenario)


def test_usage_pane_shows_gpu_rows_only_with_gpu_samples() -> None:
    from warmscope.core.data.record import read_run
    from warmscope.tui.utilization import UtilizationPane

    plain = read_run(SCRIPT)
    gpu = read_run(SCRIPT)
    gpu.samples = [
        {**s, "gpu_util": 40 + i % 7, "gpu_mem_mb": 812.5, "gpu_power_w": 71.2}
        for i, s in enumerate(gpu.samples)
    ]
    app = build_app(records=[plain, gpu])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("2")
        await pilot.pause()
        pane = app.screen.query_one(UtilizationPane)
        # What the screen shows, not only what the pane would draw: it has room to draw it.
        assert pane.size.height >= 5, "the Usage pane takes the tab's height"
        assert "child CPU" in pane.render_line(0).text
        text = "\n".join(line.plain for line in pane.build_lines(60, 12))
        assert "child CPU" in text and "GPU util" not in text
        assert "no GPU: NVML unavailable" in text  # the recorded reason, in plain words
        app.view_entry(app.runs[1])
        await pilot.pause()
        text = "\n".join(line.plain for line in pane.build_lines(60, 12))
        assert "GPU util" in text and "812 MB" in text and "71.2 W" in text
        assert "no GPU" not in text

    run(app, scenario)


def test_typing_q_in_a_form_field_types_it() -> None:
    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("e")
        field = app.screen.query_one("#field-target")
        field.focus()
        await pilot.press("end", "q")
        assert app.is_running
        assert field.value.endswith("q")  # type: ignore[attr-defined]
        await pilot.press("escape")
        assert app.screen.id == "main"

    run(app, scenario)


def test_chart_keys_switch_scale_and_warmup_view() -> None:
    from warmscope.tui.latency_chart import LatencyChart

    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        chart = app.screen.query_one(LatencyChart)
        assert chart.log_scale and "latency (log)" in str(chart.border_title)
        await pilot.press("l")
        assert not chart.log_scale and "latency (linear)" in str(chart.border_title)
        await pilot.press("z")
        assert chart.zoom and "warm-up view" in str(chart.border_title)
        lines = chart.build_lines(70, 12)
        # a 60-iteration run fits the view, an iteration a column: the axis ends at 60,
        # just after the 60th column
        assert lines[-1].plain.rstrip().endswith("60")
        assert lines[-1].plain.index("60") == 8 + 60
        await pilot.press("z", "l")
        assert chart.log_scale and not chart.zoom

    run(app, scenario)
