"""Charts: a stable layout (completed columns never change, the scale holds), event marks that
are neither repeated nor lost, curves told apart without colour, ASCII glyphs, a legend that fits."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from tests.tui_support import run, screen_text
from warmscope.tui import glyphs
from warmscope.tui.app import build_app
from warmscope.tui.drawing.chart import (
    AXIS_W,
    ChartStyles,
    ScaleHold,
    latency_chart,
    overlay_chart,
    overlay_legend,
    sparkline,
    stable_window,
)
from warmscope.tui.drawing.series import LatencySeries
from warmscope.tui.run_view import RunView
from warmscope.tui.widgets.run.latency_chart import LatencyChart, legend

RECORD = Path(__file__).parent / "data" / "speech-script.jsonl"
PROF, OPT, WARN = 3, 4, 2  # profiling run, optimization, warning


@pytest.fixture
def ascii_glyphs() -> Iterator[None]:
    glyphs.set_ascii(True)
    yield
    glyphs.set_ascii(False)


def _column_cells(lines: list[str], x: int) -> list[str]:
    """The cells of plot column ``x`` (marks row to axis) in the lines of a latency chart."""
    return [line[AXIS_W + x] for line in lines]


def test_completed_columns_never_change_while_the_run_grows() -> None:
    series, hold = LatencySeries(), ScaleHold()
    series.extend([90.0, 40.0, 4.0])  # the range the run then stays in
    series.mark(0, PROF)
    drawn = [[line.plain for line in latency_chart(series, 60, 14, hold=hold)]]
    for tick in range(12):  # a few iterations a tick, latency wandering a little
        series.extend([4.0 + 0.3 * ((tick + k) % 4) for k in range(3)])
        drawn.append([line.plain for line in latency_chart(series, 60, 14, hold=hold)])
    assert series.bucket_size(60 - AXIS_W) == 1, "no relayout in this test"
    for before, after, count in zip(drawn, drawn[1:], range(3, 100, 3), strict=False):
        for x in range(count - 1):  # the newest column before the tick may still fill
            assert _column_cells(before, x) == _column_cells(after, x), f"column {x} changed"


def test_columns_hold_fixed_buckets_that_only_ever_double() -> None:
    series = LatencySeries()
    series.extend([1.0] * 100)
    size, cols = series.buckets(40)
    assert size == 4 and len(cols) == 25
    assert [(c.first, c.last) for c in cols[:2]] == [(0, 3), (4, 7)]
    series.extend([1.0] * 61)  # 161 > 40 * 4
    size, cols = series.buckets(40)
    assert size == 8 and (cols[-1].first, cols[-1].last) == (160, 160)


def test_the_scale_holds_a_new_maximum_a_little_above_the_last() -> None:
    for log in (True, False):
        hold = ScaleHold()
        first = hold.fit(2.0, 50.0, log)
        assert hold.fit(2.0, 52.0, log) == first, "a slightly higher maximum: no rescale"
        assert hold.fit(1.9, 52.0, log)[1] == first[1]
        assert hold.fit(2.0, 500.0, log)[1] > first[1], "well outside: rescale"
    series, hold = LatencySeries(), ScaleHold()
    series.extend([50.0] + [4.0] * 20)
    before = [line.plain for line in latency_chart(series, 60, 12, hold=hold)]
    series.extend([53.0])
    after = [line.plain for line in latency_chart(series, 60, 12, hold=hold)]
    changed = {
        x for x in range(60) if any(a[x] != b[x] for a, b in zip(before[:-1], after, strict=False))
    }
    assert changed == {AXIS_W + 21}, "only the new column is drawn: the labels stay"
    axis_changed = {x for x in range(60) if before[-1][x] != after[-1][x]}
    assert axis_changed == {AXIS_W + 21, AXIS_W + 22, AXIS_W + 23}, "and the end label, 21 → 22"


def test_a_chart_widget_repaints_only_its_newest_columns() -> None:
    class ChartApp(App[None]):
        def compose(self) -> ComposeResult:
            yield LatencyChart(id="chart")

    async def scenario() -> None:
        app = ChartApp()
        async with app.run_test(size=(100, 20)) as pilot:
            chart = app.query_one(LatencyChart)
            view = RunView()
            view.series.extend([80.0, 30.0] + [5.0] * 20)
            chart.show_view(view)
            await pilot.pause()
            chart.show_view(view)  # drawn once at this size: now it diffs
            assert chart.repainted == []
            for tick in range(5):
                newest = view.series.count - 1
                view.series.extend([5.0 + tick, 5.5])
                chart.show_view(view)
                assert chart.repainted, "the new columns are drawn"
                assert all(r.x >= AXIS_W + newest for r in chart.repainted), chart.repainted
                # and the end label just after them, which moves with the run
                end = AXIS_W + view.series.count + len(str(view.series.count))
                assert all(r.right <= end for r in chart.repainted), chart.repainted
                await pilot.pause()

    asyncio.run(scenario())


def test_a_mark_is_drawn_once_where_its_iteration_is_and_never_lost_in_a_merge() -> None:
    series = LatencySeries()
    series.extend([80.0, 40.0, 12.0, 5.0])
    series.mark(0, PROF)
    series.mark(1, OPT)
    row = latency_chart(series, 60, 10)[0].plain[AXIS_W:]
    assert row.count("P") == 1 and row.count("O") == 1, row
    assert row.index("P") == 0 and row.index("O") == 1, "at the columns of their iterations"
    series.extend([5.0] * 2000)  # many iterations a column: 0 and 1 share one
    row = latency_chart(series, 60, 10)[0].plain[AXIS_W:]
    assert row.count("P") == 1 and row.count("O") == 1, f"both kept after merging: {row!r}"
    assert series.marks_seen() == {PROF, OPT}


def test_overlay_curves_told_apart_by_glyph_without_colour() -> None:
    a, b = LatencySeries(), LatencySeries()
    a.extend([50.0, 20.0, 9.0] + [3.0] * 60)
    b.extend([9.0] + [6.0] * 80)
    plot = "".join(line.plain[AXIS_W:] for line in overlay_chart([a, b], 70, 12, shapes=True)[:-1])
    used = set(plot) - {" "}
    g = glyphs.current()
    assert {g.a, g.b} <= used and used <= {g.a, g.b, g.both}, used
    assert f"{g.a} A" in overlay_legend(True) and f"{g.b} B" in overlay_legend(True)
    colour = "".join(line.plain for line in overlay_chart([a, b], 70, 12)[:-1])
    assert any(0x2800 <= ord(ch) <= 0x28FF for ch in colour), "braille when colour tells them"


def test_six_runs_overlaid_at_once_each_with_its_glyph_and_colour() -> None:
    runs = []
    for level in (1.0, 2.0, 4.0, 8.0, 16.0, 32.0):  # apart on a log axis: a row band each
        series = LatencySeries()
        series.extend([level * 3] + [level] * 60)
        runs.append(series)
    g = glyphs.current()
    lines = overlay_chart(runs, 70, 20, shapes=True, steady=[1, 1, None, 30, None, 59])
    plot = "".join(line.plain[AXIS_W:] for line in lines[:-1])
    assert set(plot) - {" "} <= {*g.runs, g.both} and set(g.runs) <= set(plot), set(plot)
    assert len(set(g.runs)) == 6, "a glyph a run"
    axis = lines[-1].plain
    assert g.both in axis and "D" in axis and "F" in axis, "A and B share a steady point"
    styles = ChartStyles()
    colours = {
        style.color
        for line in overlay_chart(runs, 70, 20, styles=styles)
        for _, style in line
        if style
    }
    assert {s.color for s in styles.runs} <= colours, "a colour a run"
    assert f"{g.runs[5]} F" in overlay_legend(
        True, 6
    ) and "A/B/C/D/E/F on the axis" in overlay_legend(True, 6)
    for room in (60, 30):
        assert len(overlay_legend(True, 6, room)) <= room, overlay_legend(True, 6, room)
    assert overlay_legend(True, 6, 30) == " ".join(
        [
            *(glyph + letter for glyph, letter in zip(g.runs, "ABCDEF", strict=True)),
            g.both + "shared",
        ]
    )
    assert overlay_legend(False, 3, 30) == "A · B · C · shared", "colours tell them apart"


def test_ascii_is_asked_for_or_follows_the_terminal() -> None:
    assert glyphs.ascii_wanted("linux", False)
    assert glyphs.ascii_wanted("vt100", False)
    assert glyphs.ascii_wanted("xterm-256color", True)
    assert not glyphs.ascii_wanted("xterm-256color", False)
    assert not glyphs.ascii_wanted(None, False)


@pytest.mark.usefixtures("ascii_glyphs")
def test_ascii_charts_use_no_braille_blocks_or_box_drawing() -> None:
    series = LatencySeries()
    series.extend([80.0, 40.0, 12.0] + [4.0, 4.2, 3.9] * 30)
    series.mark(0, PROF)
    series.mark(5, 1)
    text = [line.plain for line in latency_chart(series, 60, 12, steady_from=3, p50=4.0)]
    other = LatencySeries()
    other.extend([9.0] + [3.1] * 80)
    text += [line.plain for line in overlay_chart([series, other], 60, 10, steady=(30, 10))]
    text += [sparkline([1.0, 5.0, 3.0], 10), overlay_legend(False, 6), legend({PROF, 1}, 80)]
    assert all(line.isascii() for line in text), [line for line in text if not line.isascii()]
    assert "P" in text[0] and "*" in text[0], "the marks"


def test_the_legend_fits_a_narrow_chart() -> None:
    seen = {PROF, OPT, WARN, 1}
    assert "P profiling" in legend(seen, 200)
    for room in (70, 50, 40):
        assert len(legend(seen, room)) <= room
        assert "p50" in legend(seen, room) and "P" in legend(seen, room)

    async def scenario(pilot: Pilot) -> None:
        chart = pilot.app.screen.query_one(LatencyChart)
        assert chart.view is not None and chart.view.series.marks_seen() >= {PROF, OPT}
        shown = str(chart.border_subtitle)
        assert len(shown) <= chart.outer_size.width - 4, shown
        assert "p50" in screen_text(pilot.app), "the legend's end is on screen, not cut"

    run(build_app(records=[RECORD]), scenario, size=(80, 24))


def test_a_sparkline_window_stays_put_until_it_jumps_half_its_width() -> None:
    assert [stable_window(n, 10) for n in (0, 10, 11, 15, 16, 20, 21)] == [0, 0, 5, 5, 10, 10, 15]
    values = [float(v % 7) for v in range(30)]
    before = sparkline(values[stable_window(16, 10) : 16], 10)
    after = sparkline(values[stable_window(19, 10) : 19], 10)
    assert after.startswith(before[:-1]), "the cells drawn stay as they were"


@given(
    st.lists(st.floats(0.01, 500.0), min_size=1, max_size=3000),
    st.lists(st.integers(1, 400), min_size=1, max_size=40),
)
def test_a_whole_run_at_once_draws_as_one_grown_in_batches(
    values: list[float], cuts: list[int]
) -> None:
    """A record's run, taken in one call (its span set at once), gives the buckets that the
    same run gives arriving batch by batch (span doubling as it grows)."""
    whole, grown = LatencySeries(capacity=16, head=8), LatencySeries(capacity=16, head=8)
    whole.extend(values)
    pos = 0
    for cut in cuts * (len(values) // max(1, sum(cuts)) + 1):
        grown.extend(values[pos : pos + cut])
        pos += cut
        if pos >= len(values):
            break
    assert (whole.count, whole.span, whole.lo, whole.hi) == (
        grown.count,
        grown.span,
        grown.lo,
        grown.hi,
    )
    for width in (5, 16, 40):
        for a, b in zip(whole.columns(width), grown.columns(width), strict=True):
            assert (a.first, a.last, a.lo, a.hi) == (b.first, b.last, b.lo, b.hi)
            assert a.mean == pytest.approx(b.mean, rel=1e-9)


@pytest.mark.parametrize("count", [60, 200, 37])
def test_the_axis_ends_at_the_runs_last_iteration(count: int) -> None:
    """A 200-iteration run drawn 4 iterations a column is labelled 200, not the 304 its
    columns could reach."""
    series = LatencySeries()
    series.extend([5.0 + (i % 3) for i in range(count)])
    width = 76 + AXIS_W
    axis = latency_chart(series, width, 12)[-1].plain
    size = series.bucket_size(76)
    columns = -(-count // size)
    labels = axis[AXIS_W:].replace("─", " ").replace("-", " ").split()
    assert labels == ["0", str(count)], axis
    assert axis.index(str(count), AXIS_W + 1) == AXIS_W + columns, "just after the last column"
