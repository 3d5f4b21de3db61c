"""Compare as people use it: several runs against a baseline, live ones followed to their end,
the differences in words, the comparison exported, everything readable at 80x24."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.style import Style
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from tests.fake_session import Moment, end, factory, iterations
from tests.tui_support import SharedApp, run, screen_text, wait_for
from warmscope.core.child import outcome
from warmscope.core.data.record import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.stats import summarize
from warmscope.core.output.comparison import comparison, metric_rows
from warmscope.core.output.export import comparison_markdown
from warmscope.tui import glyphs
from warmscope.tui.app import WarmscopeApp, build_app
from warmscope.tui.drawing.chart import AXIS_W
from warmscope.tui.screens.compare_screen import CompareScreen
from warmscope.tui.screens.export_screen import ExportScreen
from warmscope.tui.screens.history_screen import HistoryScreen
from warmscope.tui.widgets.overlay_chart import OverlayChart

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "speech-script.jsonl"
NO_PROFILING = DATA / "speech-no-profiling.jsonl"
FAILED = DATA / "failed-at-3.jsonl"
QUANTIZED = DATA / "quantized-profiled.jsonl"


@pytest.fixture(scope="module")
def opened() -> Iterator[SharedApp]:
    """``warmscope open`` on three records, one app for the tests that compare them (each
    starts from the first frame's screen: ``SharedApp``)."""
    with SharedApp(build_app(records=[SCRIPT, NO_PROFILING, FAILED])) as shared:
        yield shared


@pytest.fixture(scope="module")
def in_ascii() -> Iterator[SharedApp]:
    """The same three records, ``--ascii``, at 80x24."""
    with SharedApp(
        build_app(records=[SCRIPT, NO_PROFILING, FAILED], ascii=True), (80, 24)
    ) as shared:
        yield shared


def test_a_difference_reads_in_words_and_noise_is_no_difference() -> None:
    quiet = summarize([10.0] + [1.00, 1.01, 0.99] * 30)
    slower = summarize([20.0] + [2.0, 2.02, 1.98] * 30)
    noisy = summarize([10.0] + [1.0, 1.3, 0.8, 1.1] * 25)
    rows = {r.metric: r for r in metric_rows(quiet, slower)}
    assert rows["p50_ms"].verdict == "worse"
    assert rows["first_ms"].verdict == "1 process each", "one process each cannot tell it"
    assert rows["first_ms"].better is None
    assert rows["throughput_per_s"].verdict == "worse", "fewer iterations a second"
    assert rows["cv"].verdict == "", "a spread is neither better nor worse"
    back = {r.metric: r for r in metric_rows(slower, quiet)}
    assert back["p50_ms"].verdict == "better" and back["throughput_per_s"].better
    within = {r.metric: r for r in metric_rows(quiet, noisy)}
    assert within["p50_ms"].verdict == "within noise" and within["p50_ms"].better is None


def test_the_comparison_document_and_its_markdown() -> None:
    runs = [read_run(p) for p in (SCRIPT, NO_PROFILING, FAILED)]
    doc = comparison(runs, ["a", "b", "c"])
    assert doc["format"] == "warmscope-comparison" and [r["name"] for r in doc["runs"]] == [
        "a",
        "b",
        "c",
    ]
    p50 = next(m for m in doc["metrics"] if m["metric"] == "p50_ms")
    assert p50["ratios"][0] is None and p50["verdicts"] == ["", "within noise", "better"]
    settings = {s["name"]: s["values"] for s in doc["settings"]}
    assert settings["profiling_executor"] == ["default", "off", "default"]
    assert settings["mode"] == ["script", "script", "eager"]
    md = comparison_markdown(json.loads(json.dumps(doc)))
    assert "| p50 | 4.62 ms | 4.66 ms (1.01×, within noise) |" in md
    assert "| profiling_executor | `default` | `off` | `default` |" in md


def test_three_runs_each_against_a_then_two_again(opened: SharedApp) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, CompareScreen) and len(screen.chosen) == 2
        await pilot.press("plus")
        await pilot.pause()
        assert [e.number for e in screen.chosen] == [1, 2, 3]
        table = screen.query_one("#compare-metrics", DataTable)
        assert len(table.columns) == 1 + 3 + 2, "metric, a column a run, a ratio for B and C"
        text = screen_text(app)
        assert "C #3" in text and "C/A" in text and "failed" in text
        assert "within noise" in text and "better" in text
        await pilot.press("w")
        assert [e.number for e in screen.chosen] == [2, 3, 1], "B became the baseline"
        await pilot.press("w")
        assert [e.number for e in screen.chosen] == [3, 1, 2], "then C"
        await pilot.press("minus")
        await pilot.pause()
        assert [e.number for e in screen.chosen] == [3, 1]
        assert len(screen.query_one("#compare-metrics", DataTable).columns) == 4

    opened.run(scenario, (100, 30))


