"""``SweepScreen``: a sweep's answer, each process's first iteration, each setting's medians.

The same screen shows a sweep document opened (``warmscope open sweep.json``) and a sweep
running from the settings screen (a ``SweepRunner``), which it fills in live on a timer: each
process's first iteration as a point on its cell's strip as soon as it is measured, the
intervals as processes finish, the table, and the answer once the sweep ends. While it runs,
Esc (or ``q``, Ctrl+C) stops it: the process in progress ends, the finished ones are kept and
the document says ``stopped``. Each process becomes a run of the session (history, compare),
tagged with its sweep and cell: the screen tells the app (``ProcessStarted``, ``Ended``).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Sparkline, Static

from warmscope.core.base.safe_text import clean_line
from warmscope.core.output.sweep_digest import (
    count_text,
    header_lines,
    is_decided,
    iv_text,
    short_of_plan,
)
from warmscope.tui import fmt
from warmscope.tui.drawing.sweep_strips import strips
from warmscope.tui.messages import ToApp
from warmscope.tui.widgets.clock_line import ClockLine
from warmscope.tui.widgets.keys_footer import KeysFooter
from warmscope.tui.widgets.sweep_chart import SweepChart

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState
    from warmscope.tui.sweep_runner import RunnerState, Started, SweepRunner

CURVE_POINTS = 60
"""The first iterations whose median latency each setting's curve shows."""
TEXT_MAX = 2000
LABEL_MAX = 120
WARNINGS_SHOWN = 20
"""What the screen shows of a document's texts: a document is data, and its strings may be
of any length (the full text is ``warmscope report``'s)."""
POLL_S = 0.25
"""How often a running sweep's screen takes the runner's news: points, a finished process."""


def sweep_table(doc: dict[str, Any]) -> Table:
    """One row per setting, every figure a median with its interval (the digest's; the header
    says the coverage they reach)."""
    table = Table(box=None, padding=(0, 1), header_style="bold")
    for name in ("setting", "runs", "first", "warm-up excess", "steady from", "steady p50"):
        # Figures wrap at their space (median, then interval) rather than lose digits.
        # A long setting folds onto more lines, never ends in "…": two settings that differ
        # at their end (profiling_executor=on/off) must not look the same.
        table.add_column(
            name,
            no_wrap=name == "runs",
            justify="left" if name == "setting" else "right",
            overflow="fold",
        )
    table.add_column("shapes")
    ranking = doc.get("ranking", [])
    ranks = {r.get("cell"): r for r in ranking}
    decided = is_decided(ranking)  # a best only where it is beyond noise better than the rest
    for c in doc.get("cells", []):
        verdict = ranks.get(c.get("index"), {}).get("vs_best", "")
        style = "bold" if decided and verdict == "best" else ("dim" if verdict == "worse" else "")
        table.add_row(
            Text(short(c.get("label", "?"), LABEL_MAX), style=style),
            str(len(c.get("runs", []))),
            iv_text(c.get("first_ms")),
            iv_text(c.get("warmup_excess_ms")),
            count_text(c.get("steady_from")),
            iv_text(c.get("steady_p50_ms")),
            short(c.get("shapes", "-"), LABEL_MAX),
        )
    return table


def short(value: Any, most: int) -> str:
    """``value`` as one safe line of at most ``most`` characters."""
    text = str(value)
    return clean_line(text if len(text) <= most else text[: most - 1] + "…")


def head_text(doc: dict[str, Any]) -> str:
    """The digest's lines under the answer: the sweep's size, the coverage its intervals
    reach, how its verdicts are reached (as ``warmscope sweep`` prints them)."""
    return "\n".join(short(line, TEXT_MAX) for line in header_lines(doc))


def progress_text(state: RunnerState, elapsed: float) -> str:
    """What a running sweep is doing: processes done, the one in progress, the time."""
    doc = state.doc
    parts = [f"{state.finished} of {state.planned} processes done"]
    if state.error:
        parts.append(f"ended: {state.error}")
    elif state.ended:
        parts.append(("stopped" if doc.get("stopped") else "done") + f" in {fmt.seconds(elapsed)}")
    else:
        if state.current is not None:
            c, r = state.current
            cells = doc.get("cells", [])
            label = cells[c].get("label", "?") if c < len(cells) else "?"
            parts.append(f"running {label}, process {r + 1} of {doc.get('repeat')}")
        parts.append(fmt.seconds(elapsed))
        parts.append("stopping…" if state.stopping else "Esc stops it")
    if state.ended and doc.get("folder"):
        parts.append(f"records {doc['folder']}")
    return clean_line(" · ".join(parts))


def _drawable(value: Any) -> float:
    """A curve's point: a live sweep's figure no curve can draw (none, NaN, infinite) is 0."""
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


