"""The TUI's pure parts: bounded series, text charts, formatting, run views, commands."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from warmscope.cli import make_parser
from warmscope.cli.options import build_settings
from warmscope.core.base import units
from warmscope.core.data.run import Event, Update
from warmscope.core.data.settings import RunSettings
from warmscope.tui import fmt
from warmscope.tui.drawing.chart import latency_chart, overlay_chart
from warmscope.tui.drawing.series import LatencySeries
from warmscope.tui.run_view import RunView

deterministic = settings(derandomize=True, deadline=None, database=None, max_examples=150)
latency = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False)


def _batches(values: list[float], cuts: list[int]) -> list[list[float]]:
    out, pos = [], 0
    for cut in sorted(set(cuts)):
        if pos < cut < len(values):
            out.append(values[pos:cut])
            pos = cut
    out.append(values[pos:])
    return out


@deterministic
@given(
    values=st.lists(latency, min_size=1, max_size=300),
    cuts=st.lists(st.integers(0, 300), max_size=8),
    width=st.integers(1, 40),
)
def test_series_columns_match_the_iterations_they_cover(
    values: list[float], cuts: list[int], width: int
) -> None:
    series = LatencySeries(capacity=8, head=16)
    for batch in _batches(values, cuts):
        series.extend(batch)
    assert series.count == len(values)
    assert len(series._n) <= 8  # bounded, whatever the length
    cols = series.columns(width)
    assert len(cols) == width
    for col in cols:
        if len(values) <= 16:  # the exact head
            a, b = col.first, col.last + 1
        else:  # whole buckets around the column
            a = (col.first // series.span) * series.span
            b = min(len(values), (col.last // series.span + 1) * series.span)
        chunk = values[a:b]
        assert col.lo == min(chunk)
        assert col.hi == max(chunk)
        assert math.isclose(col.mean, math.fsum(chunk) / len(chunk), rel_tol=1e-9)


def test_series_marks_before_and_after_their_iteration_arrives() -> None:
    series = LatencySeries(capacity=8, head=4)
    series.extend([5.0, 1.0])
    series.mark(1, 3)
    series.mark(40, 6)  # not arrived yet
    series.extend([1.0] * 100)
    cols = series.columns(102)
    assert cols[1].mark >= 3
    assert max(c.mark for c in cols if c.first <= 40 <= c.last) == 6
    assert series.marks_seen() == {3, 6}


def _cells(line: Text) -> int:
    return line.cell_len


@deterministic
@given(width=st.integers(1, 120), height=st.integers(1, 30), log=st.booleans())
def test_latency_chart_fills_exactly_its_size(width: int, height: int, log: bool) -> None:
    series = LatencySeries()
    series.extend([80.0, 40.0, 12.0] + [4.0, 4.2, 3.9] * 30)
    series.mark(0, 3)
    series.mark(1, 4)
    lines = latency_chart(series, width, height, log=log, steady_from=3, p50=4.0)
    assert len(lines) == height
    if width >= 16 and height >= 4:
        assert all(_cells(line) == width for line in lines)


def test_latency_chart_marks_events_warmup_and_p50_in_text_not_only_colour() -> None:
    series = LatencySeries()
    series.extend([80.0, 40.0, 12.0] + [4.0, 4.2, 3.9] * 30)
    series.mark(0, 3)
    series.mark(1, 4)
    lines = [line.plain for line in latency_chart(series, 60, 12, steady_from=3, p50=4.0)]
    assert "P" in lines[0] and "O" in lines[0]
    assert "━" in lines[-1]  # the warm-up under the axis
    assert any("4.00 ms┼" in line for line in lines)  # the p50 on the axis
    size = series.bucket_size(60 - 8)
    columns = -(-93 // size)
    assert size == 2 and lines[-1].index("93") == 8 + columns, "the run's 93, after its columns"


def test_overlay_chart_fills_its_size_and_names_the_runs_steady_points() -> None:
    a, b = LatencySeries(), LatencySeries()
    a.extend([50.0, 20.0, 9.0] + [3.0] * 60)
    b.extend([9.0] + [3.1] * 80)
    lines = overlay_chart([a, b], 70, 10, steady=(30, 10))
    assert len(lines) == 10
    assert all(line.cell_len == 70 for line in lines)
    assert "A" in lines[-1].plain and "B" in lines[-1].plain


def test_formatting_keeps_three_significant_digits() -> None:
    assert fmt.ms(None) == "-"
    assert fmt.ms(1290.0) == "1.29 s"
    assert fmt.ms(66.16) == "66.2 ms"
    assert fmt.ms(4.62) == "4.62 ms"
    assert fmt.ms(0.0507) == "50.7 µs"
    assert fmt.ms(999.9) == "1.00 s"
    assert fmt.seconds(4.25) == "4.2 s"
    assert fmt.seconds(65) == "1:05"
    assert units.metric("cv", 0.129) == "12.9%"


def _update(first: int, ms: list[float], events: list[Event] = ()) -> Update:  # type: ignore[assignment]
    return Update(
        first=first,
        ms=ms,
        start_ms=[],
        events=list(events),
        samples=[],
        status="running",
        phase=None,
        busy=None,
        finished=False,
    )


def test_run_view_reaches_every_row_and_routes_stderr_to_its_pane() -> None:
    view = RunView()
    view.ingest(_update(0, [1.0] * 10, [Event("jit", "Profiled Graph", "graph", iteration=0)]))
    view.ingest(
        _update(10, [2.0] * 300_000, [Event("stderr", "hello", "hello\nworld", iteration=12)])
    )
    assert view.count == 10 + 300_000
    assert len(view.rows) == view.count, "iteration 0 stays reachable after a long run"
    assert view.rows[0] == (0, 1.0) and view.rows[-1] == (view.count - 1, 2.0)
    assert view.rows[5:7] == [(5, 1.0), (6, 1.0)]
    assert [e.title for e in view.events] == ["Profiled Graph"]  # stderr is not an "event" row
    assert list(view.stderr) == ["── iteration 12 ──", "hello", "world"]
    assert view.label(0) == "profiling run"
    assert view.event_count(12) == 1


def test_reproduce_command_parses_back_to_the_same_settings() -> None:
    s = RunSettings(target="sample:speech", inputs=["1x300x40"], profile_iters="0,1,steady")
    s.apply_preset("no-profiling")
    s.set("profiling_executor=default")  # a knob the preset set, put back: --set ...=default
    s.set("num_profiled_runs=2")
    s.set("env.OMP_NUM_THREADS=1")
    s.duration = 2.5
    cmd = s.command_line()
    assert cmd[:3] == ["warmscope", "run", "sample:speech"]
    back = build_settings(make_parser("run").parse_args(cmd[2:]))
    assert back.knobs == s.knobs
    assert back.env == s.env
    assert (back.preset, back.duration, back.inputs) == (s.preset, s.duration, s.inputs)
    assert back.profile_iters == s.profile_iters


def test_the_command_line_calls_run_app_with_what_it_takes(monkeypatch) -> None:
    """`warmscope open` and `warmscope TARGET` hand the TUI only arguments it accepts."""
    import inspect
    from pathlib import Path

    from warmscope.cli import main
    from warmscope.tui import terminal_app as tui_app

    # run_app takes `mouse` and hands the rest to the app: both must accept what they get.
    app = inspect.signature(tui_app.WarmscopeApp.__init__)  # what run_app builds
    calls: list[dict] = []

    def check(*, mouse: bool = False, **kwargs):
        app.bind(None, **kwargs)  # a TypeError here is the bug a user would meet
        calls.append(kwargs)
        return 0

    monkeypatch.setattr(tui_app, "run_app", check)
    record = Path(__file__).parent / "data" / "speech-script.jsonl"
    assert main(["open", str(record)]) == 0
    assert main(["sample:trivial", "--overwrite"]) == 0
    assert calls[1]["overwrite"] is True


def test_the_summary_panel_names_explained_first_calls_as_core_does() -> None:
    from warmscope.core.data.first_call import EXPLAINED
    from warmscope.tui.widgets.run.summary_panel import EXPLAINED_KIND

    assert EXPLAINED_KIND == EXPLAINED


@deterministic
@given(st.floats(min_value=0, max_value=1.5, allow_nan=False), st.integers(0, 40))
def test_a_bar_fills_its_width_in_eighths(fraction: float, width: int) -> None:
    from warmscope.tui.drawing.chart import hbar

    filled, empty = hbar(fraction, width)
    assert len(filled) + len(empty) == width and not empty.strip()
    part = filled[-1:] if filled[-1:] != "█" else ""
    eighths = 8 * filled.count("█") + (" ▏▎▍▌▋▊▉".index(part) if part else 0)
    if width:
        assert eighths == max(min(width * 8, round(fraction * width * 8)), int(fraction > 0))


def test_cut_whole_cuts_between_items_not_inside_a_figure() -> None:
    text = "GPU 0 · NVIDIA H100 80GB HBM3 (sm 9.0), CUDA 13.0, cuDNN 9.19.0 · driver 580.159.04"
    assert fmt.cut_whole(text, 100) == text
    assert (
        fmt.cut_whole(text, 80)
        == "GPU 0 · NVIDIA H100 80GB HBM3 (sm 9.0), CUDA 13.0, cuDNN 9.19.0…"
    )
    assert fmt.cut_whole(text, 57) == "GPU 0 · NVIDIA H100 80GB HBM3 (sm 9.0), CUDA 13.0…"
    # An item longer than half the room: cut between words instead of dropping the name.
    assert fmt.cut_whole(text, 37) == "GPU 0 · NVIDIA H100 80GB HBM3 (sm…"
    assert fmt.cut_whole("46°C · PCIe tx 2.1 MB/s · rx 38.7 MB/s", 26) == "46°C · PCIe tx 2.1 MB/s…"
    assert fmt.cut_whole("a" * 30, 10, "...") == "a" * 7 + "..."
    for width in range(1, 90):
        assert len(fmt.cut_whole(text, width)) <= max(width, 1)


@pytest.mark.parametrize(
    ("height", "roomy", "cpu_rows"),
    [(17, True, True), (15, True, True), (14, False, True), (11, False, True), (8, False, False)],
)
def test_the_usage_panes_layout_fits_its_height(height: int, roomy: bool, cpu_rows: bool) -> None:
    # 120x40 gives the pane 17 lines, 100x30 11, 80x24 8.
    from warmscope.tui.widgets.run.utilization_pane import CPU_METRICS, fit

    layout = fit(height, note=False)
    assert (layout.roomy, layout.cpu_rows) == (roomy, cpu_rows)
    lines = 1 + (9 + 1 if roomy else 6) + (len(CPU_METRICS) if cpu_rows else 1)
    assert lines <= height
