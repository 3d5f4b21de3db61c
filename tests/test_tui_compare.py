"""Compare as people use it: several runs against a baseline, live ones followed to their end,
the differences in words, the comparison exported, everything readable at 80x24."""

from __future__ import annotations

import json
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from tests.fake_session import Moment, end, factory, iterations
from tests.tui_support import run, screen_text, wait_for
from warmscope.core import outcome
from warmscope.core.digest import comparison, metric_rows
from warmscope.core.export import comparison_markdown
from warmscope.core.record import read_run
from warmscope.core.settings import RunSettings
from warmscope.core.stats import summarize
from warmscope.tui.app import build_app
from warmscope.tui.compare_screen import CompareScreen
from warmscope.tui.export_screen import ExportScreen
from warmscope.tui.history_screen import HistoryScreen

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "speech-script.jsonl"
NO_PROFILING = DATA / "speech-no-profiling.jsonl"
FAILED = DATA / "failed-at-3.jsonl"


def test_a_difference_reads_in_words_and_noise_is_no_difference() -> None:
    quiet = summarize([10.0] + [1.00, 1.01, 0.99] * 30)
    slower = summarize([20.0] + [2.0, 2.02, 1.98] * 30)
    noisy = summarize([10.0] + [1.0, 1.3, 0.8, 1.1] * 25)
    rows = {r.metric: r for r in metric_rows(quiet, slower)}
    assert rows["p50_ms"].verdict == "worse" and rows["first_ms"].verdict == "worse"
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


def test_three_runs_each_against_a_then_two_again() -> None:
    app = build_app(records=[SCRIPT, NO_PROFILING, FAILED])

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

    run(app, scenario, (100, 30))


def test_marked_runs_in_history_are_compared() -> None:
    app = build_app(records=[SCRIPT, NO_PROFILING, FAILED])

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

    run(app, scenario, (100, 30))


def test_x_exports_the_comparison_as_json_and_markdown(tmp_path: Path) -> None:
    app = build_app(records=[SCRIPT, NO_PROFILING])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("c", "x")
        assert isinstance(app.screen, ExportScreen)
        assert "warmscope-compare-1-2.json" in screen_text(app)
        app.screen.query_one("#export-dir", Input).value = str(tmp_path)
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(list(tmp_path.iterdir())) == 2, timeout=10)
        assert isinstance(app.screen, CompareScreen), "back where the export started"

    run(app, scenario, (100, 30))
    doc = json.loads((tmp_path / "warmscope-compare-1-2.json").read_text())
    assert [r["record"] for r in doc["runs"]] == [str(SCRIPT), str(NO_PROFILING)]
    assert "within noise" in (tmp_path / "warmscope-compare-1-2.md").read_text()


def test_compare_follows_a_third_live_run_to_its_end() -> None:
    quick = [Moment([iterations(0, [20.0] + [1.0] * 19)]), Moment([end(outcome.OK, "", 0)])]
    slow = [Moment([iterations(0, [30.0] + [1.0] * 9)])] + [Moment() for _ in range(15)]
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
        await wait_for(pilot, lambda: app.runs[2].view.finished, timeout=10)
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "running" not in text and "40" in text, "followed to its end"

    run(app, scenario, (120, 40), settled=False)


def test_at_80x24_nothing_that_matters_is_cut() -> None:
    app = build_app(records=[SCRIPT, NO_PROFILING, FAILED])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("c")
        text = screen_text(app)
        assert "#2 preset no-profiling" in text, "the settings that set B apart, not its target"
        assert "within noise" in text and "0.26× better" in text and "Export" in text
        await pilot.press("escape", "h")
        text = screen_text(app)
        for column in ("status", "iters", "first", "p50", "failed", "50.7 µs"):
            assert column in text, column

    run(app, scenario, (80, 24))


def test_ascii_compare_screen_is_ascii() -> None:
    app = build_app(records=[SCRIPT, NO_PROFILING], ascii=True)

    async def scenario(pilot: Pilot) -> None:
        for keys in ((), ("c",), ("plus",)):
            await pilot.press(*keys)
            await pilot.pause()
            text = screen_text(app)
            assert text.isascii(), sorted({c for c in text if not c.isascii()})

    run(app, scenario, (80, 24))


def test_cli_compares_three_records_against_the_first(capsys) -> None:  # type: ignore[no-untyped-def]
    from warmscope.core.cli import main

    assert main(["compare", str(SCRIPT), str(NO_PROFILING), str(FAILED)]) == 0
    out = capsys.readouterr().out
    assert all(p.name in out for p in (SCRIPT, NO_PROFILING, FAILED))
    assert "ratios: each run against the first" in out
    first = next(line for line in out.splitlines() if line.startswith("first_ms"))
    assert "0.26× better" in first, "the ratio in words, as the TUI and the two-run view say it"
