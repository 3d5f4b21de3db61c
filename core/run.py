"""``RunData``: one run as measured, live or read back from its record.

The session fills it while the child runs; ``record.read_record`` rebuilds it from a file; the
headless summary, ``--json`` and the TUI all read it. Iterations are kept in compact arrays
because a trivial model runs tens of thousands of them a second.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from warmscope.core import stats
from warmscope.core.jitlog import label_for

STDERR_TAIL_LINES = 200
FINISHED = ("ok", "failed", "crashed", "timeout", "stopped")


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


@dataclass
class RunData:
    settings: dict[str, Any] = field(default_factory=dict)
    target: dict[str, Any] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    ms: array = field(default_factory=lambda: array("d"))
    start_ms: array = field(default_factory=lambda: array("d"))
    events: list[Event] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    status: str = "starting"
    status_detail: str = ""
    error: dict[str, Any] | None = None
    exit_code: int | None = None
    started: str = ""
    command: list[str] = field(default_factory=list)
    record_path: str | None = None
    stderr_path: str | None = None
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))
    profiles: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Operator breakdowns of profiled iterations (see core/opprofile.py), by iteration."""
    graphs: dict[str, str] = field(default_factory=dict)
    """TorchScript runs: ``code`` and ``graph`` as loaded, ``optimized`` as last executed."""
    busy: dict[str, Any] | None = None
    """While one iteration runs long: ``{"iteration", "ms", "activity"}``."""
    _by_iteration: dict[int, list[Event]] = field(default_factory=dict)
    _summary: tuple[tuple[int, int, int, bool], stats.Summary] | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def count(self) -> int:
        return len(self.ms)

    def add_iterations(self, first: int, ms: list[float], start_ms: list[float]) -> None:
        if first != len(self.ms):  # a gap would shift every later index: refuse it loudly
            raise ValueError(f"iteration batch starts at {first}, expected {len(self.ms)}")
        self.ms.extend(ms)
        self.start_ms.extend(start_ms)

    def add_event(self, ev: Event) -> None:
        self.events.append(ev)
        if ev.iteration is not None:
            self._by_iteration.setdefault(ev.iteration, []).append(ev)

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
        counted = bool(self.settings.get("profiled_in_stats", False))
        key = (len(self.ms), len(self.profiles), len(self.events), counted)
        if self._summary is None or self._summary[0] != key:
            exclude, busy = self.stats_inputs()
            self._summary = (key, stats.summarize(self.ms, exclude=exclude, known_warmup=busy))
        return self._summary[1]

    def stats_inputs(self) -> tuple[list[int], list[int]]:
        """What ``stats.summarize`` needs beside the latencies: the iterations to leave out
        (profiled ones, unless the run counts them) and those whose events show warm-up work.
        """
        keep = bool(self.settings.get("profiled_in_stats", False))
        exclude = [] if keep else sorted(self.profiles)
        return exclude, sorted(self.labelled())

    # -- the --json document ----------------------------------------------------------------

    def to_document(self) -> dict[str, Any]:
        labels = self.labelled()
        iterations = []
        for i, (ms, st) in enumerate(zip(self.ms, self.start_ms, strict=True)):
            row: dict[str, Any] = {"i": i, "ms": round(ms, 6), "start_ms": round(st, 6)}
            if i in labels:
                row["label"] = labels[i]
            if i in self.profiles:
                row["profiled"] = True
            iterations.append(row)
        return {
            "format": "warmscope-run",
            "version": 1,
            "started": self.started,
            "command": self.command,
            "settings": self.settings,
            "target": self.target,
            "env": self.env,
            "status": self.status,
            "status_detail": self.status_detail,
            "exit_code": self.exit_code,
            "error": self.error,
            "phases": [{"name": k, "ms": v} for k, v in self.phases.items()],
            "iterations": iterations,
            "events": [e.to_json() for e in self.events],
            "samples": self.samples,
            "profiles": [self.profiles[i] for i in sorted(self.profiles)],
            "graphs": self.graphs,
            "summary": self.summary().to_dict(),
            "record": self.record_path,
            "stderr_file": self.stderr_path,
        }
