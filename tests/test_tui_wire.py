"""Light on the wire: the repaint budget's rules, and what a real TUI writes to its terminal
(no mouse tracking unless asked for; nothing while the screen is idle)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from textual.screen import Screen

from tests.fake_session import Moment, end, factory, iterations
from tests.tui_support import in_terminal, run, terminal_chunk, wait_for
from warmscope.core.child import outcome
from warmscope.core.data.settings import RunSettings
from warmscope.tui.app import build_app
from warmscope.tui.repaint import PANE_HZ, RepaintBudget

RECORD = Path(__file__).parent / "data" / "speech-script.jsonl"
MOUSE_ON = (b"\x1b[?1000h", b"\x1b[?1003h")


def count_layouts(screen: Screen[Any]) -> list[int]:
    """Count ``screen``'s layouts from now on (a layout is screen-wide: what these tests keep
    off the paths taken on every tick or key): the list's one item is the count so far."""
    layouts = [0]
    layout = screen._refresh_layout

    def counted_layout(*args, **kwargs):  # type: ignore[no-untyped-def]
        layouts[0] += 1
        return layout(*args, **kwargs)

    screen._refresh_layout = counted_layout  # type: ignore[method-assign]
    return layouts


def test_each_pane_repaints_at_most_at_its_rate_and_only_when_changed() -> None:
    budget = RepaintBudget(refresh_hz=2.0)
    assert budget.due(0.0) == set(), "nothing changed: nothing to repaint"
    budget.changed("header", "chart")
    assert budget.due(0.0) == {"header", "chart"}
    budget.changed("header", "chart")
    assert budget.due(0.3) == set(), "too soon for both"
    header = 1.0 / PANE_HZ["header"]
    assert budget.due(header + 0.01) == {"header"}, "the header at its own rate"
    assert budget.due(header + 0.02) == set()
    assert budget.due(1.0 / PANE_HZ["chart"] + 0.01) == {"chart"}, "the chart at its own rate"


def test_refresh_caps_every_pane() -> None:
    budget = RepaintBudget(refresh_hz=0.25)
    budget.changed("header")
    assert budget.due(0.0) == {"header"}
    budget.changed("header")
    assert budget.due(3.9) == set() and budget.due(4.0) == {"header"}


def test_a_frozen_screen_repaints_nothing_until_the_run_ends() -> None:
    budget = RepaintBudget(frozen=True)
    budget.changed("header", "table")
    assert budget.due(10.0) == set()
    assert budget.due(10.0, everything=True) == {"header", "table"}, "the end is drawn"


def test_space_freezes_the_main_screen_while_the_run_goes_on() -> None:
    steps = [Moment([iterations(i, [1.0] * 10)]) for i in range(0, 400, 10)]
    app = build_app(
        settings=RunSettings(target="sample:trivial", iters=400),
        start=factory([*steps, Moment([end(outcome.OK, "", 0)])]),
    )

    async def scenario(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.count >= 50, timeout=10)
        await pilot.press("space")
        table = app.screen.query_one("IterationTable")
        shown = len(table.rows) and table.rows[table.cursor][0]  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: app.runs[0].view.count >= 200, timeout=10)
        assert app.screen.budget.frozen and app.screen.budget.pending  # type: ignore[attr-defined]
        await pilot.press("space")
        await pilot.pause()
        assert table.rows[table.cursor][0] > shown  # type: ignore[attr-defined]

    run(app, scenario, settled=False)


SETTLED = b"steady"  # in the summary, drawn once the record's figures are


def _tui_output(
    *args: str, until: bytes = SETTLED, quiet: float = 0.5, idle: float = 0.0, **env_vars: str
) -> tuple[bytes, bytes]:
    """What ``warmscope ARGS`` writes to a real 100x30 terminal until its screen is drawn:
    until ``until`` has come and the terminal has then been quiet for ``quiet`` seconds (20 s
    at most); and what it writes in the ``idle`` seconds after that. ``env_vars``: its
    environment beyond an xterm's."""
    out, late = b"", b""
    deadline = time.monotonic() + 20
    last = deadline  # the time of the last write: none yet, so not quiet yet
    settled_at: float | None = None
    with in_terminal(*args, env={"COLUMNS": "100", "LINES": "30", **env_vars}) as terminal:
        while (now := time.monotonic()) < deadline:
            if settled_at is None and until in out and now - last > quiet:
                settled_at = now
            if settled_at is not None and now - settled_at >= idle:
                break
            if (chunk := terminal_chunk(terminal.master, 0.05)) is None:
                break
            if chunk:
                out += chunk
                last = time.monotonic()
                if settled_at is not None:
                    late += chunk
    assert settled_at is not None, f"the screen never settled: {out[-300:]!r}"
    return out, late


