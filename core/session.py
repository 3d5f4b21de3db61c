"""``RunSession``: one run of the agent in a fresh child process, read, sampled and recorded.

Threads: one reader over both of the child's pipes (protocol on stdout, logs and markers on
stderr), one sampler (psutil/NVML at ``settings.sample_hz``), and, during a stop, one escalation
timer. Consumers (the headless CLI, the TUI) never get a callback per iteration: they call
``poll`` on their own timer and receive everything new since their last call, in one batch.

Start the session from a long-lived thread (the main one): the child's parent-death signal
fires when the *thread* that spawned it exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from warmscope.core import outcome, protocol
from warmscope.core.fold import apply_line, event_line, iterations_line, record_line
from warmscope.core.jitlog import ParsedEvent, StderrParser
from warmscope.core.record import VERSION, RecordWriter, default_record_path
from warmscope.core.ring import IterationRing
from warmscope.core.run import Cursor, Event, RunData, Update
from warmscope.core.sampler import Sampler, host_environment
from warmscope.core.settings import RunSettings
from warmscope.core.targets import Target

AGENT = Path(__file__).resolve().parent / "agent.py"
READ_CHUNK = 1 << 16
IDLE_FLUSH_S = 0.1
READ_PAUSE_S = 0.005
MAX_STDERR_LINE = 1 << 20
RECORD_FLUSH_S = 0.25
STOP_GRACE_S = 3.0
RUN_ID_VAR = "WARMSCOPE_RUN_ID"


class RunSession:
    """Spawn the agent for ``settings``, collect everything it reports, record it."""

    def __init__(
        self,
        settings: RunSettings,
        *,
        record_path: Path | None = None,
        command: list[str] | None = None,
    ) -> None:
        self.settings = settings
        self.target: Target = settings.resolve()  # raises SettingsError: nothing spawned
        self.mode = settings.effective_mode(self.target)
        self.jit_log = settings.effective_jit_log(self.target)
        self.record_path = record_path or default_record_path(settings.target, self.mode)
        self.stderr_path = self.record_path.with_suffix(".stderr.txt")
        self.run_id = f"{os.getpid()}-{time.time_ns()}"
        self._header = {
            "type": "header",
            "format": "warmscope-record",
            "version": VERSION,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": command or [],
            "settings": settings.to_json(),
            "target": self.target.to_json(),
            "mode": self.mode,
            "stderr_file": str(self.stderr_path),
            "run_id": self.run_id,
        }
        self._header = json.loads(json.dumps(self._header, default=str))
        self.data = RunData(record_path=str(self.record_path))
        apply_line(self.data, self._header)
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self.phase: str | None = None
        """The setup phase in progress (live only: the record keeps each phase's time)."""
        self.busy: dict[str, Any] | None = None
        """While one iteration runs long: ``{"iteration", "ms", "activity"}`` (live only)."""
        self._t0 = 0.0
        self._done: dict[str, Any] | None = None
        self._stop_requested = False
        self._timed_out = False
        self._killed = False
        self._writer: RecordWriter | None = None
        self._stderr_file: Any = None
        self._parser = StderrParser()
        self._context: tuple[str, object] = ("phase", "start")

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self.ring = IterationRing.create()
        self._writer = RecordWriter(self.record_path)
        self._stderr_file = self.stderr_path.open("wb")
        self._writer.write(self._header)
        self._commit({"type": "env", "env": host_environment()})
        self._writer.flush()
        python = self.settings.python or sys.executable
        self._t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [python, str(AGENT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._child_env(),
            start_new_session=True,  # its own process group: stop it and its workers together
            close_fds=True,
            pass_fds=(self.ring.fd,),
        )
        self._commit({"type": "spawned", "pid": self.proc.pid})
        assert self.proc.stdin is not None
        self.proc.stdin.write(protocol.encode(self._agent_config()))
        self.proc.stdin.flush()  # stays open: its EOF tells the child the parent is gone
        threading.Thread(target=self._read, name="warmscope-reader", daemon=True).start()
        threading.Thread(target=self._sample, name="warmscope-sampler", daemon=True).start()

    def _agent_config(self) -> dict[str, Any]:
        knobs = dict(self.settings.knobs)
        knobs["mode"] = self.mode
        profile_iters, profile_steady = self.settings.profile_plan()
        return {
            "parent_pid": os.getpid(),
            "target": self.target.to_json(),
            "inputs": [s.to_json() for s in self.settings.input_specs(self.target)],
            "mode": self.mode,
            "knobs": knobs,
            "iters": self.settings.iters,
            "duration": self.settings.duration,
            "markers": bool(self.jit_log or self.settings.torch_logs),
            "profile_iters": profile_iters,
            "profile_steady": profile_steady,
            "trace_prefix": str(self.record_path.with_suffix("")),
            "ring_fd": self.ring.fd,
            "ring_slots": self.ring.slots,
        }

    def _child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("PYTORCH_JIT_LOG_LEVEL", None)
        env.pop("TORCH_LOGS", None)
        if self.jit_log:
            env["PYTORCH_JIT_LOG_LEVEL"] = self.jit_log
        if self.settings.torch_logs:
            env["TORCH_LOGS"] = self.settings.torch_logs
        from warmscope.core.knobs import KNOBS

        for k in KNOBS:
            value = self.settings.knobs.get(k.name)
            if k.apply.startswith("env:") and value is not None:
                env[k.apply.removeprefix("env:")] = str(value)
        env.update(self.settings.env)
        env["PYTHONUNBUFFERED"] = "1"
        # Inherited by everything the child starts (compile workers too): finds any survivor.
        env[RUN_ID_VAR] = self.run_id
        return env

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Graceful stop: SIGINT (the agent finishes and reports), then SIGTERM, then SIGKILL."""
        proc = self.proc
        if proc is None or self.finished.is_set() or self._stop_requested:
            return
        self._stop_requested = True
        self._signal(signal.SIGINT, group=False)

        def escalate() -> None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if self.finished.wait(grace):
                    return
                self._signal(sig, group=True)

        threading.Thread(target=escalate, name="warmscope-stop", daemon=True).start()

    def kill(self) -> None:
        """SIGKILL the child and everything in its process group, now."""
        self._stop_requested = True
        self._killed = True
        self._signal(signal.SIGKILL, group=True)

    def _signal(self, sig: int, *, group: bool) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(proc.pid, sig)
            else:
                os.kill(proc.pid, sig)

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

    def elapsed(self) -> float:
        return time.monotonic() - self._t0 if self._t0 else 0.0

    # -- consumers ---------------------------------------------------------------------------

    def poll(self, cursor: Cursor) -> Update:
        """What is new since ``cursor`` (which is advanced), in one batch."""
        with self.lock:
            update = self.data.since(cursor)
            update.phase, update.busy = self.phase, self.busy
        return update

    def snapshot(self) -> RunData:
        """The run as measured so far, a consistent copy that later arrivals leave alone."""
        with self.lock:
            return self.data.snapshot()

    def is_finished(self) -> bool:
        return self.finished.is_set()

    # -- reading the child ---------------------------------------------------------------

    def _read(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        selector = selectors.DefaultSelector()
        buffers = {proc.stdout.fileno(): b"", proc.stderr.fileno(): b""}
        out_fd = proc.stdout.fileno()
        for stream in (proc.stdout, proc.stderr):
            os.set_blocking(stream.fileno(), False)
            selector.register(stream.fileno(), selectors.EVENT_READ)
        deadline = self._t0 + self.settings.timeout if self.settings.timeout else None
        last_record_flush = time.monotonic()
        while selector.get_map():
            ready = selector.select(IDLE_FLUSH_S)
            got = 0
            for key, _ in ready:
                fd = int(key.fd)
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(fd)
                    if buffers[fd]:
                        self._lines(fd == out_fd, [buffers[fd]])
                    continue
                got += len(chunk)
                lines = (buffers[fd] + chunk).split(b"\n")
                buffers[fd] = lines.pop()
                if fd != out_fd and len(buffers[fd]) > MAX_STDERR_LINE:
                    lines.append(buffers[fd])  # a newline-less flood: cut it, keep memory bounded
                    buffers[fd] = b""
                self._lines(fd == out_fd, lines)
            now = time.monotonic()
            if ready and got < READ_CHUNK // 4:
                # Light traffic: let lines pile up in the pipe, so that a child writing a marker
                # every iteration rarely has to wake this thread (most of what a marker costs it).
                # Heavy traffic (a log flood) is read at full speed so the child never waits.
                time.sleep(READ_PAUSE_S)
            elif not ready:
                self._emit(self._parser.flush())
            if now - last_record_flush > RECORD_FLUSH_S:
                with self.lock:
                    self._flush_record()
                last_record_flush = now
            if deadline and now > deadline and not self._timed_out:
                self._timed_out = True
                self.stop()
        selector.close()
        proc.wait()
        self._finish(proc.returncode)

    def _lines(self, is_protocol: bool, lines: list[bytes]) -> None:
        with self.lock:
            if is_protocol:
                for line in lines:
                    if line.strip():
                        self._message(line)
            else:
                self._stderr(lines)

    def _stderr(self, lines: list[bytes]) -> None:
        raw: list[bytes] = []
        it_marker = protocol.MARKER + b"it "
        skip = len(it_marker)
        for line in lines:
            if line.startswith(it_marker) and line[skip:].isdigit():
                # The common case, one per iteration. A new iteration closes the open block
                # (a graph dump), so it reaches the screen now, not when the next line comes.
                self._emit(self._parser.flush())
                self._context = ("it", int(line[skip:]))
                continue
            mark = protocol.parse_marker(line)
            if mark is not None:
                self._emit(self._parser.flush())
                kind, value = mark
                self._context = (
                    ("it", int(value))
                    if kind == "it" and value.isdigit()
                    else (("it", None) if kind == "loop" else ("phase", value))
                )
                continue
            raw.append(line)
            text = line.decode(errors="replace").rstrip("\r")
            context = self._context
            if context == ("it", None):
                # No marker (a C++ write with no log capture on): the iteration in progress as
                # this line is read, from the child's shared counter.
                context = ("approx", max(self.ring.completed(), self.data.count))
            self._emit(self._parser.feed(text, context))
        if raw and self._stderr_file is not None:
            self._stderr_file.write(b"\n".join(raw) + b"\n")

    def _emit(self, parsed: list[ParsedEvent]) -> None:
        for p in parsed:
            kind, where = p.context
            data = dict(p.data)
            if kind in ("it", "approx"):
                if kind == "approx":
                    data["approx_iteration"] = True
                iteration = int(where) if isinstance(where, int) else self.data.count
                self._add_event(Event(p.kind, p.title, p.text, iteration=iteration, data=data))
            else:
                self._add_event(Event(p.kind, p.title, p.text, phase=str(where), data=data))

    def _add_event(self, ev: Event) -> None:
        ev.t = self.elapsed()
        self._commit(event_line(ev))

    def _commit(self, line: dict[str, Any], *, native: bool = False) -> None:
        """Write one record line and fold that same line into the live data.

        A line built here (not decoded from the child) is folded as it reads back from JSON
        (tuples become lists, say), so the live run and its replay hold equal data.
        ``native``: the line already holds nothing but JSON's own types.
        """
        if not native:
            line = json.loads(json.dumps(line, default=str))
        if self._writer is not None:
            self._writer.write(line)
        apply_line(self.data, line)

    def _message(self, line: bytes) -> None:
        try:
            msg = protocol.decode(line)
        except ValueError:
            self._add_event(
                Event("stderr", "undecodable protocol line", line.decode(errors="replace"))
            )
            return
        kind = msg["t"]
        if kind == "iters":
            self.busy = None
        elif kind == "phase_start":
            self.phase = msg["name"]
        elif kind == "busy":
            self.busy = msg
        elif kind == "done":
            self._done = msg
        elif kind == "hello" and msg.get("v") != protocol.VERSION:
            self._add_event(
                Event("info", f"agent speaks protocol {msg.get('v')}, expected {protocol.VERSION}")
            )
        entry = record_line(msg, self.elapsed())
        if entry is not None:
            self._commit(entry, native=True)  # decoded from the child's JSON
            if kind == "error" and self._writer is not None:
                self._writer.flush()

    def _flush_record(self) -> None:
        if self._writer is not None:
            self._writer.flush()
        if self._stderr_file is not None:
            self._stderr_file.flush()

    # -- sampling ------------------------------------------------------------------------

    def _sample(self) -> None:
        proc = self.proc
        assert proc is not None
        device = str(self.settings.knobs.get("device") or "cpu")
        gpu_index = int(device.partition(":")[2] or 0) if device.startswith("cuda") else None
        try:
            sampler = Sampler(proc.pid, gpu_index)
        except Exception:
            return  # the child is already gone
        period = 1.0 / max(self.settings.sample_hz, 0.1)
        while not self.finished.wait(period):
            reading = sampler.sample()
            if reading is None:
                return
            reading["t"] = round(self.elapsed(), 3)
            with self.lock:
                reading["iteration"] = self.data.count
                self._commit({"type": "sample", **reading})

    # -- the end -------------------------------------------------------------------------

    def _finish(self, returncode: int) -> None:
        with self.lock:
            self._emit(self._parser.flush())
            self._recover_unsent()
            status, detail, exit_code = self._outcome(returncode)
            self.busy = None
            end = {
                "type": "end",
                "status": status,
                "detail": detail,
                "exit_code": exit_code,
                "returncode": returncode,
                "iterations": self.data.count,
            }
            apply_line(self.data, end)
            if self._writer is not None:
                # The same line, with the summary of the run as folded (a convenience for
                # readers of the raw file: `read_run` computes its own).
                self._writer.write({**end, "summary": self.data.summary().to_dict()})
                self._writer.close()
            if self._stderr_file is not None:
                self._stderr_file.close()
            if self.proc is not None and self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
        self.finished.set()

    def _recover_unsent(self) -> None:
        """Iterations the child measured but died before sending, from the shared ring."""
        first = self.data.count
        ns, st = self.ring.read_ns(first)
        if ns:
            self._commit(iterations_line(first, ns, st), native=True)
            self._add_event(
                Event(
                    "info",
                    f"recovered {len(ns)} iteration(s) measured before the child died",
                    iteration=first,
                )
            )
        self.ring.close()

    def _outcome(self, returncode: int) -> tuple[str, str, int]:
        """(status, detail, exit code) from what the child said and how it ended."""
        error = self.data.error
        done = self._done
        if self._timed_out:
            return (
                outcome.TIMEOUT,
                f"stopped after --timeout {self.settings.timeout:g} s",
                outcome.EXIT_FAILED,
            )
        if error is not None:
            where = (
                f"iteration {error['iteration']}"
                if error.get("iteration") is not None
                else error.get("where")
            )
            if error.get("usage"):
                return outcome.FAILED, str(error.get("message")), outcome.EXIT_USAGE
            return outcome.FAILED, f"{where}: {error.get('message')}", outcome.EXIT_FAILED
        if done is not None:
            if done.get("status") == outcome.STOPPED:
                return outcome.STOPPED, "stopped by the user", outcome.EXIT_STOPPED
            return outcome.OK, f"{self.data.count} iterations", outcome.EXIT_OK
        if self._stop_requested:
            how = "killed" if self._killed else "stopped"
            return outcome.STOPPED, f"{how} by the user", outcome.EXIT_STOPPED
        if returncode < 0:
            name = (
                signal.Signals(-returncode).name
                if -returncode in signal.valid_signals()
                else str(-returncode)
            )
            return outcome.CRASHED, f"the child died from {name}", outcome.EXIT_FAILED
        return (
            outcome.CRASHED,
            f"the child exited with code {returncode} before finishing",
            outcome.EXIT_FAILED,
        )
