"""``RunController``: the app's runs and their life cycle, with no screen.

It starts runs (through a session factory, so tests can pass a fake one), takes each live
batch into the run's ``RunView``, and decides when a run's summary is due. The app's state
holds one (``AppState``); the ``Viewer`` calls ``tick`` on its timer and lays out what changed,
``Summaries`` runs the summary jobs in workers. No Textual here: the update loop is testable
without a terminal.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data import contention
from warmscope.core.data.intervals import RunWarning
from warmscope.core.data.run import LiveRun, RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.stats import Summary
from warmscope.core.data.summary_rows import device_summary, idle_probe_rows, shape_rows
from warmscope.tui.run_view import Delta, RunEntry, SweepTag

if TYPE_CHECKING:
    from warmscope.tui.sweep_runner import SweepRunner


class SessionFactory(Protocol):
    """Builds and starts a run: ``(settings, record path or None, command) -> LiveRun``.

    ``overwrite=True`` comes only with the first run of an app told to replace its
    ``--record PATH``; a factory for apps that never are may leave the keyword out.
    """

    def __call__(
        self,
        settings: RunSettings,
        record_path: Path | None,
        command: list[str],
        /,
        *,
        overwrite: bool = False,
    ) -> LiveRun: ...


SummaryJob = Callable[[], "tuple[Summary, int, float, tuple[RunWarning, ...]]"]
"""A summary to compute on a worker: ``(summary, iterations summarized, seconds, warnings)``."""

SUMMARY_MIN_INTERVAL_S = 0.5
SUMMARY_COST_FACTOR = 50  # a live summary may use at most 1/50 of the time (a thread, but the GIL)
INLINE_SUMMARY_MAX = 20_000  # a record this short is summarized in a few ms, before its frame


def start_session(
    settings: RunSettings,
    record_path: Path | None,
    command: list[str],
    /,
    *,
    overwrite: bool = False,
) -> LiveRun:
    """The real thing: the run's plan, started now (``run_plan``: a separate profiling or
    warming process first where the settings ask for one). It returns at once; every child is
    spawned from the launcher thread (``launcher``), so any thread may call it."""
    from warmscope.core.run.run_plan import start_run  # subprocess and psutil: with the first run

    return start_run(
        settings, record_path=record_path, command=command, overwrite=overwrite, explain=True
    )


@dataclass(frozen=True)
class StartRequest:
    """What one run's start needs, fixed on the UI thread before the slow part begins."""

    settings: RunSettings
    record_path: Path | None
    command: list[str]
    overwrite: bool
    """Replace an existing record (only the first run of an app told to)."""


@dataclass
class Tick:
    """What one poll of the live run brought."""

    entry: RunEntry
    delta: Delta
    finished: bool


