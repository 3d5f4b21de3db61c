"""``RunSession``: one run of the agent in a fresh child process, read, sampled and recorded.

Threads: one reader over both of the child's pipes (protocol on stdout, logs and markers on
stderr), one sampler (psutil/NVML at ``settings.sample_hz``), and, during a stop, one escalation
timer. Consumers (the headless CLI, the TUI) never get a callback per iteration: they call
``poll`` on their own timer and receive everything new since their last call, in one batch.

The run owns its process tree: it ends when the agent exits (not at EOF on pipes that the
model's helpers may hold), and then every process carrying the run id is ended
(``proctree``); a guardian process does the same if warmscope itself dies. Whatever goes wrong
in here (a full disk, a malformed message, a bug) ends the run with a status, never a hang.

Start the session from a long-lived thread (the main one): the child's parent-death signal
fires when the *thread* that spawned it exits.
"""

from __future__ import annotations

import array
import contextlib
import errno
import fcntl
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warmscope.core import compile_cache, launcher, outcome, proctree, protocol
from warmscope.core.compile_cache import CacheSetup
from warmscope.core.fold import apply_line, event_line, iterations_entry, record_entry
from warmscope.core.jitlog import ParsedEvent, StderrParser
from warmscope.core.launcher import OBSERVER_NICE
from warmscope.core.outcome import UsageError
from warmscope.core.packing import Packed
from warmscope.core.record import (
    VERSION,
    RecordWriter,
    create_unique,
    open_side_file,
    side_file_path,
)
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
MAX_PROTOCOL_LINE = 256 << 20  # a profile or graph dump is large; a line past this is a fault
MAX_PENDING_CHARS = 1 << 20
"""Log text waiting for its iteration's marker; past it (a flood within one long iteration) the
lines go on as the iteration then running, marked approximate, so memory stays bounded."""
PENDING: tuple[str, object] = ("pending", None)
"""The context of lines on fd 2 in the loop, while markers are on: their iteration comes with
the next marker (or the shared counter, below)."""
MAX_STDERR_EVENTS = 2000
"""Stderr events a run keeps; past it (a model printing every pass) lines go to the side file
and are counted, so memory stays bounded however long the run."""
RECORD_FLUSH_S = 0.25
STOP_GRACE_S = 3.0
DRAIN_S = 0.5
"""After the agent exits: how long to read what is left in the pipes. Helpers the model
started may hold them open for ever; the run does not wait for them."""
MAX_DETAIL = 200
"""A status detail is one line of at most this many characters."""
OBSERVER_CPUS_FROM = 4  # with fewer CPUs the child keeps them all
RUN_ID_VAR = proctree.RUN_ID_VAR
DIGITS = re.compile(r"\d+")


def one_line(message: str, limit: int = MAX_DETAIL) -> str:
    """The first non-empty line of ``message``, cut at ``limit`` characters."""
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    if len(first) > limit:
        return first[: limit - 1] + "…"
    return first if first == message.strip() else first + " …"


@dataclass
class _Repeat:
    """A block of output that may repeat: its shape (digits aside), the first and last time."""

    key: str
    first: Event
    count: int = 0
    last: Event = field(init=False)

    def __post_init__(self) -> None:
        self.last = self.first