def test_no_mouse_tracking_unless_asked_and_an_idle_screen_writes_nothing() -> None:
    # Settled once quiet for a second; then two seconds in which it must write nothing.
    out, late = _tui_output("open", str(RECORD), quiet=1.0, idle=2.0)
    assert len(out) > 5000, "the app drew its screen"
    assert not any(seq in out for seq in MOUSE_ON), "no mouse tracking by default"
    assert len(late) == 0, f"an idle screen writes nothing, wrote {late[:200]!r}"
    with_mouse, _ = _tui_output("open", str(RECORD), "--mouse", until=b"summary")
    assert any(seq in with_mouse for seq in MOUSE_ON), "--mouse turns tracking on"


def test_a_changed_figure_repaints_its_summary_line_only() -> None:
    import dataclasses

    from warmscope.tui.widgets.run.summary_panel import SummaryPanel

    app = build_app(records=[RECORD])

    async def scenario(pilot) -> None:  # type: ignore[no-untyped-def]
        panel = app.screen.query_one(SummaryPanel)
        view = app.runs[0].view
        assert view.summary is not None and view.summary.cv is not None
        view.summary = dataclasses.replace(view.summary, cv=view.summary.cv + 0.05)
        panel.show_view(view)
        assert panel.repainted is not None and len(panel.repainted) == 1, panel.repainted
        assert "CV" in str(panel.render()).splitlines()[panel.repainted[0].y]

    run(app, scenario)


def test_a_growing_table_does_not_lay_the_screen_out_on_every_tick() -> None:
    """A layout is screen-wide: a list that grows takes its new length without one (its
    scrollbar is updated alone), and the header's note on the next run (it compares every
    setting) is asked for only when the header repaints."""
    steps = [Moment([iterations(i, [1.0] * 100)]) for i in range(0, 6000, 100)]
    app = build_app(
        settings=RunSettings(target="sample:trivial", iters=6000),
        start=factory([*steps, Moment([end(outcome.OK, "", 0)])]),
    )
    notes = [0]

    async def scenario(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.count >= 1000, timeout=10)
        await pilot.pause(0.3)  # the summary's lines are all there
        screen = app.screen
        table = screen.query_one("IterationTable")
        next_note = app.state.next_note

        def counted_note() -> str:
            notes[0] += 1
            return next_note()

        layouts = count_layouts(screen)
        app.state.next_note = counted_note  # type: ignore[method-assign]
        first, polls = table.rows[-1][0], app.runs[0].session.polls  # type: ignore[attr-defined, union-attr]
        await wait_for(pilot, lambda: app.runs[0].view.count >= 5000, timeout=20)
        ticks = app.runs[0].session.polls - polls  # type: ignore[union-attr]
        assert table.rows[-1][0] > first and table.following  # type: ignore[attr-defined]
        assert table.show_vertical_scrollbar
        assert layouts[0] == 0, f"{layouts[0]} layouts in {ticks} ticks"
        assert notes[0] <= ticks / 3, f"the note asked {notes[0]} times in {ticks} ticks"

    run(app, scenario, settled=False)


def test_a_following_table_repaints_only_the_cells_that_changed() -> None:
    """Nothing new: nothing refreshed. New rows: only the changed cells of each line (not the
    whole pane, its border or its scrollbar, whose thumb stays at the bottom)."""
    steps = [Moment([iterations(i, [1.0 + i % 7] * 100)]) for i in range(0, 20000, 100)]
    app = build_app(
        settings=RunSettings(target="sample:trivial", iters=20000),
        start=factory([*steps, Moment([end(outcome.OK, "", 0)])]),
    )

    async def scenario(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.count >= 2000, timeout=20)
        app.viewer.timer.pause()  # type: ignore[union-attr]  # the batches from here on, by hand
        await pilot.pause(0.2)
        table = app.screen.query_one("IterationTable")
        table.sync()  # type: ignore[attr-defined]
        await pilot.pause()
        calls: list[tuple[str, tuple[object, ...]]] = []
        refresh, bar_refresh = table.refresh, table.vertical_scrollbar.refresh

        def spy(name, real):  # type: ignore[no-untyped-def]
            def called(*regions, **kwargs):  # type: ignore[no-untyped-def]
                calls.append((name, regions))
                return real(*regions, **kwargs)

            return called

        table.refresh = spy("table", refresh)  # type: ignore[method-assign]
        table.vertical_scrollbar.refresh = spy("bar", bar_refresh)  # type: ignore[method-assign]
        table.sync()  # type: ignore[attr-defined]
        assert calls == [], "unchanged rows: nothing to send"
        tick = app.state.controller.tick()
        assert tick is not None and tick.delta.rows
        table.sync()  # type: ignore[attr-defined]
        assert calls and all(name == "table" and regions for name, regions in calls), calls
        width = table.scrollable_content_region.width
        lines = [r for _, regions in calls for r in regions]  # type: ignore[attr-defined]
        assert all(r.height == 1 and r.right <= width for r in lines), lines  # type: ignore[attr-defined]
        assert any(r.width < width for r in lines), "the index and latency cells, not the line"

    run(app, scenario, size=(80, 24), settled=False)


