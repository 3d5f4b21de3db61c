"""A live run without a child process or torch: a script of moments, played one per poll.

It speaks the same ``LiveRun`` protocol as ``RunSession`` and builds its data with the same fold
(record lines through ``fold.apply_line``), so the TUI's live path (setup phases, an iteration
that runs long, a failure) can be driven step by step in tests that need no torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warmscope.core.child import outcome
from warmscope.core.data.fold import apply_line, iterations_line
from warmscope.core.data.run import Cursor, RunData, Update
from warmscope.core.data.settings import RunSettings


@dataclass
class Moment:
    """One step of the script: record lines to fold, and what the run is doing meanwhile."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    phase: str | None = None
    busy: dict[str, Any] | None = None


def iterations(first: int, ms: list[float]) -> dict[str, Any]:
    starts = list(itertools.accumulate([0.0, *ms[:-1]]))
    return iterations_line(
        first, [round(v * 1e6) for v in ms], [round((first + s) * 1e6) for s in starts]
    )


def end(status: str = outcome.OK, detail: str = "", exit_code: int = 0) -> dict[str, Any]:
    return {"type": "end", "status": status, "detail": detail, "exit_code": exit_code}


class FakeSession:
    def __init__(
        self, settings: RunSettings, script: list[Moment], record_path: Path | None = None
    ) -> None:
        self.data = RunData(record_path=str(record_path) if record_path else None)
        self.mode = str(settings.knobs.get("mode") or "eager")
        apply_line(
            self.data,
            {
                "type": "header",
                "settings": settings.to_json(),
                "target": {"spec": settings.target},
                "mode": self.mode,
                "run_id": "fake",
            },
        )
        apply_line(self.data, {"type": "spawned", "pid": 0})
        self.script = list(script)
        self.phase: str | None = None
        self.busy: dict[str, Any] | None = None
        self.polls = 0
        self.stopped = False
        self.killed = False

    def poll(self, cursor: Cursor) -> Update:
        self.polls += 1
        if self.script:
            moment = self.script.pop(0)
            for line in moment.lines:
                apply_line(self.data, line)
            self.phase, self.busy = moment.phase, moment.busy
        update = self.data.since(cursor)
        update.phase, update.busy = self.phase, self.busy
        return update

    def snapshot(self) -> RunData:
        return self.data.snapshot()

    def stop(self, grace: float = 0.0) -> None:
        self.stopped = True
        self.script = [Moment([end(outcome.STOPPED, "stopped by the user", 130)])]

    def kill(self) -> None:
        self.killed = True
        self.stop()

    def is_finished(self) -> bool:
        return self.data.finished

    def elapsed(self) -> float:
        return self.polls * 0.1


def factory(
    script: list[Moment], made: list[FakeSession] | None = None
) -> Callable[[RunSettings, Path | None, list[str]], FakeSession]:
    """A session factory for ``build_app(start=...)``; each session it makes lands in ``made``."""

    def start(settings: RunSettings, record_path: Path | None, command: list[str]) -> FakeSession:
        session = FakeSession(settings, list(script), record_path)
        if made is not None:
            made.append(session)
        return session

    return start
