"""The runs the app knows (live ones and opened records) and what the UI keeps of each.

A ``RunView`` is the UI's bounded copy of one run, fed by ``LiveRun.poll`` batches (or by a
whole record at once, through ``RunData.since``): a ``LatencySeries`` for the chart, the newest
rows for the iteration table, the newest events, samples and stderr lines. The run's
``RunData`` (the session's, or the record's) keeps everything; a live one is read whole only
through ``snapshot()``. Only the UI thread touches a ``RunView``.
"""

from __future__ import annotations

import textwrap
import time
from array import array
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from warmscope.core.base.safe_text import clean_name
from warmscope.core.child import outcome
from warmscope.core.data.intervals import RunWarning
from warmscope.core.data.labels import label_for
from warmscope.core.data.run import NS_PER_MS, Cursor, Event, LiveRun, RunData, Update
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.stats import Summary
from warmscope.tui.drawing.series import LatencySeries, mark_priority

MAX_EVENTS = 2000
MAX_SAMPLES = 300
MAX_STDERR_LINES = 1000
RATE_WINDOW_S = 1.0
WRAP = 38  # UI-written lines in the stderr pane: a Log does not wrap, the pane is ~40 wide


@dataclass
class Delta:
    """What one batch changed, so widgets redraw only what they must."""

    rows: int = 0
    events: list[Event] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    samples: bool = False
    marks: bool = False
    status: bool = False


class IterationRows(Sequence[tuple[int, float]]):
    """Every iteration a view has been given, as ``(index, ms)`` rows, read from the run's own
    latencies: no copy, and iteration 0 stays reachable after millions more."""

    def __init__(self, view: RunView) -> None:
        self._view = view

    def __len__(self) -> int:
        return self._view.count

    @overload
    def __getitem__(self, index: int) -> tuple[int, float]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[int, float]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        n = self._view.count
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(n))]
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(index)
        return (i, self._view.latencies[i])


