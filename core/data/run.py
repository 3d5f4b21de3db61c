"""``RunData``: one run as measured, live or read back from its record.

The session fills it while the child runs and ``reading.read_run`` rebuilds it from a file, both
through ``schema.apply_line``; the headless summary, ``--json`` (``document``), the digest and the
TUI read it.
Iterations are kept in compact arrays because a trivial model runs tens of thousands of them a
second. A consumer takes what is new with ``since(cursor)``.
"""

from __future__ import annotations

import copy
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple, Protocol

from warmscope.core.child import outcome
from warmscope.core.data import intervals, stats, waits
from warmscope.core.data.labels import label_for
from warmscope.core.data.packing import Batch, MsView, Starts, to_ms, widen
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.waits import CpuWait

NS_PER_MS = 1e6
EXPLAINED = "explained"
"""The kind of the event that carries a first call's explanation, at that call, as the run
that explained it wrote it (``first_call``); views derive their own from the evidence."""


@dataclass
class Event:
    """Something that happened in the child, pinned to an iteration or a setup phase."""

    kind: str
    title: str
    text: str = ""
    iteration: int | None = None
    phase: str | None = None
    ms: float | None = None
    t: float = 0.0
    """Seconds from the run's start, by the parent's clock, when it arrived."""
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "iteration": self.iteration,
            "kind": self.kind,
            "title": self.title,
            "text": self.text,
            "t": round(self.t, 4),
        }
        if self.phase is not None:
            out["phase"] = self.phase
        if self.ms is not None:
            out["ms"] = self.ms
        if self.data:
            out["data"] = self.data
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Event:
        return cls(
            kind=d.get("kind", "info"),
            title=d.get("title", ""),
            text=d.get("text", ""),
            iteration=d.get("iteration"),
            phase=d.get("phase"),
            ms=d.get("ms"),
            t=d.get("t", 0.0),
            data=d.get("data") or {},
        )


class DiskRead(NamedTuple):
    """What one batch of calls read from storage (a ``reads`` line): page-cache misses, a
    file or a library read as it was first used."""

    first: int
    calls: int
    read_bytes: int
    major_faults: int

    @property
    def last(self) -> int:
        return self.first + self.calls - 1


@dataclass
class Cursor:
    """How much of a run a consumer has already taken."""

    iterations: int = 0
    events: int = 0
    samples: int = 0
    device: int = 0


@dataclass
class Update:
    """Everything new since a consumer's last look, in one batch.

    ``phase`` and ``busy`` describe the moment (the setup phase in progress, an iteration
    running long); only a live session knows them.
    """

    first: int
    ms: Sequence[float]
    start_ms: Sequence[float]
    """Empty unless asked for (``since(starts=True)``): a live view does not read them."""
    events: list[Event]
    samples: list[dict[str, Any]]
    status: str
    finished: bool
    phases: dict[str, float] = field(default_factory=dict)
    phase: str | None = None
    busy: dict[str, Any] | None = None
    shapes: Sequence[int] = field(default_factory=list)
    """The new iterations' indices into ``shape_keys`` (empty when the shapes do not vary)."""
    shape_keys: list[str] = field(default_factory=list)
    device_first: int = 0
    device_ns: Sequence[int] = ()
    """The device times new since the last look (integer ns, -1 where the device did not
    time the call), from ``device_first``: they may trail the iterations by a batch."""

    @property
    def ns(self) -> Sequence[int] | None:
        """The new latencies in integer nanoseconds where they are held so (a record read in
        place), else ``None``: a consumer can take them without converting each one."""
        return self.ms.ns if isinstance(self.ms, MsView) else None


class LiveRun(Protocol):
    """What a view needs of a run in progress: ``run_plan.PlannedRun`` (``session.RunSession``).

    The UI takes batches with ``poll`` on its own timer. It reads ``data``'s settled fields
    (settings, target, mode, env, status, record path) directly, and anything that grows
    (iterations, events, profiles) through ``snapshot``: it never learns how the session guards
    its data.
    """

    data: RunData

    def poll(self, cursor: Cursor) -> Update: ...

    def snapshot(self) -> RunData: ...

    def stop(self, grace: float = ...) -> None: ...

    def kill(self) -> None: ...

    def is_finished(self) -> bool: ...

    def elapsed(self) -> float: ...