def test_moving_between_fields_keeps_the_footer_and_lays_nothing_out() -> None:
    """Each change of focus updates the screen's bindings; the footer is rebuilt (a widget a
    key, the screen laid out again) only when the keys it shows change. From text field to
    text field of the settings form they do not; back on the presets, q and ? are keys again."""
    app = build_app(settings=RunSettings(target="sample:trivial"))

    def described(keys: list) -> list[str]:  # type: ignore[type-arg]
        return [str(key.description) for key in keys]

    async def scenario(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.press("e", "down")  # the form, then its first text field (the target)
        await pilot.pause()
        form = app.screen
        keys = list(form.query("FooterKey"))
        assert "Quit" not in described(keys), "q is typed in a text field"
        layouts = count_layouts(form)
        for _ in range(4):
            await pilot.press("down")
            await pilot.pause()
        assert form.focused.id == "field-inputs_file", "the focus moved"
        assert list(form.query("FooterKey")) == keys, "the same keys, not rebuilt"
        assert layouts[0] == 0, f"{layouts[0]} layouts for four moves"
        await pilot.press("up", "up", "up", "up", "up")
        await pilot.pause()
        assert form.focused.id == "preset"
        assert "Quit" in described(list(form.query("FooterKey"))), "rebuilt with q"

    run(app, scenario, settled=False)


def test_a_covered_main_screen_repaints_when_it_is_back_on_top() -> None:
    """Under another screen (help, here; a sweep's, the form) the main screen draws nothing as
    the run goes on: what changed is drawn when it is on top again, at once."""
    steps = [Moment([iterations(i, [1.0] * 10)]) for i in range(0, 400, 10)]
    app = build_app(
        settings=RunSettings(target="sample:trivial", iters=400),
        start=factory([*steps, Moment([end(outcome.OK, "", 0)])]),
    )
    drawn = [0]

    async def scenario(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_for(pilot, lambda: app.runs and app.runs[0].view.count >= 50, timeout=10)
        main = app.screen
        table = main.query_one("IterationTable")
        sync = table.sync  # type: ignore[attr-defined]

        def counted_sync(*args, **kwargs):  # type: ignore[no-untyped-def]
            drawn[0] += 1
            return sync(*args, **kwargs)

        table.sync = counted_sync  # type: ignore[attr-defined]
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen is not main
        count = app.runs[0].view.count
        await wait_for(pilot, lambda: app.runs[0].view.count >= count + 100, timeout=10)
        assert drawn[0] == 0, "the table was drawn under the help"
        assert "table" in main.budget.pending  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main and drawn[0] >= 1, "drawn at once, back on top"

    run(app, scenario, settled=False)


def test_a_clock_line_lays_out_only_where_it_may_wrap() -> None:
    """A live sweep's progress and a warm-up's status are rewritten for their clocks: on one
    line they keep their size and lay nothing out; a line that wraps (a long records path
    at the end) is laid out, and so is the next after it."""
    from textual.app import App, ComposeResult

    from warmscope.tui.widgets.clock_line import ClockLine

    class OneLine(App[None]):
        def compose(self) -> ComposeResult:
            yield ClockLine("", id="clock")

    app = OneLine()

    async def scenario(pilot) -> None:  # type: ignore[no-untyped-def]
        line = app.query_one(ClockLine)
        line.show("1 of 4 processes done · 1 s")
        await pilot.pause()
        layouts = count_layouts(app.screen)
        for second in range(2, 6):
            line.show(f"1 of 4 processes done · {second} s")
            await pilot.pause()
        assert layouts[0] == 0 and line.size.height == 1
        line.show("done · records " + "/very/long/folder" * 5)
        await pilot.pause()
        assert layouts[0] >= 1 and line.size.height > 1, "wrapped: laid out"
        seen = layouts[0]
        line.show("done")
        await pilot.pause()
        assert layouts[0] > seen and line.size.height == 1, "back on one line: laid out"

    run(app, scenario, size=(60, 10), settled=False)  # type: ignore[arg-type]
