"""The run record: JSONL appended as the run goes, readable after any crash.

Each line is one JSON object with a ``type`` (listed in ``fold``, which applies them). Lines are
buffered and written in batches; a run that dies leaves every batch written before it, and the
reader ignores a torn last line.

Default location: ``$WARMSCOPE_RECORD_DIR``, else ``$XDG_STATE_HOME/warmscope/runs``, else
``~/.local/state/warmscope/runs``.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import IO, Any

from warmscope.core import outcome
from warmscope.core.fold import apply_line, mode_from_settings
from warmscope.core.outcome import UsageError
from warmscope.core.run import Event, RunData

FORMAT = "warmscope-record"
VERSION = 1


class RecordError(UsageError):
    """A file that is not a readable warmscope record; the message names it."""


def record_dir() -> Path:
    if os.environ.get("WARMSCOPE_RECORD_DIR"):
        return Path(os.environ["WARMSCOPE_RECORD_DIR"])
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "warmscope" / "runs"


def default_record_path(target: str, mode: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(target.split(":")[-1]).stem or "run")[:40]
    return record_dir() / f"{stamp}-{name}-{mode}-{os.getpid()}.jsonl"


class RecordWriter:
    """Appends record lines; ``flush`` writes what is buffered (the session calls it often)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: IO[str] = path.open("w", encoding="utf-8")
        self._buffer: list[str] = []

    def write(self, entry: dict[str, Any]) -> None:
        self._buffer.append(json.dumps(entry, separators=(",", ":"), default=str) + "\n")

    def flush(self) -> None:
        if self._buffer:
            self._file.write("".join(self._buffer))
            self._buffer.clear()
            self._file.flush()

    def close(self) -> None:
        self.flush()
        self._file.close()


def read_run(path: Path) -> RunData:
    """A record (``.jsonl``) or a ``--json`` document, as ``RunData``."""
    try:
        with path.open(encoding="utf-8") as f:
            head = f.read(1)
            f.seek(0)
            if head == "{" and path.suffix == ".json":
                return _from_document(json.load(f), path)
            return _from_lines(f, path)
    except FileNotFoundError:
        raise RecordError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise RecordError(f"{path} is a folder, not a record") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path} is not a warmscope record: {exc}") from None


def _from_lines(lines: IO[str], path: Path) -> RunData:
    data = RunData(record_path=str(path))
    seen_header = False
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            if not line.endswith("\n"):
                break  # the torn last line of a run that died mid-write
            raise RecordError(f"{path}:{number}: not valid JSON") from None
        kind = entry.get("type") if isinstance(entry, dict) else None
        if not seen_header:
            if kind != "header" or entry.get("format") != FORMAT:
                raise RecordError(f"{path} is not a warmscope record (no header line)")
            seen_header = True
        apply_line(data, entry)
    if not seen_header:
        raise RecordError(f"{path} is empty, not a warmscope record")
    if not data.finished:
        data.status = outcome.CRASHED
        data.status_detail = "the record ends before the run did (warmscope itself stopped)"
    return data


def _from_document(doc: dict[str, Any], path: Path) -> RunData:
    if doc.get("format") != "warmscope-run":
        raise RecordError(f"{path} is not a warmscope --json document")
    data = RunData(
        settings=doc.get("settings", {}),
        target=doc.get("target", {}),
        env=doc.get("env", {}),
        mode=doc.get("mode") or mode_from_settings(doc.get("settings", {}), doc.get("target", {})),
        status=doc.get("status", outcome.CRASHED),
        status_detail=doc.get("status_detail", ""),
        error=doc.get("error"),
        exit_code=doc.get("exit_code"),
        started=doc.get("started", ""),
        command=doc.get("command", []),
        record_path=str(path),
        stderr_path=doc.get("stderr_file"),
        run_id=doc.get("run_id"),
    )
    data.phases = {p["name"]: p["ms"] for p in doc.get("phases", [])}
    rows = doc.get("iterations", [])
    data.add_iterations(0, [r["ms"] for r in rows], [r.get("start_ms", 0.0) for r in rows])
    for e in doc.get("events", []):
        data.add_event(Event.from_json(e))
    data.samples = doc.get("samples", [])
    data.profiles = {p["iteration"]: p for p in doc.get("profiles", [])}
    data.graphs = doc.get("graphs", {})
    return data