class RunSession:
    """Spawn the agent for ``settings``, collect everything it reports, record it."""

    def __init__(
        self,
        settings: RunSettings,
        *,
        record_path: Path | None = None,
        command: list[str] | None = None,
        overwrite: bool = False,
        warm_cache: Path | None = None,
        profiles: list[dict[str, Any]] | None = None,
    ) -> None:
        """``warm_cache``: for ``--compile-cache warm``, the folder an unrecorded process filled.
        ``profiles``: operator profiles taken by a separate process (each with its ``source``
        record): this run keeps them and runs no iteration under the profiler itself."""
        self.settings = settings
        self.target: Target = settings.resolve()  # raises SettingsError: nothing spawned
        self.mode = settings.effective_mode(self.target)
        self.jit_log = settings.effective_jit_log(self.target)
        # Created now, exclusively: two runs never share a record (RecordError names why).
        self._writer: RecordWriter = (
            RecordWriter.create(record_path, overwrite=overwrite)
            if record_path is not None
            else create_unique(settings.target, self.mode)
        )
        self._overwrite = overwrite
        self.record_path = self._writer.path
        self.stderr_path = side_file_path(self.record_path)
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
        self._hello = False
        self._fault: tuple[str, str, int] | None = None
        """Why warmscope ended the run itself: (status, detail, exit code)."""
        self._stderr_file: Any = None
        self._stderr_events = 0
        self._repeat: _Repeat | None = None
        self._dropped_stderr = 0
        self._guardian: subprocess.Popen[bytes] | None = None
        self._guardian_pipe = -1
        self._finish_lock = threading.Lock()
        self._finishing = False
        self._parser = StderrParser()
        self._context: tuple[str, object] = ("phase", "start")
        self._markers = bool(self.jit_log or settings.torch_logs)
        self._pending: list[str] = []
        self._pending_chars = 0
        self.iteration_markers = 0
        """Iteration markers read from fd 2: with the SIGIO watch, one per iteration that
        printed, not one per iteration."""
        self._warm_cache = warm_cache
        self._separate_profiles = profiles
        self._cache: CacheSetup | None = None

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Spawn the agent. ``WarmscopeError`` (nothing left running, no record left) when it
        cannot start: a side file in the way, an interpreter that cannot run."""
        try:
            self._stderr_file = open_side_file(self.stderr_path, overwrite=self._overwrite)
            self.ring = IterationRing.create()
            self._writer.write(self._header)
            self._commit({"type": "env", "env": host_environment()})
            if self.mode == "compile":
                # Which compiled code the child can find on disk decides its cold start.
                self._cache = compile_cache.prepare(
                    self.settings.compile_cache or "user",
                    {**os.environ, **self.settings.env},
                    self._warm_cache,
                )
                self._commit({"type": "env", "env": {"compile_cache": self._cache.info}})
            for profile in self._separate_profiles or []:
                self._commit({"type": "profile", **profile, "separate": True})
            self._writer.flush()
            self._spawn()
        except BaseException:
            self._abandon()
            raise
        threading.Thread(
            target=self._guarded(self._read), name="warmscope-reader", daemon=True
        ).start()
        threading.Thread(
            target=self._guarded(self._sample), name="warmscope-sampler", daemon=True
        ).start()

    def _spawn(self) -> None:
        python = self.settings.python or sys.executable
        self._t0 = time.monotonic()
        try:
            self.proc = launcher.popen(  # at warmscope's own priority, not its UI's
                [python, str(AGENT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._child_env(),
                start_new_session=True,  # its own process group: stop it and its workers together
                close_fds=True,
                pass_fds=(self.ring.fd,),
            )
        except OSError as exc:
            raise UsageError(f"--python {python}: cannot run it ({exc.strerror})") from None
        self._start_guardian()
        self._commit({"type": "spawned", "pid": self.proc.pid})
        self._commit({"type": "env", "env": {"observer": self._place_observer()}})
        assert self.proc.stdin is not None
        # A child that is not a Python (``--python /bin/ls``) may be gone already: what it did
        # is judged when it exits (no hello), not here.
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(protocol.encode(self._agent_config()))
            self.proc.stdin.flush()  # stays open: its EOF tells the child the parent is gone

    def _place_observer(self) -> dict[str, Any]:
        """Keep warmscope's own threads out of the measured child's way: where the machine has
        the cores, the child gets all but one CPU and the observer's threads the last one
        (they inherit it from here, as the child's threads inherit its set). The reader and
        the sampler also lower their own priority (``OBSERVER_NICE``) as they start. What was
        done goes into the record."""
        placed: dict[str, Any] = {"nice": OBSERVER_NICE}
        if launcher.ui_nice:
            placed["ui_nice"] = launcher.ui_nice  # the TUI lowered its own threads as well
        assert self.proc is not None
        try:
            cpus = sorted(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return placed
        if len(cpus) >= OBSERVER_CPUS_FROM:
            child, observer = cpus[:-1], cpus[-1:]
            try:
                os.sched_setaffinity(self.proc.pid, child)
                placed["child_cpus"], placed["observer_cpus"] = child, observer
            except OSError as exc:
                placed["affinity_error"] = str(exc)
        else:
            placed["affinity"] = f"not set: {len(cpus)} CPUs, the child needs them all"
        return placed

    def _observe(self) -> None:
        """In a thread of warmscope's: lower its priority, and keep it to the observer's CPU."""
        launcher.nicer_than_start(OBSERVER_NICE)  # on Linux: this thread only
        cpus = self.data.env.get("observer", {}).get("observer_cpus")
        if cpus:
            with contextlib.suppress(OSError, AttributeError):
                os.sched_setaffinity(0, cpus)  # 0: this thread

    def _start_guardian(self) -> None:
        """A process that ends the run's processes if warmscope dies (see ``guardian``)."""
        read_end, write_end = os.pipe()
        os.set_inheritable(write_end, False)
        env = {k: v for k, v in os.environ.items() if k != RUN_ID_VAR}
        try:
            self._guardian = subprocess.Popen(
                [sys.executable, "-m", "warmscope.core.guardian", self.run_id],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # out of the terminal's reach: Ctrl-C, SIGHUP
                close_fds=True,
            )
        except OSError:
            os.close(write_end)  # the run goes on; only a SIGKILL of warmscope would leak
        else:
            self._guardian_pipe = write_end
        finally:
            os.close(read_end)

    def _stop_guardian(self) -> None:
        if self._guardian is None:
            return
        with contextlib.suppress(OSError):
            os.close(self._guardian_pipe)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._guardian.wait(5)
        self._guardian = None

    def _abandon(self) -> None:
        """Undo a start that failed: nothing of it is left, running or on disk."""
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
        self._stop_guardian()
        with contextlib.suppress(OSError):
            self._writer.close()
        for path in (self.record_path, self.stderr_path):
            if self._stderr_file is not None or path == self.record_path:
                with contextlib.suppress(OSError):
                    path.unlink()
        if self._stderr_file is not None:
            self._stderr_file.close()
        if self._cache is not None:
            self._cache.cleanup()

    def _guarded(self, work: Any) -> Any:
        """``work`` for a thread: an exception ends the run with a status, never a hang."""

        def run() -> None:
            try:
                work()
            except BaseException as exc:
                self._internal_fault(f"warmscope's {work.__name__.strip('_')} failed: {exc!r}")

        return run

    def _agent_config(self) -> dict[str, Any]:
        knobs = dict(self.settings.knobs)
        knobs["mode"] = self.mode
        profile_iters, profile_steady = self.settings.profile_plan()
        if self._separate_profiles is not None:
            profile_iters, profile_steady = [], False  # the profile came from another process
        return {
            "parent_pid": os.getpid(),
            "target": self.target.to_json(),
            "inputs": [s.to_json() for s in self.settings.input_specs(self.target)],
            "inputs_file": self.settings.inputs_file,
            "shapes": self.settings.shape_plan(self.target),
            "schedule": self.settings.schedule,
            "seed": self.settings.seed,
            "gap": self.settings.gap,
            "idle_probe": self.settings.idle_probe,
            "torch_config": self.settings.torch_config,
            "recipe": self.settings.recipe,
            "mode": self.mode,
            "knobs": knobs,
            "iters": self.settings.iters,
            "duration": self.settings.duration,
            "markers": self._markers,
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
        if self._cache is not None:
            env.update(self._cache.env)
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
        """SIGKILL the child and every process of the run, now."""
        self._stop_requested = True
        self._killed = True
        self._signal(signal.SIGKILL, group=True)

    def _signal(self, sig: int, *, group: bool) -> None:
        proc = self.proc
        if proc is None:
            return
        if group:  # the whole run: its process group, its descendants, escaped helpers
            proctree.signal_all(self.run_id, proc.pid if proc.returncode is None else None, sig)
        elif proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, sig)

    def _end_run(self, status: str, detail: str, exit_code: int) -> None:
        """warmscope ends the run itself (a fault of the child or of warmscope): the status is
        this one, whatever the child says after; its processes are killed."""
        if self._fault is None:
            self._fault = (status, detail, exit_code)
        self._stop_requested = True
        self._signal(signal.SIGKILL, group=True)

    def _internal_fault(self, detail: str) -> None:
        self._end_run(outcome.FAILED, detail, outcome.EXIT_FAILED)
        if not self.finished.is_set() and self.proc is not None:
            # The reader may be the thread that died: make sure the run still ends.
            threading.Thread(target=self._finish_after_exit, daemon=True).start()

    def _finish_after_exit(self) -> None:
        assert self.proc is not None
        self.proc.wait()
        time.sleep(DRAIN_S * 2)  # the reader, if alive, finishes first (``_finish`` runs once)
        self._finish(self.proc.returncode if self.proc.returncode is not None else -9)

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

    def run_to_end(self) -> RunData:
        """Start, and wait for the end; Ctrl-C kills the run (nothing is left) and goes on up."""
        self.start()
        try:
            self.wait()
        except KeyboardInterrupt:
            self.kill()
            self.wait()
            raise
        return self.data

    def elapsed(self) -> float:
        return time.monotonic() - self._t0 if self._t0 else 0.0

    # -- consumers ---------------------------------------------------------------------------

    def poll(self, cursor: Cursor, *, starts: bool = False) -> Update:
        """What is new since ``cursor`` (which is advanced), in one batch; its ``start_ms``
        only when asked (``starts``): no live view reads them, and decoding them under the
        lock costs more than the rest of the update."""
        with self.lock:
            update = self.data.since(cursor, starts=starts)
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
        self._observe()
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
        exited_at: float | None = None
        err_fd = proc.stderr.fileno()
        while True:
            # For _settle_pending: the counter, then what the stderr pipe held, before reading.
            count0 = self.ring.completed()
            held = self._pipe_holds(err_fd) if self._markers else 0
            consumed = 0
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now  # the end of the run: the agent's exit, not EOF on its pipes
            if exited_at is not None and now - exited_at > DRAIN_S:
                break  # what is left belongs to helpers that still hold the pipes
            if not selector.get_map():
                if exited_at is not None:
                    break
                time.sleep(IDLE_FLUSH_S)  # a child that closed both pipes: wait for its exit
                ready = []
            else:
                # Once the agent has exited, read only while something is there to read.
                ready = selector.select(IDLE_FLUSH_S if exited_at is None else 0.05)
                if exited_at is not None and not ready:
                    break
            got = 0
            for key, _ in ready:
                fd = int(key.fd)
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(fd)
                    if buffers[fd] and fd == out_fd:
                        self._torn_message(buffers[fd])
                    elif buffers[fd]:
                        self._lines(False, [buffers[fd]])
                    continue
                got += len(chunk)
                if fd == err_fd:
                    consumed += len(chunk)
                lines = (buffers[fd] + chunk).split(b"\n")
                buffers[fd] = lines.pop()
                if fd != out_fd and len(buffers[fd]) > MAX_STDERR_LINE:
                    lines.append(buffers[fd])  # a newline-less flood: cut it, keep memory bounded
                    buffers[fd] = b""
                elif fd == out_fd and len(buffers[fd]) > MAX_PROTOCOL_LINE:
                    buffers[fd] = b""
                    self._protocol_fault(f"a message longer than {MAX_PROTOCOL_LINE >> 20} MiB")
                self._lines(fd == out_fd, lines)
            if self._pending and consumed >= held:
                with self.lock:
                    self._settle_pending(count0)
            now = time.monotonic()
            if ready and got < READ_CHUNK // 4 and exited_at is None:
                # Light traffic: let lines pile up in the pipe, so that a child writing a marker
                # every iteration rarely has to wake this thread (most of what a marker costs it).
                # Heavy traffic (a log flood) is read at full speed so the child never waits.
                time.sleep(READ_PAUSE_S)
            elif not ready:
                with self.lock:
                    self._emit(self._parser.flush())
            if now - last_record_flush > RECORD_FLUSH_S:
                with self.lock:
                    self._flush_record()
                last_record_flush = now
            if deadline and now > deadline and not self._timed_out:
                self._timed_out = True
                self.stop()
        selector.close()
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
        proc.wait()
        self._finish(proc.returncode)

    def _lines(self, is_protocol: bool, lines: list[bytes]) -> None:
        with self.lock:
            if is_protocol:
                for line in lines:
                    if line.strip():
                        try:
                            self._message(line)
                        except Exception as exc:  # a hostile child: never the reader's death
                            self._protocol_fault(f"{exc!r} on {line[:120]!r}")
            else:
                self._stderr(lines)

    def _torn_message(self, tail: bytes) -> None:
        """A protocol line with no end: the child died (or was killed) while writing it.
        Not a broken protocol: what the line held is lost, the run ends as its exit says."""
        with self.lock:
            self._add_event(
                Event(
                    "info",
                    "the child's last protocol message was cut off as it ended",
                    f"{len(tail)} bytes: {tail[:120]!r}",
                )
            )

    def _protocol_fault(self, reason: str) -> None:
        """The child broke the protocol (garbage, wrong shapes, out of order): say so, end it."""
        if self._fault is not None:
            return
        if not self._hello and self.settings.python is not None:
            # Not our agent speaking at all: the interpreter ran something else.
            self._end_run(*self._not_a_python("it printed something else instead"))
            return
        self._add_event(Event("error", "the child broke the protocol", reason))
        self._end_run(
            outcome.FAILED, f"the child broke the protocol: {reason[:200]}", outcome.EXIT_FAILED
        )

    def _not_a_python(self, how: str) -> tuple[str, str, int]:
        return (
            outcome.FAILED,
            f"--python {self.settings.python} is not a Python interpreter that can run "
            f"warmscope's agent ({how})",
            outcome.EXIT_USAGE,
        )

    def _stderr(self, lines: list[bytes]) -> None:
        raw: list[bytes] = []
        done_marker = protocol.MARKER + b"done "
        skip = len(done_marker)
        for line in lines:
            if line.startswith(done_marker) and line[skip:].isdigit() and line[skip:].isascii():
                # The lines since the last marker were printed in this iteration, which is over:
                # its blocks (a graph dump) reach the screen now, not when the next line comes.
                self.iteration_markers += 1
                self._resolve_pending(("it", int(line[skip:])))
                self._emit(self._parser.flush())
                self._context = PENDING
                continue
            mark = protocol.parse_marker(line)
            if mark is not None:
                kind, value = mark
                if kind in ("it", "done") and not (value.isascii() and value.isdigit()):
                    self._protocol_fault(f"a marker with a bad iteration: {line[:80]!r}")
                    continue
                # Lines still pending were printed in the iteration a Python print marks
                # (earlier ones would have had their own marker); before a phase, they are
                # another thread's, printed after the loop's last look.
                self._resolve_pending(("it", int(value)) if kind == "it" else None)
                self._emit(self._parser.flush())
                self.iteration_markers += kind in ("it", "done")
                if kind == "it":
                    self._context = ("it", int(value))
                elif kind == "done":
                    self._context = PENDING
                elif kind == "loop":
                    self._context = PENDING if self._markers else ("it", None)
                else:
                    self._context = ("phase", value)
                continue
            raw.append(line)
            text = line.decode(errors="replace").rstrip("\r")
            context = self._context
            if context == PENDING:
                self._pending.append(text)
                self._pending_chars += len(text)
                if self._pending_chars > MAX_PENDING_CHARS:
                    self._resolve_pending(None)
                continue
            if context == ("it", None):
                # No marker (a C++ write with no log capture on): the iteration in progress as
                # this line is read, from the child's shared counter.
                context = self._approx_context()
            self._emit(self._parser.feed(text, context))
        if raw and self._stderr_file is not None and self._fault is None:
            try:
                self._stderr_file.write(b"\n".join(raw) + b"\n")
            except OSError as exc:
                self._write_failed(self.stderr_path, exc)

    def _approx_context(self) -> tuple[str, object]:
        return ("approx", max(self.ring.completed(), self.data.count))

    def _resolve_pending(self, context: tuple[str, object] | None) -> None:
        """Hand the pending lines to the parser as printed in ``context`` (None: approximately,
        the iteration now running)."""
        if not self._pending:
            return
        pending, self._pending, self._pending_chars = self._pending, [], 0
        context = context or self._approx_context()
        for text in pending:
            self._emit(self._parser.feed(text, context))

    @staticmethod
    def _pipe_holds(fd: int) -> int:
        """Bytes waiting in the pipe (FIONREAD); a huge number when it cannot tell."""
        n = array.array("i", [0])
        try:
            fcntl.ioctl(fd, termios.FIONREAD, n)
        except OSError:
            return 1 << 62
        return n[0]

    def _settle_pending(self, count0: int) -> None:
        """Pending lines whose iteration the shared counter proves, so that a long iteration's
        log (a flood, too) shows while it runs, not only at its marker.

        ``count0`` iterations were complete before this turn of the reader began, and the agent
        writes an iteration's marker before it counts the iteration: every marker of those
        iterations was in the pipe then, within what it held. The turn has read at least that
        much, so they have all been read: a line still pending was printed in iteration
        ``count0`` or later. If the counter still reads ``count0``, no later iteration has
        begun: it is exactly ``count0``.
        """
        if self.ring.completed() == count0:
            self._resolve_pending(("it", count0))

    def _emit(self, parsed: list[ParsedEvent]) -> None:
        for p in parsed:
            kind, where = p.context
            data = dict(p.data)
            if kind in ("it", "approx"):
                if kind == "approx":
                    data["approx_iteration"] = True
                iteration = int(where) if isinstance(where, int) else self.data.count
                ev = Event(p.kind, p.title, p.text, iteration=iteration, data=data)
            else:
                ev = Event(p.kind, p.title, p.text, phase=str(where), data=data)
            if p.kind == "stderr":
                self._stderr_event(ev)
            else:
                self._add_event(ev)

    def _stderr_event(self, ev: Event) -> None:
        """A block of the child's output. One that repeats (the same text but for its numbers:
        a model printing every pass) is counted, not kept again; past ``MAX_STDERR_EVENTS``
        blocks only the side file has them. Memory stays bounded however long the run."""
        key = DIGITS.sub("#", ev.text)
        repeat = self._repeat
        if repeat is not None and repeat.key == key:
            repeat.count += 1
            repeat.last = ev
            return
        self._close_repeat()
        if self._stderr_events >= MAX_STDERR_EVENTS:
            self._dropped_stderr += 1
            return
        self._stderr_events += 1
        self._add_event(ev)
        self._repeat = _Repeat(key, ev)

    def _close_repeat(self) -> None:
        repeat, self._repeat = self._repeat, None
        if repeat is None or not repeat.count:
            return
        first, last = repeat.first, repeat.last
        where = (
            f"through iteration {last.iteration}"
            if last.iteration is not None
            else f"in {last.phase or 'setup'}"
        )
        title = f"… the output above repeated {repeat.count:,} more times, {where}"
        text = f"{title}; the last time:\n{last.text}\n(every line is in {self.stderr_path})"
        self._add_event(
            Event(
                "stderr",
                title,
                text,
                iteration=last.iteration,
                phase=last.phase,
                data={"repeats": repeat.count, "first_iteration": first.iteration},
            )
        )

    def _add_event(self, ev: Event) -> None:
        ev.t = self.elapsed()
        self._commit(event_line(ev))

    def _commit(
        self, line: dict[str, Any], *, native: bool = False, packed: Packed | None = None
    ) -> None:
        """Write one record line and fold that same line into the live data.

        A line built here (not decoded from the child) is folded as it reads back from JSON
        (tuples become lists, say), so the live run and its replay hold equal data.
        ``native``: the line already holds nothing but JSON's own types. ``packed``: the
        batch an ``iters`` line was packed from here (``record_entry``), folded as it decodes.
        """
        if not native:
            line = json.loads(json.dumps(line, default=str))
        apply_line(self.data, line, packed)  # first: a line it refuses never reaches the record
        if not (self._writer.failed or self._writer.closed):
            self._writer.write(line)

    def _message(self, line: bytes) -> None:
        try:
            msg = protocol.decode(line)
        except ValueError:
            raise ValueError("not a JSON protocol message") from None
        kind = msg["t"]
        if kind == "iters":
            self.busy = None
        elif kind == "phase_start":
            self.phase = str(msg["name"])
        elif kind == "busy":
            self.busy = msg
        elif kind == "done":
            self._done = msg
        elif kind == "hello":
            self._hello = True
            if msg.get("v") != protocol.VERSION:
                self._add_event(
                    Event(
                        "info", f"agent speaks protocol {msg.get('v')}, expected {protocol.VERSION}"
                    )
                )
        entry, packed = record_entry(msg, self.elapsed())
        if entry is not None:
            self._commit(entry, native=True, packed=packed)  # decoded from the child's JSON
            if kind == "error":
                self._flush_record()

    def _flush_record(self) -> None:
        if self._writer.failed or self._writer.closed:
            return
        try:
            self._writer.flush()
            if self._stderr_file is not None:
                self._stderr_file.flush()
        except OSError as exc:
            self._write_failed(self.record_path, exc)

    def _write_failed(self, path: Path, exc: OSError) -> None:
        """A full disk or another write error: the run cannot be kept, so it ends now."""
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENOSPC:
            reason = "the disk is full"
        self._end_run(outcome.FAILED, f"cannot write {path}: {reason}", outcome.EXIT_FAILED)
        with contextlib.suppress(OSError, ValueError):
            self._writer.close()  # it will not take more; what it holds is what it could keep

    # -- sampling ------------------------------------------------------------------------

    def _sample(self) -> None:
        self._observe()
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
        """Once, when the agent has exited: end what the run left, then the record."""
        with self._finish_lock:
            if self._finishing:
                return
            self._finishing = True
        # Helpers the model started (inheriting the pipes, or escaped with setsid) end too.
        left = proctree.end_all(self.run_id, None)
        with self.lock:
            # The agent is gone: what it printed after its last marker, it printed in the
            # iteration it did not finish, the one the shared counter names.
            self._resolve_pending(("it", self.ring.completed()))
            self._emit(self._parser.flush())
            self._close_repeat()
            if self._dropped_stderr:
                self._add_event(
                    Event(
                        "info",
                        f"{self._dropped_stderr:,} more blocks of the child's output are only in "
                        f"{self.stderr_path}",
                    )
                )
            if left:
                self._add_event(
                    Event("info", f"processes of the run still alive after SIGKILL: {left}")
                )
            self._recover_unsent()
            if self._cache is not None and self._cache.env:
                # What the run left in its cache: a cold one that stays empty was not used.
                after = sum(compile_cache.count_files(Path(p)) for p in self._cache.env.values())
                info = {**self._cache.info, "entries_after": after}
                self._commit({"type": "env", "env": {"compile_cache": info}})
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
            if not (self._writer.failed or self._writer.closed):
                # The same line, with the summary of the run as folded (a convenience for
                # readers of the raw file: `read_run` computes its own).
                self._writer.write({**end, "summary": self.data.summary_dict()})
                self._flush_record()
            with contextlib.suppress(OSError, ValueError):
                self._writer.close()
            if self._stderr_file is not None:
                with contextlib.suppress(OSError):
                    self._stderr_file.close()
            if self.proc is not None and self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
        self._stop_guardian()
        if self._cache is not None:
            self._cache.cleanup()  # a cold cache is this process's alone
        self.finished.set()

    def _recover_unsent(self) -> None:
        """Iterations the child measured but died before sending, from the shared ring."""
        first = self.data.count
        ns, st = self.ring.read_ns(first)
        if ns:
            line, packed = iterations_entry(first, ns, st)
            self._commit(line, native=True, packed=packed)
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
        if self._fault is not None:
            return self._fault
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
            # One line: a TorchScript error's message carries its whole traceback, a trace
            # failure may print a tensor. The full text stays in the record's error.
            message = one_line(str(error.get("message")))
            if error.get("usage"):
                return outcome.FAILED, message, outcome.EXIT_USAGE
            return outcome.FAILED, f"{where}: {message}", outcome.EXIT_FAILED
        if done is not None:
            if done.get("status") == outcome.STOPPED:
                return outcome.STOPPED, "stopped by the user", outcome.EXIT_STOPPED
            return outcome.OK, f"{self.data.count} iterations", outcome.EXIT_OK
        if self._stop_requested:
            how = "killed" if self._killed else "stopped"
            return outcome.STOPPED, f"{how} by the user", outcome.EXIT_STOPPED
        if not self._hello and self.settings.python is not None:
            # It never spoke: not a Python that can run the agent (``--python /bin/false``).
            how = (
                f"died from signal {-returncode}" if returncode < 0 else f"exited with {returncode}"
            )
            return self._not_a_python(f"it {how} without starting it")
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