class RunController:
    """Every run of the app (live ones and opened records), and when each needs a summary."""

    def __init__(
        self,
        record_path: Path | None = None,
        start: SessionFactory = start_session,
        *,
        overwrite: bool = False,
    ) -> None:
        self.runs: list[RunEntry] = []
        self.record_path = record_path
        self.overwrite = overwrite
        """Replace an existing ``record_path`` (the first run's; later ones get new names)."""
        self._start = start
        self._started = 0
        self._summary_busy: set[int] = set()
        self._rows: dict[int, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        """Per-shape rows and idle-probe rows, computed with a summary, for its view."""
        self._device: dict[int, dict[str, Any] | None] = {}
        """How busy the device was (``RunData.device_summary``), computed with a summary."""
        self._summary_due: dict[int, float] = {}
        self.sweeping: SweepRunner | None = None
        """The sweep running now (``RunControl.start_sweep``): no other run starts while it does."""

    @property
    def live(self) -> RunEntry | None:
        """The live run; a followed record only while no run of this app's is live."""
        live = [e for e in self.runs if e.live]
        return next((e for e in live if e.source == "run"), live[0] if live else None)

    def open_record(self, data: RunData) -> RunEntry:
        if data.status == outcome.RUNNING and data.record_path:
            # A live run is writing it: follow it as it grows (``follow``), as a live run.
            from warmscope.core.data.follow import follow  # a live record: rare, and not first
            from warmscope.core.data.reading import RecordError

            with contextlib.suppress(RecordError):
                entry = RunEntry.from_session(len(self.runs) + 1, follow(Path(data.record_path)))
                entry.source = "record"
                self.runs.append(entry)
                return entry
        entry = RunEntry.from_record(len(self.runs) + 1, data)
        self.runs.append(entry)
        if data.count <= INLINE_SUMMARY_MAX:  # cheaper than a worker and a second frame
            self._rows[entry.number] = (shape_rows(data), idle_probe_rows(data))
            if len(data.device_ns):
                self._device[entry.number] = device_summary(data)
            warned = (*data.warnings(), *contention.run_warnings(data))
            self.summary_done(entry, data.summary(), data.count, 0.0, warned)
        return entry

    def start(self, settings: RunSettings) -> RunEntry:
        """Start a run now, on this thread; raises ``WarmscopeError`` or ``OSError`` when it
        cannot start. The app starts its runs in three steps instead: ``request`` and
        ``started`` on the UI thread, ``build`` (the slow part) on a worker."""
        request = self.request(settings)
        return self.started(request, self.build(request))

    def request(self, settings: RunSettings) -> StartRequest:
        """What starting a run of ``settings`` needs: its record's name and command line.
        ``UsageError`` while a sweep runs."""
        if self.sweeping is not None:
            raise UsageError("a sweep is running: Esc on its screen stops it")
        path, command = self._next_record_path(), settings.command_line()
        overwrite = self.overwrite and path is not None and self._started == 0
        return StartRequest(settings, path, command, overwrite)

    def build(self, request: StartRequest) -> LiveRun:
        """Plan the run and start it (any thread): the target resolved (over ``--host``, asked
        there), the record claimed, the child spawned or the connection made. ``WarmscopeError``
        or ``OSError`` when it cannot start; nothing of it is left then."""
        settings, path, command = request.settings, request.record_path, request.command
        if request.overwrite:
            return self._start(settings, path, command, overwrite=True)
        return self._start(settings, path, command)

    def started(self, request: StartRequest, session: LiveRun) -> RunEntry:
        """The run ``build`` started, as a run of the app (the UI thread's: not thread-safe)."""
        self._started += 1
        entry = RunEntry.from_session(len(self.runs) + 1, session)
        self.runs.append(entry)
        return entry

    def adopt(self, session: LiveRun, tag: SweepTag) -> RunEntry:
        """A process a sweep started, as a run of the app: live, tagged with its cell."""
        entry = RunEntry.from_session(len(self.runs) + 1, session)
        entry.sweep = tag
        self.runs.append(entry)
        return entry

    def tag_sweeps(self, docs: list[dict[str, Any]]) -> None:
        """Tag the opened records that are processes of an opened sweep document with their
        cell; a record is known by its file name in its sweep's folder (the document may name
        it by a relative or an absolute path)."""
        tags: dict[tuple[str, str], SweepTag] = {}
        for doc in docs:
            folder, repeat = str(doc.get("folder") or ""), doc.get("repeat")
            for cell in doc.get("cells", []):
                for p in cell.get("processes", []):
                    record = p.get("record") if isinstance(p, dict) else None
                    if not isinstance(record, str) or not isinstance(p.get("repeat"), int):
                        continue
                    path = Path(record)
                    tag = SweepTag(
                        folder or str(path.parent),
                        int(cell.get("index", 0)),
                        str(cell.get("label", "?")),
                        p["repeat"],
                        repeat if isinstance(repeat, int) else 0,
                    )
                    tags[(path.parent.name, path.name)] = tag
        for entry in self.runs:
            if entry.sweep is None and entry.data.record_path:
                path = Path(entry.data.record_path)
                entry.sweep = tags.get((path.parent.name, path.name))

    def cell_runs(self, entry: RunEntry) -> list[RunEntry]:
        """Every run of ``entry``'s sweep cell (its fresh processes of the same settings);
        only ``entry`` for a run of no sweep."""
        tag = entry.sweep
        if tag is None:
            return [entry]
        return [
            e
            for e in self.runs
            if e.sweep is not None and (e.sweep.sweep, e.sweep.cell) == (tag.sweep, tag.cell)
        ]

    def _next_record_path(self) -> Path | None:
        """``--record PATH`` names the first run; later ones get ``PATH-2``, ``PATH-3``…"""
        path = self.record_path
        if path is None or self._started == 0:
            return path
        return path.with_name(f"{path.stem}-{self._started + 1}{path.suffix}")

    def watch(self, session: LiveRun) -> RunEntry:
        """A process of the program ``warmscope exec`` watches, as a live run of the app."""
        entry = RunEntry.from_session(len(self.runs) + 1, session)
        self.runs.append(entry)
        return entry

    def tick(self, viewed: RunEntry | None = None) -> Tick | None:
        """Take the live run's new batch into its view (``viewed`` where it is live: several
        processes of one program are live at once); ``None`` when no run is live."""
        entry = viewed if viewed is not None and viewed.live else self.live
        if entry is None or entry.session is None or entry.cursor is None:
            return None
        update = entry.session.poll(entry.cursor)
        delta = entry.view.ingest(update)
        if update.finished:
            entry.ended_elapsed = entry.session.elapsed()
        return Tick(entry, delta, update.finished)

    # -- summaries ---------------------------------------------------------------------------

    def summary_job(self, entry: RunEntry, *, force: bool = False) -> SummaryJob | None:
        """A job for a worker thread if ``entry`` needs a new summary now, else ``None``.

        The job summarizes a consistent snapshot with the run's own rules (``RunData.summary``)
        and returns ``(summary, iterations summarized, seconds it took, warnings)``; the
        warnings (a noisy run) only once the run has finished: its figures are final then.
        """
        view = entry.view
        if view.summary_count == view.count or entry.number in self._summary_busy:
            return None
        if not force and time.monotonic() < self._summary_due.get(entry.number, 0.0):
            return None
        self._summary_busy.add(entry.number)
        snapshot = entry.snapshot()

        def job() -> tuple[Summary, int, float, tuple[RunWarning, ...]]:
            t0 = time.perf_counter()
            summary = snapshot.summary()
            # Noise is judged once the figures are final; more threads than cores, at once.
            final = snapshot.warnings() if snapshot.finished else []
            warnings = (*final, *contention.run_warnings(snapshot, final=snapshot.finished))
            if snapshot.shape_keys or snapshot.idle_probe:
                self._rows[entry.number] = (shape_rows(snapshot), idle_probe_rows(snapshot))
            if len(snapshot.device_ns):
                self._device[entry.number] = device_summary(snapshot)
            return summary, snapshot.count, time.perf_counter() - t0, warnings

        return job

    def summary_done(
        self,
        entry: RunEntry,
        summary: Summary,
        count: int,
        cost: float,
        warnings: tuple[RunWarning, ...] = (),
    ) -> bool:
        """Keep a finished summary; ``True`` when a newer one is due at once (the run ended)."""
        self._summary_busy.discard(entry.number)
        entry.view.summary = summary
        entry.view.warnings = warnings
        entry.view.summary_count = count
        if entry.number in self._rows:
            entry.view.shapes, entry.view.idle_probe = self._rows.pop(entry.number)
        if entry.number in self._device:
            entry.view.device = self._device.pop(entry.number)
        entry.view.summary_error = ""
        interval = max(SUMMARY_MIN_INTERVAL_S, SUMMARY_COST_FACTOR * cost)
        self._summary_due[entry.number] = time.monotonic() + interval
        return entry.view.finished and count != entry.view.count

    def summary_failed(self, entry: RunEntry, error: BaseException) -> None:
        """A summary job raised: say so in the view; the next tick tries again."""
        self._summary_busy.discard(entry.number)
        entry.view.summary_error = f"{type(error).__name__}: {error}"
        self._summary_due[entry.number] = time.monotonic() + SUMMARY_MIN_INTERVAL_S