def _own(value: Any) -> Any:
    """A container of a run's own, holding what ``value`` holds: arrays, lists and maps copied
    (the lists a map holds too: ``_by_iteration``'s events), ``Starts`` by its ``copy``;
    anything else shared as it is."""
    if isinstance(value, (array, list)):
        return value[:]
    if isinstance(value, dict):
        return {k: v[:] if isinstance(v, list) else v for k, v in value.items()}
    if isinstance(value, Starts):
        return value.copy()
    return value


@dataclass
class RunData:
    settings: RunSettings = field(default_factory=RunSettings)
    """As the record gives them (``RunSettings.from_json``: a record of any version)."""
    target: dict[str, Any] = field(default_factory=dict)
    mode: str = ""
    """How the module ran (eager, script, trace, compile): the knob, else the target's own."""
    env: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    phase_reads: dict[str, tuple[int, int]] = field(default_factory=dict)
    """What a setup phase read from disk, where it read any: bytes, major page faults."""
    _ns: array | None = field(default_factory=lambda: array("i"), compare=False, repr=False)
    """Each iteration's latency in integer nanoseconds, as recorded: 32 bits while they fit
    (half the memory), else 64; ``None`` once a batch came in float milliseconds (an early
    record form, a ``--json`` document): ``_ms`` holds them."""
    _ms: array | None = field(default_factory=lambda: array("d"), compare=False, repr=False)
    """The latencies in milliseconds, kept beside ``_ns``; ``None`` until read (``defer_ms``)."""
    start_ms: Starts = field(default_factory=Starts)
    """Each iteration's start: a sequence of floats (ms), decoded from the record when read."""
    events: list[Event] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    status: str = outcome.STARTING
    status_detail: str = ""
    error: dict[str, Any] | None = None
    exit_code: int | None = None
    started: str = ""
    command: list[str] = field(default_factory=list)
    record_path: str | None = None
    stderr_path: str | None = None
    run_id: str | None = None
    profiles: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Operator breakdowns of profiled iterations (see core/child/opprofile.py), by iteration."""
    graphs: dict[str, str] = field(default_factory=dict)
    """TorchScript runs: ``code`` and ``graph`` as loaded, ``optimized`` as last executed."""
    inputs: list[str] = field(default_factory=list)
    """What the model was given, as the child built or loaded it (``float32[1,300,40]``)."""
    inputs_source: str = ""
    """``spec`` (``--input``), ``file`` (``--inputs``) or ``target`` (the factory's own)."""
    shape_keys: list[str] = field(default_factory=list)
    """When ``--dim`` varies the inputs: each shape's key (``T=300``), indexed by ``shape_of``."""
    shape_dims: list[dict[str, Any]] = field(default_factory=list)
    shape_of: array = field(default_factory=lambda: array("h"))
    """Each iteration's index into ``shape_keys`` (-1: not known, e.g. recovered after a crash)."""
    idle_probe: list[dict[str, Any]] = field(default_factory=list)
    """``--idle-probe``: ``[{"idle_s", "ms": [...]}]``."""
    idle_probe_shape: str | None = None
    opening: dict[str, Any] = field(default_factory=dict)
    """``--replay-opening``: ``pause_ms``, ``shapes`` (each replayed call's shape index, as
    served) and ``ms`` (the calls' latencies, a list per replay)."""
    memory: dict[str, float] = field(default_factory=dict)
    """The child's peak memory: ``peak_rss_mb``, ``cuda_max_allocated_mb``."""
    device_ns: array = field(default_factory=lambda: array("q"))
    """On CUDA, each iteration's device time: CUDA events recorded around the call on the
    current stream (ns; -1 where none was taken). Empty where the run timed none."""
    launch_ns: array = field(default_factory=lambda: array("q"))
    """Beside ``device_ns``: how long forward took to return, its work launched (ns; -1)."""
    disk_reads: list[DiskRead] = field(default_factory=list)
    """The batches of calls that read from storage, in order (a run that read none has none)."""
    cpu_waits: list[CpuWait] = field(default_factory=list)
    """How long the child's threads waited for a core, reading by reading, in order."""
    exec: dict[str, Any] = field(default_factory=dict)
    """A process ``warmscope exec`` watched: ``process`` (pid, ppid, argv, executable, python),
    ``modules`` and ``threads`` (by id, as its calls name them), ``streams`` (the records of
    the program's other processes, beside this one). Empty for a run."""
    call_threads: array = field(default_factory=lambda: array("q"))
    """``warmscope exec``: each call's thread (its native id); empty for a run."""
    _by_iteration: dict[int, list[Event]] = field(default_factory=dict, compare=False)
    _summary: tuple[tuple[int, int, int, bool, int], stats.Summary] | None = field(
        default=None, compare=False
    )
    _state: stats.SteadyState | None = field(default=None, compare=False)
    _shapes: (
        tuple[tuple[int, int, int, bool, int], list[tuple[Sequence[int], stats.SteadyState]]] | None
    ) = field(default=None, compare=False)

    @property
    def finished(self) -> bool:
        return self.status in outcome.FINISHED

    @property
    def count(self) -> int:
        return len(self._ns) if self._ns is not None else len(self.ms)

    @property
    def ms(self) -> array:
        """Each iteration's latency in milliseconds (``ns / 1e6``): an ``array('d')`` that grows
        in place as iterations are added. Converted on first read after ``defer_ms``."""
        if self._ms is None:
            self._ms = to_ms(self._ns or ())
        return self._ms

    @property
    def ms_view(self) -> Sequence[float]:
        """The latencies in milliseconds without converting them all: ``ms`` where it exists,
        else a view that converts each latency as it is read (a long record opened in the TUI
        shows a screenful of them)."""
        if self._ms is None and self._ns is not None:
            return MsView(self._ns)
        return self.ms

    @property
    def ns(self) -> array | None:
        """The latencies in integer nanoseconds (``array('i')`` or ``array('q')``), or ``None``
        where some came only in milliseconds. Statistics count these: integers count faster
        than floats."""
        return self._ns

    def latency(self, iteration: int) -> float:
        """One iteration's latency in milliseconds, without converting them all."""
        if self._ms is not None:
            return float(self._ms[iteration])
        assert self._ns is not None
        return float(self._ns[iteration] / NS_PER_MS)

    def defer_ms(self) -> None:
        """Convert to milliseconds only when ``ms`` is read: a report, which needs a few
        latencies and the statistics (counted from nanoseconds), never converts ten million.
        Not for a run another thread fills: ``ms`` must then exist before it grows."""
        if self._ns is not None and self._ms is not None and not self._ms:
            self._ms = None

    def add_iterations(
        self,
        first: int,
        ms: Sequence[float],
        start_ms: Sequence[float] | Batch,
        shapes: Sequence[int] | None = None,
    ) -> None:
        """Add a batch in float milliseconds (from here on, no nanoseconds are kept)."""
        self._check_batch(first, len(ms), shapes)
        if self._ns is not None:
            self.ms  # noqa: B018  (converts what came in nanoseconds before)
            self._ns = None
        self.ms.extend(ms)
        self._add_rest(start_ms, len(ms), shapes)

    def add_iterations_ns(
        self,
        first: int,
        ns: array,
        start_ms: Sequence[float] | Batch,
        shapes: Sequence[int] | None = None,
    ) -> None:
        """Add a batch in integer nanoseconds (``ns``: an integer ``array`` of any width)."""
        self._check_batch(first, len(ns), shapes)
        if self._ns is not None:
            if ns.itemsize > self._ns.itemsize:
                self._ns = widen(self._ns, ns.typecode)
            self._ns.extend(widen(ns, self._ns.typecode))
        if self._ms is not None:
            self._ms.extend(to_ms(ns))
        self._add_rest(start_ms, len(ns), shapes)

    def _check_batch(self, first: int, n: int, shapes: Sequence[int] | None) -> None:
        if first != self.count:  # a gap would shift every later index: refuse it loudly
            raise ValueError(f"iteration batch starts at {first}, expected {self.count}")
        if shapes is not None and len(shapes) != n:
            raise ValueError(f"{len(shapes)} shape indices for {n} iterations")

    def _add_rest(
        self, start_ms: Sequence[float] | Batch, n: int, shapes: Sequence[int] | None
    ) -> None:
        self.start_ms.extend(start_ms)
        if self.shape_keys or shapes is not None:
            # A batch without indices (recovered from the ring after a crash): not known.
            self.shape_of.extend(shapes if shapes is not None else [-1] * n)

    def add_callers(self, first: int, threads: Sequence[int]) -> None:
        """Each call's thread, for the batch of calls that starts at ``first`` (it follows
        that batch); a gap before it reads as thread 0, not known."""
        have = len(self.call_threads)
        if first > have:
            self.call_threads.extend(array("q", [0]) * (first - have))
        self.call_threads.extend(array("q", threads[max(0, have - first) :]))

    def add_disk_read(self, first: int, calls: int, read_bytes: int, major_faults: int) -> None:
        self.disk_reads.append(DiskRead(first, calls, read_bytes, major_faults))

    def add_cpu_waits(self, readings: list[CpuWait]) -> None:
        self.cpu_waits.extend(readings)

    def contended_left_out(self) -> list[int]:
        """Calls left out of the statistics: they waited for a core (``waits.left_out``);
        each shape's first call stays, for what it says of warm-up."""
        if not self.cpu_waits:
            return []
        firsts: set[int] = {0}
        if self.shape_keys:  # each shape's first call, found without the statistics
            seen: set[int] = set()
            for i, k in enumerate(self.shape_of):
                if k not in seen:
                    seen.add(k)
                    firsts.add(i)
        return waits.left_out(self.cpu_waits, self.latency, self.count, firsts)

    def disk_read_at(self, iteration: int) -> DiskRead | None:
        """The batch that holds ``iteration``, where that batch read from storage."""
        k = bisect_left(self.disk_reads, iteration + 1, key=lambda r: r.first) - 1
        if k >= 0 and iteration <= self.disk_reads[k].last:
            return self.disk_reads[k]
        return None

    def add_device(self, first: int, dv: Sequence[int], ln: Sequence[int]) -> None:
        """The device side of the batch that starts at ``first`` (it follows that batch): a
        gap before it is filled with -1 (not timed), an overlap is not taken twice."""
        if len(dv) != len(ln):
            raise ValueError(f"{len(dv)} device times for {len(ln)} launch times")
        have = len(self.device_ns)
        skip = max(0, have - first)
        if first > have:
            filler = array("q", [-1]) * (first - have)
            self.device_ns.extend(filler)
            self.launch_ns.extend(filler)
        self.device_ns.extend(array("q", dv[skip:]))
        self.launch_ns.extend(array("q", ln[skip:]))

    def device_ms(self, iteration: int) -> float | None:
        """One iteration's device time in ms, ``None`` where it has none."""
        if iteration >= len(self.device_ns) or self.device_ns[iteration] < 0:
            return None
        return self.device_ns[iteration] / NS_PER_MS

    def launch_ms(self, iteration: int) -> float | None:
        """How long forward took to return in one iteration (ms), ``None`` where not timed."""
        if iteration >= len(self.launch_ns) or self.launch_ns[iteration] < 0:
            return None
        return self.launch_ns[iteration] / NS_PER_MS

    def add_event(self, ev: Event) -> None:
        self.events.append(ev)
        if ev.iteration is not None:
            self._by_iteration.setdefault(ev.iteration, []).append(ev)

    def since(self, cursor: Cursor, *, in_place: bool = False, starts: bool = True) -> Update:
        """What is new since ``cursor``, which is advanced past it.

        ``in_place``: the latencies, starts and shape indices are the run's own (read, not
        copied; starts stay packed), for a run that no longer grows: a record of millions of
        iterations is taken whole without a copy of them.
        ``starts``: whether the update carries start times (else ``start_ms`` is empty): a
        live view polled many times a second never reads them, and a packed batch's starts
        cost more to decode than the rest of it.
        """
        first = cursor.iterations
        whole = in_place and not first
        if not starts:
            start_ms: Sequence[float] = ()
        else:
            start_ms = self.start_ms if whole else self.start_ms[first:]
        update = Update(
            first=first,
            # Copies are arrays sliced in C: no Python float per iteration.
            ms=self.ms_view if whole else self.ms[first:],
            start_ms=start_ms,
            events=self.events[cursor.events :],
            samples=self.samples[cursor.samples :],
            status=self.status,
            finished=self.finished,
            phases=dict(self.phases),
            shapes=(self.shape_of if whole else self.shape_of[first:]) if self.shape_keys else [],
            shape_keys=list(self.shape_keys),
        )
        update.device_first = cursor.device
        update.device_ns = self.device_ns if whole else self.device_ns[cursor.device :]
        cursor.iterations = self.count
        cursor.events = len(self.events)
        cursor.samples = len(self.samples)
        cursor.device = len(self.device_ns)
        return update

    def snapshot(self) -> RunData:
        """A copy that later arrivals do not change: safe to read on another thread.

        Every field's container is copied (``_own``), so a field added to ``RunData`` is
        copied with the rest; what they hold is shared: an event, a sample or a profile never
        changes once added.
        """
        snap = copy.copy(self)
        for f in fields(self):
            setattr(snap, f.name, _own(getattr(self, f.name)))
        return snap

    def events_at(self, iteration: int) -> list[Event]:
        return self._by_iteration.get(iteration, [])

    def label(self, iteration: int) -> str | None:
        evs = self._by_iteration.get(iteration)
        if not evs:
            return None
        return label_for([(e.kind, e.title) for e in evs])

    def labelled(self) -> dict[int, str]:
        out = {}
        for i in sorted(self._by_iteration):
            lab = self.label(i)
            if lab:
                out[i] = lab
        return out

    def summary(self) -> stats.Summary:
        """Latency statistics; profiled iterations are left out (the profiler slows them)
        unless the run's settings say ``profiled_in_stats``.

        Cached per (iterations, profiles): a long run's summary sorts hundreds of thousands
        of values, and the end of a run asks for it several times.
        """
        counted = self.settings.profiled_in_stats
        key = (self.count, len(self.profiles), len(self.events), counted, len(self.cpu_waits))
        if self._summary is None or self._summary[0] != key:
            exclude, busy = self.stats_inputs()
            values, per_ms = self._latencies()
            if self.shape_keys:
                overall, states = stats.shape_states(
                    values, self.shape_of, len(self.shape_keys), exclude, busy, per_ms=per_ms
                )
                self._shapes = (key, states)
                self._summary = (key, overall)
            else:
                self._state = stats.steady_state(
                    values, exclude=exclude, known_warmup=busy, per_ms=per_ms
                )
                self._summary = (key, self._state.summary)
        return self._summary[1]

    def steady_state(self) -> stats.SteadyState | None:
        """What the statistics of a run of one shape were counted from; ``None`` where the
        shapes vary (``shape_states``)."""
        if self.shape_keys:
            return None
        self.summary()
        return self._state

    def counted(self) -> tuple[Any, ...]:
        """The summary and what it was counted from (small: no latency in it), for
        ``take_counted`` on the same run in another process."""
        self.summary()
        return self._summary, self._state, self._shapes

    def take_counted(self, counted: tuple[Any, ...]) -> None:
        self._summary, self._state, self._shapes = counted

    def _latencies(self) -> tuple[Sequence[float], float | None]:
        """What the statistics read: the nanoseconds where kept (with their scale), else the
        milliseconds."""
        return (self._ns, NS_PER_MS) if self._ns is not None else (self.ms, None)

    def profiled_here(self) -> list[int]:
        """The iterations this process ran under the profiler. Profiles taken in a separate
        process (``"separate": true``) describe that process's iterations: none of this
        run's latencies was slowed by them."""
        return sorted(i for i, p in self.profiles.items() if not p.get("separate"))

    def shape_summaries(self) -> list[tuple[Sequence[int], stats.Summary]]:
        """Each shape's iterations and statistics, in the order of ``shape_keys``."""
        return [(idx, state.summary) for idx, state in self.shape_states()]

    def shape_states(self) -> list[tuple[Sequence[int], stats.SteadyState]]:
        """Each shape's iterations and what its statistics were counted from."""
        if not self.shape_keys:
            return []
        self.summary()
        assert self._shapes is not None
        return self._shapes[1]

    def first_calls(self) -> list[tuple[int, str | None, stats.SteadyState]]:
        """Each shape's first call with its shape's key and steady state; iteration 0 (and
        the run's state) where the shapes do not vary."""
        if self.shape_keys:
            return [
                (int(idx[0]), self.shape_keys[k], state)
                for k, (idx, state) in enumerate(self.shape_states())
                if len(idx)
            ]
        state = self.steady_state()
        return [(0, None, state)] if state is not None and self.count else []

    def slow_first_calls(self) -> list[int]:
        """The first calls that cost more than their shape's steady state can explain
        (``stats.first_call_slow``)."""
        out = []
        for first, _, state in self.first_calls():
            sigma = state.reference[1] if state.reference is not None else 0.0
            if stats.first_call_slow(self.latency(first), state.summary.p50_ms, sigma):
                out.append(first)
        return out

    def stats_inputs(self) -> tuple[list[int], list[int]]:
        """What ``stats.summarize`` needs beside the latencies: the iterations to leave out
        (profiled ones, unless the run counts them) and those whose events show warm-up work.
        """
        keep = self.settings.profiled_in_stats
        exclude = [] if keep else self.profiled_here()
        return exclude + self.contended_left_out(), sorted(self.labelled())

    def warnings(self) -> list[intervals.RunWarning]:
        """Why this run's figures may mislead: noise, a warm-up hidden in it, no steady state
        (``intervals.run_warnings``, over the iterations the statistics count)."""
        exclude, _ = self.stats_inputs()
        summary = self.summary()
        if self.shape_keys:
            return self._shape_warnings(exclude)
        state = self._state  # counted with this summary
        values = self._latencies()[0] if state is not None else self.ms  # only its length read
        return intervals.run_warnings(values, summary.steady_from, exclude, state)

    def _shape_warnings(self, exclude: list[int]) -> list[intervals.RunWarning]:
        """Each shape's warnings, named by its key: a mix of shapes is not noise, each shape's
        own spread is. A warning every shape gives is said once, for all of them."""
        left_out = set(exclude)
        per_shape: list[tuple[str, list[intervals.RunWarning]]] = []
        for k, (idx, state) in enumerate(self.shape_states()):
            kept = [i for i in idx if i not in left_out] if left_out else idx
            sf = state.summary.steady_from
            local_sf = None if sf is None else bisect_left(kept, sf)  # both in run order
            # Only the length of what is passed is read where the state is given.
            warns = intervals.run_warnings(range(len(kept)), local_sf, (), state)
            per_shape.append((self.shape_keys[k], warns))
        out: list[intervals.RunWarning] = []
        seen: set[str] = set()
        for key, warns in per_shape:
            for w in warns:
                if w.code == "not_steady":
                    if w.code not in seen:
                        seen.add(w.code)
                        shapes = [k for k, ws in per_shape if any(x.code == w.code for x in ws)]
                        out.append(
                            intervals.RunWarning(
                                w.code, f"{', '.join(shapes)}: {w.text}" if shapes else w.text
                            )
                        )
                    continue
                out.append(intervals.RunWarning(w.code, f"{key}: {w.text}"))
        if "not_steady" not in seen and self.summary().steady_from is None:
            out.insert(0, intervals.RunWarning("not_steady", "not steady within the run"))
        return out