def test_marked_runs_in_history_are_compared(opened: SharedApp) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        app.screen.query_one(DataTable).move_cursor(row=2)
        await pilot.press("space")  # #3 first: the baseline
        app.screen.query_one(DataTable).move_cursor(row=0)
        await pilot.press("space", "space", "c")  # a mark moves down a row, as in htop
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen)
        assert [e.number for e in app.screen.chosen] == [3, 1, 2]

    opened.run(scenario, (100, 30))


def test_x_exports_the_comparison_as_json_and_markdown(opened: SharedApp, tmp_path: Path) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("c", "x")
        assert isinstance(app.screen, ExportScreen)
        assert "warmscope-compare-1-2.json" in screen_text(app)
        app.screen.query_one("#export-dir", Input).value = str(tmp_path)
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(list(tmp_path.iterdir())) == 2, timeout=10)
        assert isinstance(app.screen, CompareScreen), "back where the export started"

    opened.run(scenario, (100, 30))
    doc = json.loads((tmp_path / "warmscope-compare-1-2.json").read_text())
    assert [r["record"] for r in doc["runs"]] == [str(SCRIPT), str(NO_PROFILING)]
    assert "within noise" in (tmp_path / "warmscope-compare-1-2.md").read_text()


def test_compare_follows_a_third_live_run_to_its_end() -> None:
    quick = [Moment([iterations(0, [20.0] + [1.0] * 19)]), Moment([end(outcome.OK, "", 0)])]
    # Long enough to be still running when compare opens, even on a loaded machine.
    slow = [Moment([iterations(0, [30.0] + [1.0] * 9)])] + [Moment() for _ in range(60)]
    slow.append(Moment([iterations(10, [1.0] * 30), end(outcome.OK, "", 0)]))
    scripts = iter([quick, quick, slow])

    def start(settings, record_path, command):  # type: ignore[no-untyped-def]
        return factory(next(scripts))(settings, record_path, command)

    app = build_app(settings=RunSettings(target="sample:trivial", iters=40), start=start)

    async def scenario(pilot: Pilot) -> None:
        for n in (1, 2):
            await wait_for(pilot, lambda n=n: len(app.runs) == n and app.runs[-1].view.finished)
            await pilot.press("r")
        await wait_for(pilot, lambda: len(app.runs) == 3 and app.runs[2].view.count)
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.chosen == app.runs[1:], "the newest against the one before it"
        await pilot.press("plus")
        await pilot.pause()
        assert screen.chosen == [app.runs[1], app.runs[2], app.runs[0]]
        assert "running" in screen_text(app)
        await wait_for(pilot, lambda: app.runs[2].view.finished, timeout=30)
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "running" not in text and "40" in text, "followed to its end"

    run(app, scenario, (120, 40), settled=False)


def test_at_80x24_nothing_that_matters_is_cut(opened: SharedApp) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("c")
        text = screen_text(app)
        assert "#2 preset no-profiling" in text, "the settings that set B apart, not its target"
        assert "within noise" in text and "can't tell" in text and "Export" in text
        assert "better" not in text, "one process each: no first-iteration verdict"
        await pilot.press("escape", "h")
        text = screen_text(app)
        for column in ("status", "iters", "first", "p50", "failed", "50.7 µs"):
            assert column in text, column

    opened.run(scenario, (80, 24))


def test_ascii_compare_screen_is_ascii(in_ascii: SharedApp) -> None:
    app = in_ascii.app

    async def scenario(pilot: Pilot) -> None:
        for keys in ((), ("c",), ("plus",)):
            await pilot.press(*keys)
            await pilot.pause()
            text = screen_text(app)
            assert text.isascii(), sorted({c for c in text if not c.isascii()})

    in_ascii.run(scenario, (80, 24))