class RunView:
    """The drawable state of one run: bounded, but for the latencies it reads in place."""

    def __init__(self) -> None:
        self.series = LatencySeries()
        self.device_series = LatencySeries()
        """On CUDA, each call's device time (a call the device did not time, at its host
        time): the chart's other view."""
        self.device: dict[str, Any] | None = None
        """How busy the device was in a steady call (``RunData.device_summary``), computed
        with the summary."""
        self._own: array[float] = array("d")
        self.latencies: Sequence[float] = self._own
        """Every latency so far: the run's own array once ``attach``-ed, else a copy."""
        self.rows = IterationRows(self)
        self.events: deque[Event] = deque(maxlen=MAX_EVENTS)
        self.events_total = 0
        self.by_iteration: dict[int, list[tuple[str, str]]] = {}
        self.samples: deque[dict[str, Any]] = deque(maxlen=MAX_SAMPLES)
        self.stderr: deque[str] = deque(maxlen=MAX_STDERR_LINES)
        self._stderr_context: tuple[str, object] | None = None
        self.status = "starting"
        self.phase: str | None = None
        self.busy: dict[str, Any] | None = None
        self.phases: dict[str, float] = {}
        self.finished = False
        self.count = 0
        self.last_ms: float | None = None
        self.summary: Summary | None = None
        self.summary_count = -1
        self.summary_error = ""
        """Why the last summary could not be computed; cleared by the next one."""
        self.warnings: tuple[RunWarning, ...] = ()
        """Why a finished run's figures may mislead (a noisy run); computed with its summary."""
        self.shape_keys: list[str] = []
        self._own_shapes: array[int] = array("h")
        self.shape_index: array[int] = self._own_shapes
        """Each iteration's index into ``shape_keys``: the run's own array once attached."""
        self.idle_probe: list[dict[str, Any]] = []
        """``--idle-probe`` rows (``RunData.idle_probe_rows``), computed with the summary."""
        self.shapes: list[dict[str, Any]] = []
        """Per-shape rows (``RunData.shape_rows``) when ``--dim`` varies the inputs, computed
        with the summary."""
        self.rate: float | None = None
        self._rate_mark: tuple[float, int] | None = None
        self._firsts: dict[int, int] = {}
        """Each shape's first iteration, by shape index, once seen (``first_of_shape``)."""
        self._first_iterations: set[int] = set()
        self._scanned = 0

    def attach(self, latencies: Sequence[float], shape_index: array[int] | None = None) -> None:
        """Read latencies (and shape indexes) from the run's own arrays (they only grow; the
        view reads no further than ``count``, what it has been given), instead of copies."""
        self.latencies = latencies
        if shape_index is not None:
            self.shape_index = shape_index

    def ingest(self, u: Update, now: float | None = None) -> Delta:
        d = Delta()
        if u.ms:
            if u.ns is not None:  # a whole record, in nanoseconds: none converted
                self.series.extend(u.ns, per_ms=NS_PER_MS)
            else:
                self.series.extend(u.ms)
            if self.latencies is self._own:
                self._own.extend(u.ms)
            if u.shape_keys:
                self.shape_keys = u.shape_keys
                if self.shape_index is self._own_shapes:
                    shapes = list(u.shapes)
                    self._own_shapes.extend(shapes + [-1] * (len(u.ms) - len(shapes)))
            self.count = u.first + len(u.ms)
            self.last_ms = u.ms[-1]
            d.rows = len(u.ms)
        if u.device_ns:
            self._add_device(u.device_first, u.device_ns)
        for ev in u.events:
            if ev.iteration is not None:
                self.by_iteration.setdefault(ev.iteration, []).append((ev.kind, ev.title))
                priority = mark_priority(ev.kind, label_for([(ev.kind, ev.title)]))
                if priority:
                    self.series.mark(ev.iteration, priority)
                    d.marks = True
            if ev.kind == "stderr":
                d.stderr.extend(self._stderr_lines(ev))
            else:
                self.events.append(ev)
                self.events_total += 1
                d.events.append(ev)
        if u.samples:
            self.samples.extend(u.samples)
            d.samples = True
        state = (u.status, u.phase, u.busy, u.finished, len(u.phases))
        if state != (self.status, self.phase, self.busy, self.finished, len(self.phases)):
            d.status = True
        self.status, self.phase, self.busy, self.finished = u.status, u.phase, u.busy, u.finished
        self.phases = u.phases
        self._track_rate(time.monotonic() if now is None else now)
        return d

    def _add_device(self, first: int, device_ns: Sequence[int]) -> None:
        """Device times from ``first`` (they follow their iterations, never lead them); a call
        the device did not time is drawn at its host time."""
        start = self.device_series.count
        skip = max(0, start - first)
        gap = [self.latencies[i] for i in range(start, first)]
        if gap:
            self.device_series.extend(gap)
        values = device_ns[skip:]
        if min(values, default=0) >= 0:
            self.device_series.extend(values, per_ms=NS_PER_MS)
            return
        at = first + skip
        self.device_series.extend(
            [v / NS_PER_MS if v >= 0 else self.latencies[at + j] for j, v in enumerate(values)]
        )

    def _track_rate(self, now: float) -> None:
        if self._rate_mark is None or self.count == 0:
            self._rate_mark = (now, self.count)
            return
        t, n = self._rate_mark
        if now - t >= RATE_WINDOW_S:
            self.rate = (self.count - n) / (now - t)
            self._rate_mark = (now, self.count)

    def _stderr_lines(self, ev: Event) -> list[str]:
        context = ("it", ev.iteration) if ev.iteration is not None else ("phase", ev.phase)
        lines = []
        if context != self._stderr_context:
            where = f"iteration {ev.iteration}" if ev.iteration is not None else ev.phase
            lines.append(f"── {where or 'setup'} ──")
            self._stderr_context = context
        lines += ev.text.splitlines() or [ev.title]
        self.stderr.extend(lines)
        return lines

    def add_stderr(self, lines: list[str]) -> list[str]:
        """Lines the UI adds itself (an error's traceback), kept like the child's."""
        self.stderr.extend(lines)
        self._stderr_context = None
        return lines

    def shape_of(self, iteration: int) -> str:
        """The shape key of an iteration (empty when the shapes do not vary)."""
        if not self.shape_keys or not 0 <= iteration < min(self.count, len(self.shape_index)):
            return ""
        k = self.shape_index[iteration]
        return self.shape_keys[k] if 0 <= k < len(self.shape_keys) else ""

    def first_of_shape(self, iteration: int) -> bool:
        """Whether ``iteration`` is the first of its shape (of its module and signature, in a
        watched program); never where the shapes do not vary."""
        n = min(self.count, len(self.shape_index)) if self.shape_keys else 0
        if n > self._scanned:
            # A shape's first is found once and never moves: only what is new is searched,
            # in C (``array.index``), once per shape not yet seen.
            for k in range(len(self.shape_keys)):
                if k not in self._firsts:
                    try:
                        i = self.shape_index.index(k, self._scanned, n)
                    except ValueError:
                        continue
                    self._firsts[k] = i
                    self._first_iterations.add(i)
            self._scanned = n
        return iteration in self._first_iterations

    def label(self, iteration: int) -> str | None:
        evs = self.by_iteration.get(iteration)
        return label_for(evs) if evs else None

    def event_count(self, iteration: int) -> int:
        return len(self.by_iteration.get(iteration, ()))