class SweepScreen(ModalScreen[None]):
    """A sweep document (``warmscope open sweep.json``), or a sweep running now (``runner``);
    Esc stops a running one, and shows the runs once it has ended."""

    CSS_PATH = "sweep_screen.tcss"  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop_sweep", "Stop the sweep", id="stop-sweep"),
        Binding("escape,w", "dismiss", "Runs", id="close-sweep"),
        Binding("q", "app.quit", "Quit", id="quit-from-sweep"),
    ]

    class ProcessStarted(ToApp):
        """A process of the running sweep has started: the app takes it as one of its runs."""

        def __init__(self, runner: SweepRunner, started: Started) -> None:
            super().__init__()
            self.runner = runner
            self.started = started

    class Ended(ToApp):
        """The running sweep ended (done, stopped or failed): ``doc`` is its document."""

        def __init__(self, runner: SweepRunner, doc: dict[str, Any]) -> None:
            super().__init__()
            self.runner = runner
            self.doc = doc

    def __init__(
        self, doc: dict[str, Any] | None = None, runner: SweepRunner | None = None
    ) -> None:
        super().__init__()
        self.runner = runner
        self.state: RunnerState | None = runner.state() if runner is not None else None
        self.doc: dict[str, Any] = self.state.doc if self.state is not None else (doc or {})
        self.t0 = time.monotonic()
        self.t_end: float | None = None
        self._timer: Timer | None = None
        self._drawn: tuple[Any, int, bool, bool] | None = None
        """What the last drawing showed: processes finished, points running, running, stopping."""

    @property
    def running(self) -> bool:
        return self.state is not None and not self.state.ended

    def compose(self) -> ComposeResult:
        doc = self.doc
        with VerticalScroll(id="sweep-box"):
            yield Static("", id="sweep-answer")
            yield Static(Text(head_text(doc), style="dim"), id="sweep-head")
            if self.runner is not None:
                yield ClockLine("", id="sweep-progress")
            yield SweepChart(id="sweep-chart")
            yield Static(sweep_table(doc), id="sweep-table")
            yield Static(
                Text("median latency of the first iterations (each on its own scale)", style="dim")
            )
            for i, c in enumerate(doc.get("cells", [])):
                yield Static(Text(short(c.get("label", "?"), LABEL_MAX), style="bold"))
                yield Sparkline([], classes="sweep-curve", id=f"sweep-curve-{i}")
            yield Static("", id="sweep-warnings")
        yield KeysFooter()

    def on_mount(self) -> None:
        self._show()
        if self.running:
            self._timer = self.set_interval(POLL_S, self.poll)

    def on_unmount(self) -> None:
        if self.runner is not None and self.running:
            self.runner.stop()  # the app is closing: no process of the sweep is left behind

    # -- live ---------------------------------------------------------------------------------

    def poll(self) -> None:
        """Take the runner's news: each new process and the end told to the app (its runs, its
        sweeps: ``ProcessStarted``, ``Ended``), then redraw what moved."""
        runner = self.runner
        if runner is None:
            return
        for started in runner.take_started():
            self.app.post_message(self.ProcessStarted(runner, started))
        self.state = runner.state()
        self.doc = self.state.doc
        if self.state.ended:
            if self._timer is not None:
                self._timer.stop()
            self.t_end = time.monotonic()
            self.app.post_message(self.Ended(runner, self.doc))
            self.refresh_bindings()
        self._show()

    def _running_points(self) -> list[tuple[int, float]]:
        if self.state is None:
            return []
        return [
            (p.cell, p.first_ms) for p in self.state.points if not p.done and p.first_ms is not None
        ]

    def _show(self) -> None:
        doc = self.doc
        state = self.state
        if state is not None:
            elapsed = (self.t_end or time.monotonic()) - self.t0
            self.query_one("#sweep-progress", ClockLine).show(progress_text(state, elapsed))
        running = self._running_points()
        key = (doc.get("finished"), len(running), self.running, state.stopping if state else False)
        if key == self._drawn:
            return  # nothing new but the clock
        self._drawn = key
        answer = short(doc.get("answer", ""), TEXT_MAX)
        cut = short_of_plan(doc)
        warnings = [short(w, TEXT_MAX) for w in doc.get("warnings", [])[: WARNINGS_SHOWN + 1]]
        if self.running:  # how far it got is the progress line's to say
            answer = answer.removeprefix(f"{cut}; ") if cut else answer
            warnings = [w for w in warnings if not (cut and w.startswith(cut))]
            answer = f"so far: {answer}" if doc.get("finished") else "waiting for the first process"
        more = len(doc.get("warnings", [])) - WARNINGS_SHOWN
        if more > 0:
            warnings[WARNINGS_SHOWN:] = [f"… and {more:,} more (warmscope report shows them all)"]
        self.query_one("#sweep-answer", Static).update(
            Text(answer, style="dim" if self.running else "bold")
        )
        self.query_one("#sweep-head", Static).update(Text(head_text(doc), style="dim"))
        self.query_one("#sweep-chart", SweepChart).show(strips(doc, running))
        self.query_one("#sweep-table", Static).update(sweep_table(doc))
        for i, c in enumerate(doc.get("cells", [])):
            rows = c.get("by_iteration", [])[:CURVE_POINTS]
            medians = [_drawable(row.get("median")) for row in rows]
            self.query_one(f"#sweep-curve-{i}", Sparkline).data = medians
        box = self.query_one("#sweep-warnings", Static)
        box.update(Text("\n".join(warnings), style="yellow"))
        box.display = bool(warnings)

    # -- keys ---------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_sweep":
            return self.running
        if action == "dismiss":
            return not self.running
        return True

    def action_stop_sweep(self) -> None:
        if self.runner is not None and self.running and not self.runner.stopping:
            self.runner.stop()
            self.notify("stopping the sweep: the finished processes are kept", timeout=3)
            self.poll()

    def close_or_stop(self) -> None:
        """``q`` and Ctrl+C: while the sweep runs they stop it (the screen stays, to show what
        was kept); after, they close the screen."""
        if self.running:
            self.action_stop_sweep()
        else:
            self.dismiss(None)


def open_screen(app: App[Any], state: AppState) -> None:
    """``w``: the last sweep's answer and table (opened, or run here), over its runs."""
    if state.sweeps and not isinstance(app.screen, SweepScreen):
        app.push_screen(SweepScreen(state.sweeps[-1]))