def test_cli_compares_three_records_against_the_first(capsys) -> None:  # type: ignore[no-untyped-def]
    from warmscope.cli import main

    assert main(["compare", str(SCRIPT), str(NO_PROFILING), str(FAILED)]) == 0
    out = capsys.readouterr().out
    assert all(p.name in out for p in (SCRIPT, NO_PROFILING, FAILED))
    assert "ratios: each run against the first" in out
    first = next(line for line in out.splitlines() if line.startswith("first_ms"))
    assert "0.26× 1 process each" in first, "a first iteration of one process each is untold"
    assert "note: 1 process each" in out and "--repeat" in out, "and how to tell it"


def _overlay_cells(app: WarmscopeApp) -> list[tuple[str, Style]]:
    """The overlay's plotted cells (right of its value axis, above its iteration axis)."""
    chart = app.screen.query_one(OverlayChart)
    cells = []
    for y in range(chart.size.height - 1):
        x = 0
        for segment in chart.render_line(y):
            for ch in segment.text:
                if x >= AXIS_W and ch != " ":
                    cells.append((ch, segment.style or Style()))
                x += 1
    return cells


def _three_runs_overlaid(
    app: WarmscopeApp, check: Callable[[str], None], shared: SharedApp | None = None
) -> None:
    """``c`` and ``+`` on the first of three runs, then ``check`` the legend at 80x24 (in the
    app ``shared`` runs, else in ``app`` of its own)."""

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("c", "plus")
        await pilot.pause()
        chart = app.screen.query_one(OverlayChart)
        assert len(chart.series) == 3, "every compared run is drawn"
        legend = screen_text(app)
        assert re.search(r"iterations 0.59 ", legend), "the longest run's: C failed at 3"
        check(legend)

    if shared is None:
        run(app, scenario, (80, 24))
    else:
        shared.run(scenario, (80, 24))


def test_three_runs_are_three_series_told_apart_by_glyph_under_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = build_app(records=[SCRIPT, NO_PROFILING, FAILED])
    g = glyphs.current()

    def check(text: str) -> None:
        plotted = {ch for ch, _ in _overlay_cells(app)}
        assert {g.a, g.b, g.runs[2]} <= plotted <= {g.a, g.b, g.runs[2], g.both}, plotted
        for item in (f"{g.a} A", f"{g.b} B", f"{g.runs[2]} C", f"{g.both} shared"):
            assert item in text, f"the legend names {item!r} in full at 80x24"

    _three_runs_overlaid(app, check)


def test_three_runs_are_three_series_in_three_colours() -> None:
    app = build_app(records=[SCRIPT, QUANTIZED, FAILED])  # curves apart: a colour each shows

    def check(text: str) -> None:
        cells = _overlay_cells(app)
        assert all(0x2800 <= ord(ch) <= 0x28FF for ch, _ in cells), "braille curves"
        colours = {style.color for _, style in cells}
        chart = app.screen.query_one(OverlayChart)
        runs = [chart.get_component_rich_style(f"overlay-chart--{r}").color for r in "abc"]
        assert len(set(runs)) == 3 and set(runs) <= colours, (runs, colours)
        assert "A·B·C·shared" in text.replace(" ", ""), "each letter in its colour"

    _three_runs_overlaid(app, check)


def test_three_runs_in_ascii_are_ascii_glyphs(in_ascii: SharedApp) -> None:
    app = in_ascii.app

    def check(text: str) -> None:
        assert text.isascii(), sorted({c for c in text if not c.isascii()})
        plotted = {ch for ch, _ in _overlay_cells(app)}
        assert {"o", "+", "x"} <= plotted <= {"o", "+", "x", "*"}, plotted
        assert "x C" in text

    _three_runs_overlaid(app, check, in_ascii)


def test_the_context_that_differs_is_shown_beside_the_figures(opened: SharedApp) -> None:
    """Two compile runs, one with a cold cache, one with the user's full one: the compare
    screen says so in its settings pane, and calls no first iteration better."""
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.pause()
        app.runs[0].data.env["compile_cache"] = {"mode": "cold", "had_entries": False}
        app.runs[1].data.env["compile_cache"] = {"mode": "user", "had_entries": True}
        try:
            await pilot.press("c")
            await pilot.pause()
            pane = str(app.screen.query_one("#compare-settings-text").render())
            assert "context that differs" in pane and "compile cache" in pane
            assert "cold (empty) → user (had entries)" in pane
            assert "1 process each" in pane, "what the untold verdicts mean"
        finally:  # the records as they were read, for the tests after this one
            for entry in app.runs[:2]:
                del entry.data.env["compile_cache"]

    opened.run(scenario, (120, 40))