def error_lines(data: RunData) -> list[str]:
    """Why a run failed, as stderr-pane lines: the child's traceback, else the status detail."""
    err = data.error
    if not err:
        if data.status in (outcome.FAILED, outcome.CRASHED, outcome.TIMEOUT):
            return [f"── run {data.status} ──", *textwrap.wrap(data.status_detail, WRAP)]
        return []
    where = (
        f"iteration {err['iteration']}" if err.get("iteration") is not None else err.get("where")
    )
    lines = [f"── run {data.status} at {where} ──"]
    lines += textwrap.wrap(str(err.get("message", "")), WRAP)
    if err.get("traceback"):
        lines += str(err["traceback"]).rstrip().splitlines()
    return lines


@dataclass(frozen=True)
class SweepTag:
    """The sweep a run is one process of: runs with the same ``sweep`` and ``cell`` are fresh
    processes of the same settings, to be compared by their intervals, not one by one."""

    sweep: str
    """The sweep's folder (where its ``sweep.json`` is): it names the sweep."""
    cell: int
    label: str
    repeat: int
    """This process's place in its cell, from 0; ``of`` in all."""
    of: int


@dataclass(eq=False)
class RunEntry:
    """One run in the app's history: live (it has a session) or read from a record."""

    number: int
    data: RunData
    source: str  # "run" or "record"
    session: LiveRun | None = None
    view: RunView = field(default_factory=RunView)
    cursor: Cursor | None = None
    ended_elapsed: float | None = None
    sweep: SweepTag | None = None
    """Set for a process of a sweep (run from the TUI, or opened with its ``sweep.json``)."""

    def __post_init__(self) -> None:
        self.view.attach(self.data.ms_view, self.data.shape_of)

    @classmethod
    def from_record(cls, number: int, data: RunData) -> RunEntry:
        entry = cls(number, data, "record")
        entry.view.ingest(data.since(Cursor(), in_place=True))
        entry.view.add_stderr(error_lines(data))
        return entry

    @classmethod
    def from_session(cls, number: int, session: LiveRun) -> RunEntry:
        return cls(number, session.data, "run", session, cursor=Cursor())

    @property
    def live(self) -> bool:
        return self.session is not None and not self.view.finished

    @property
    def mode(self) -> str:
        return self.data.mode

    @property
    def target(self) -> str:
        """The target as a name safe to draw: one line, its controls and invisibles marked."""
        return clean_name(self.data.settings.target or "?")

    @property
    def how_it_ran(self) -> str:
        """The run's settings in one line; a watched program's run has none of warmscope's
        (it ran as it was written): ``watched``."""
        if self.mode == "exec":
            return "watched"
        from warmscope.core.output.settings_diff import settings_line  # after the first frame

        return settings_line(self.data.settings)

    @property
    def short_target(self) -> str:
        """The target with a file's directories left out: ``speech.py:make``."""
        name = self.target
        if "/" in name:
            head, sep, factory = name.partition(":")
            name = Path(head).name + sep + factory
        return name

    @property
    def title(self) -> str:
        """``#2 sample:speech script (no-profiling)``: how lists and pickers name it."""
        extra = fmt_settings(self.data.settings)
        tag = self.sweep
        of = f" · sweep process {tag.repeat + 1} of {tag.of}" if tag else ""
        return (
            f"#{self.number} {self.short_target} {self.mode}"
            + (f" ({extra})" if extra else "")
            + of
        )

    @property
    def record_name(self) -> str:
        return clean_name(Path(self.data.record_path).name) if self.data.record_path else ""

    def elapsed(self) -> float:
        """Seconds since the run started; for a record, derived from what it recorded."""
        if self.session is not None:
            if self.ended_elapsed is not None:
                return self.ended_elapsed
            return self.session.elapsed()
        d = self.data
        candidates = [s.get("t", 0.0) for s in d.samples[-1:]]
        candidates += [e.t for e in d.events[-1:]]
        if d.count:
            last = d.latency(d.count - 1)
            loop = (d.start_ms[-1] + last) / 1000 if len(d.start_ms) else sum(d.ms_view) / 1000
            candidates.append(sum(d.phases.values()) / 1000 + loop)
        return max(candidates, default=0.0)

    def loop_rate(self) -> float | None:
        """Iterations per second over the whole loop (a finished run) or lately (a live one)."""
        if self.live:
            return self.view.rate
        d = self.data
        if not d.count or not len(d.start_ms):
            return None
        seconds = (d.start_ms[-1] + d.latency(d.count - 1)) / 1000
        return d.count / seconds if seconds > 0 else None

    def snapshot(self) -> RunData:
        """The whole run so far, safe to read on any thread while the run goes on."""
        return self.session.snapshot() if self.session is not None else self.data

    def summary(self) -> Summary:
        """The run's summary: the one the UI computed if it is current, else computed now."""
        view = self.view
        if view.summary is not None and view.summary_count == view.count:
            return view.summary
        return self.snapshot().summary()


def fmt_settings(settings: RunSettings) -> str:
    from warmscope.core.output.settings_diff import settings_line  # after the first frame

    line = settings_line(settings)
    return "" if line == "defaults" else line


def exit_code(runs: Iterable[RunEntry]) -> int:
    """The app's exit code from its runs, as ``warmscope run`` would give for the last run it
    started: 1 (2 for bad input) where that run failed, crashed or timed out; else 0. A run the
    user stopped, records only opened, or no run at all: 0."""
    started = [e for e in runs if e.source == "run"]
    if not started:
        return outcome.EXIT_OK
    last = started[-1].data
    if last.status in (outcome.FAILED, outcome.CRASHED, outcome.TIMEOUT):
        return last.exit_code if last.exit_code else outcome.EXIT_FAILED
    return outcome.EXIT_OK


def record_lines(runs: Iterable[RunEntry]) -> list[str]:
    """Where this session's runs are kept, said once the screen is gone: to reopen them
    (``warmscope open``), compare them or report them."""
    return [
        f"run #{e.number} {e.data.status}: {e.data.record_path}"
        for e in runs
        if e.source == "run" and e.data.record_path
    ]
