"""``RunSession``: one run of the agent in a fresh child process, read, sampled and recorded.

Threads: one reader over both of the child's pipes (``pipes``: protocol on stdout, logs and
markers on stderr, whose lines ``attribution`` pins to iterations), one sampler (psutil/NVML at
``settings.sample_hz``), and, during a stop, one escalation timer. Consumers (the headless CLI,
the TUI) never get a callback per iteration: they call ``poll`` on their own timer and receive
everything new since their last call, in one batch.

The run owns its process tree: it ends when the agent exits (not at EOF on pipes that the
model's helpers may hold), and then every process carrying the run id is ended
(``proctree``); a guardian process does the same if warmscope itself dies. Whatever goes wrong
in here (a full disk, a malformed message, a bug) ends the run with a status, never a hang.

Start the session from a long-lived thread (the main one): the child's parent-death signal
fires when the *thread* that spawned it exits.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from warmscope.core.base.sizes import parse_size
from warmscope.core.child import outcome, protocol
from warmscope.core.child.gpu_sampler import gpu_ordinal
from warmscope.core.data.cpp_runtime import is_cpp
from warmscope.core.data.fold import (
    apply_line,
    check_line,
    event_line,
    iterations_entry,
    record_entry,
)
from warmscope.core.data.packing import Packed
from warmscope.core.data.record import (
    VERSION,
    RecordWriter,
    create_unique,
    open_side_file,
    side_file_path,
)
from warmscope.core.data.run import Cursor, Event, RunData, Update
from warmscope.core.data.run_summary import run_summary
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.compile_cache import default_compile_cache
from warmscope.core.data.targets import Target
from warmscope.core.run import (
    compile_cache,
    cpp_build,
    integrity,
    launcher,
    proctree,
    remote,
    remote_target,
)
from warmscope.core.run.attribution import Attribution, BadMarker
from warmscope.core.run.cgroup import (
    RunCgroup,
    contain,
    oom_kills_here,
    out_of_memory,
)
from warmscope.core.run.child_setup import agent_config, child_env, spawn_agent
from warmscope.core.run.compile_cache import CacheSetup
from warmscope.core.run.ending import Ending, Seen, classify, not_a_python
from warmscope.core.run.guardian import Guardian
from warmscope.core.run.integrity import INTEGRITY
from warmscope.core.run.pipes import DRAIN_S, PipeReader
from warmscope.core.run.sampler import Sampler, host_environment
from warmscope.core.run.side_cap import STDERR_CAP_BYTES, CappedFile, cut_note

AGENT = Path(__file__).resolve().parent.parent / "child" / "agent.py"
RECORD_FLUSH_S = 0.25
STOP_GRACE_S = 3.0
RUN_ID_VAR = proctree.RUN_ID_VAR


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
        self.target: Target = remote_target.resolve(settings)  # SettingsError: nothing spawned
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
        self._witness = integrity.Witness()
        """The child's ``done`` and last iteration, for the checks of what it says."""
        self._stop_requested = False
        self._timed_out = False
        self._killed = False
        self._hello = False
        self._fault: Ending | None = None
        """Why warmscope ended the run itself."""
        self._stderr_file: CappedFile | None = None
        self._memory_limit = (
            parse_size(settings.memory_limit) if settings.memory_limit is not None else None
        )
        self._oom_kills0 = 0
        self._cgroup: RunCgroup | None = None
        """The run's own cgroup, where one could be made (``cgroup``)."""
        self._env: dict[str, str] = {}
        self._guardian = Guardian()
        """Ends the run's processes if warmscope dies (see ``guardian``)."""
        self._finish_lock = threading.Lock()
        self._finishing = False
        self._markers = bool(self.jit_log or settings.torch_logs)
        self._marker_secret = secrets.token_hex(8)
        """Marks the agent's marker lines; the model cannot read it (it is not in any
        environment, and the agent takes its config from stdin before any model code runs)."""
        self._attribution = Attribution(
            markers=self._markers,
            side_file=str(self.stderr_path),
            marker=protocol.marker_prefix(self._marker_secret),
        )
        self._count0 = 0
        """The shared counter as the reader's turn began (``Attribution.settle``)."""
        self._last_record_flush = 0.0
        self.warm_cache = warm_cache
        self.separate_profiles = profiles
        """Both may be handed over until ``start``: a run plan's earlier processes fill them."""
        self._cache: CacheSetup | None = None

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Spawn the agent. ``WarmscopeError`` (nothing left running, no record left) when it
        cannot start: a side file in the way, an interpreter that cannot run."""
        try:
            side = open_side_file(self.stderr_path, overwrite=self._overwrite)
            self._stderr_file = CappedFile(side)
            self.ring = remote.ring_for(self.settings, lambda: self.data.count)
            self._writer.write(self._header)
            if not self.settings.host:  # a remote run's env comes from its remote end
                self._commit({"type": "env", "env": host_environment()})
            if self.mode == "compile" and not self.settings.host:
                # Which compiled code the child can find on disk decides its cold start.

                self._cache = compile_cache.prepare(
                    self.settings.compile_cache or default_compile_cache(repeated=False),
                    {**os.environ, **self.settings.env},
                    self.warm_cache,
                )
                self._commit({"type": "env", "env": {"compile_cache": self._cache.info}})
            for profile in self.separate_profiles or []:
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
        command, who, cpp_config = [python, str(AGENT)], f"--python {python}", {}
        cpp = is_cpp(self.settings) and not self.settings.host
        if cpp:  # built first where it is not yet (a run plan builds it as a step it shows)
            child = cpp_build.child_for(self.settings.python, self.settings.recipe)
            (command, cpp_config), who = child.build(), "the C++ agent"
        self._t0 = time.monotonic()
        cache_env = self._cache.env if self._cache is not None else {}
        self._env = child_env(self.settings, self.jit_log, cache_env, self.run_id)
        config = agent_config(
            self.settings,
            self.target,
            self.mode,
            markers=self._markers,
            marker_secret=self._marker_secret,
            # Absolute: the model may change the child's working folder before it profiles.
            trace_prefix=str(self.record_path.with_suffix("").absolute()),
            ring_fd=self.ring.fd,
            ring_slots=self.ring.slots,
            separate_profiles=self.separate_profiles is not None,
        )
        self._oom_kills0 = oom_kills_here()  # kills after this one are the run's
        if host := self.settings.host:  # no local cgroup, no placement; its ring: ``remote``
            self.proc, hello = remote.connect(
                self.settings, self.mode, self.target, config, self._env, self._guardian
            )
            self._commit({"type": "spawned", "pid": self.proc.pid})
            self._commit({"type": "env", "env": remote.environment(hello, host)})
            return
        if cpp:
            config.update(cpp_config)
            config["spawn_ns"] = time.monotonic_ns()  # its first phase: from here to its main
        self.proc = spawn_agent(command, self._env, self.ring.fd, who)
        # Into the run's cgroup before it reads its config: no model code has run yet.
        self._cgroup, containment = contain(
            self.run_id, self.proc.pid, self._memory_limit, self.settings.max_procs
        )
        self._guardian.start(self.run_id, self._cgroup.path if self._cgroup else None)
        self._commit({"type": "spawned", "pid": self.proc.pid})
        self._commit({"type": "env", "env": {"containment": containment}})
        self._commit({"type": "env", "env": {"observer": launcher.place_observer(self.proc.pid)}})
        assert self.proc.stdin is not None
        # A child that is not a Python (``--python /bin/ls``) may be gone already: what it did
        # is judged when it exits (no hello), not here.
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(protocol.encode(config))
            self.proc.stdin.flush()  # stays open: its EOF tells the child the parent is gone

    def _observe(self) -> None:
        launcher.observe(self.data.env.get("observer", {}).get("observer_cpus"))

    def _abandon(self) -> None:
        """Undo a start that failed: nothing of it is left, running or on disk."""
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
        self._end_cgroup()
        self._guardian.stop()
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

    def discard(self) -> None:
        """Give up a session that was never started: its record goes, nothing ran."""
        self._abandon()

    def _guarded(self, work: Any) -> Any:
        """``work`` for a thread: an exception ends the run with a status, never a hang."""

        def run() -> None:
            try:
                work()
            except BaseException as exc:
                self._internal_fault(f"warmscope's {work.__name__.strip('_')} failed: {exc!r}")

        return run

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
        if self.settings.host:  # the remote guardian delivers it, to the agent's group
            return remote.send_signal(proc, sig)
        if group:  # the whole run: its process group, its descendants, escaped helpers
            proctree.signal_all(self.run_id, proc.pid if proc.returncode is None else None, sig)
        elif proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, sig)

    def _end_run(self, status: str, detail: str, exit_code: int) -> None:
        """warmscope ends the run itself (a fault of the child or of warmscope): the status is
        this one, whatever the child says after; its processes are killed."""
        if self._fault is None:
            self._fault = Ending(status, detail, exit_code)
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

    # -- reading the child: the reader thread's consumer (``pipes.ReaderConsumer``) ---------

    def _read(self) -> None:
        self._observe()
        proc = self.proc
        assert proc is not None
        self._last_record_flush = time.monotonic()
        PipeReader(proc, self, measure_stderr=self._markers).run()
        proc.wait()
        code, lost = remote.ended(proc.returncode, self.settings, self._stop_requested)
        self._fault = self._fault or lost
        self._finish(code)

    @property
    def iteration_markers(self) -> int:
        """Iteration markers read from fd 2: with the SIGIO watch, one per iteration that
        printed, not one per iteration."""
        return self._attribution.iteration_markers

    def turn_begins(self) -> None:
        """For ``Attribution.settle``: the counter, before the reader asks what stderr holds."""
        self._count0 = self.ring.completed()

    def turn_ends(self, *, idle: bool, stderr_caught_up: bool, now: float) -> None:
        if self._attribution.pending and stderr_caught_up and not self.settings.host:  # (shared)
            with self.lock:
                self._add_events(self._attribution.settle(self._count0, self.ring.completed()))
        if idle:
            with self.lock:
                self._add_events(self._attribution.idle())
        if now - self._last_record_flush > RECORD_FLUSH_S:
            with self.lock:
                self._flush_record()
            self._last_record_flush = now
        lingering = self._witness.lingering(now)
        if lingering is not None:
            with self.lock:
                self._integrity_fault(lingering)
        timeout = self.settings.timeout
        if timeout and now > self._t0 + timeout and not self._timed_out:
            self._timed_out = True
            self.stop()

    def protocol_lines(self, lines: list[bytes]) -> None:
        with self.lock:
            for line in lines:
                if line.strip():
                    try:
                        self._message(line)
                    except Exception as exc:  # a hostile child: never the reader's death
                        self._protocol_fault(f"{exc!r} on {line[:120]!r}")

    def stderr_lines(self, lines: list[bytes]) -> None:
        with self.lock:
            running = max(self.ring.completed(), self.data.count)
            fed = self._attribution.feed(lines, running)
            for item in fed.out:
                if isinstance(item, BadMarker):
                    self._protocol_fault(item.reason)
                else:
                    self._add_event(item)
            if fed.plain and self._stderr_file is not None and self._fault is None:
                try:
                    if self._stderr_file.write(b"\n".join(fed.plain) + b"\n"):
                        where = str(self.stderr_path)
                        self._add_event(Event("warning", cut_note(), where, self.data.count))
                except OSError as exc:
                    self._write_failed(self.stderr_path, exc)

    def torn_message(self, tail: bytes) -> None:
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

    def message_too_long(self, limit: int) -> None:
        self._protocol_fault(f"a message longer than {limit >> 20} MiB")

    def _protocol_fault(self, reason: str) -> None:
        """The child broke the protocol (garbage, wrong shapes, out of order): say so, end it."""
        if self._fault is not None:
            return
        if not self._hello and self.settings.python is not None:
            # Not our agent speaking at all: the interpreter ran something else.
            self._end_run(*not_a_python(self.settings.python, "it printed something else instead"))
            return
        self._add_event(Event("error", "the child broke the protocol", reason))
        self._end_run(
            outcome.FAILED, f"the child broke the protocol: {reason[:200]}", outcome.EXIT_FAILED
        )

    def _add_events(self, events: list[Event]) -> None:
        for ev in events:
            self._add_event(ev)

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
        if packed is None:  # checked as every reader checks it (a packed batch was, as made)
            check_line(line)
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
            ns, st, sh = protocol.iteration_columns(msg)
            if not self._timings_hold(ns, st):
                return
            entry, packed = iterations_entry(msg["i0"], ns, st, sh)
            self._commit(entry, native=True, packed=packed)
            return
        elif kind == "phase_start":
            self.phase = str(msg["name"])
        elif kind == "busy":
            self.busy = msg
        elif kind == "done":
            self._integrity_fault(self._witness.said_done(msg, time.monotonic()))
        elif kind == "remote_sample" and isinstance(self.ring, remote.RemoteRing):  # taken there
            self.ring.sampled(msg)
            return self._commit(remote.sample_line(msg, self.elapsed(), self.data.count))
        elif kind in remote.LAST_WORDS and isinstance(self.ring, remote.RemoteRing):  # it ended
            note = self.ring.received(msg)
            if note is not None:  # made there, left there: the user sees its name
                self._add_event(Event("info", note))
            return None
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

    def _timings_hold(self, ns: Any, st: Any, where: str = "a batch") -> bool:
        """Whether a batch of timings is one a clock gives (``integrity``); else the run fails."""
        order = where != "a batch"  # the ring's few are checked in full; a batch by its extremes
        problem = self._witness.batch(ns, st, int(self.elapsed() * 1e9), order=order)
        self._integrity_fault(problem and f"{where}: {problem}")
        return problem is None

    def _integrity_fault(self, reason: str | None) -> None:
        """What the child said cannot be true (``reason``): an event, and the run ends failed."""
        if reason is None or self._fault is not None:
            return
        self._add_event(Event("error", INTEGRITY, reason))
        self._end_run(outcome.FAILED, f"{INTEGRITY}: {reason}", outcome.EXIT_FAILED)

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
        if self.settings.host:  # sampled on the remote, beside the agent
            return
        self._observe()
        proc = self.proc
        assert proc is not None
        gpu_index = gpu_ordinal(str(self.settings.knobs.get("device") or "cpu"))
        try:
            sampler = Sampler(proc.pid, gpu_index, self._env.get("CUDA_VISIBLE_DEVICES"))
        except Exception:
            return  # the child is already gone
        if sampler.gpu is not None:  # which device, its ceilings, what it cannot report
            with self.lock:
                self._commit({"type": "env", "env": {"gpu": sampler.gpu.describe()}})
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
        # Helpers the model started (inheriting the pipes, or escaped with setsid) end too:
        # all at once through the run's cgroup where it has one (it finds helpers that scrubbed
        # their environment), then by the run id.
        oom = self._out_of_memory(returncode)
        escaped = self._end_cgroup()
        left = proctree.end_all(self.run_id, None)
        with self.lock:
            if escaped:
                self._add_event(
                    Event(
                        "info",
                        f"ended {len(escaped)} process(es) the run left in its cgroup",
                        f"pids: {escaped}",
                    )
                )
            self._add_events(self._attribution.end(self.ring.completed()))
            if left:
                self._add_event(
                    Event("info", f"processes of the run still alive after SIGKILL: {left}")
                )
            self._recover_unsent()
            if self._fault is None:
                problem = self._witness.ending(self.data.count, self.settings, self._stop_requested)
                self._integrity_fault(problem)
            if self._cache is not None and self._cache.env:
                # What the run left in its cache: a cold one that stays empty was not used.
                after = sum(compile_cache.count_files(Path(p)) for p in self._cache.env.values())
                info = {**self._cache.info, "entries_after": after}
                self._commit({"type": "env", "env": {"compile_cache": info}})
            status, detail, exit_code = classify(returncode, self._seen(oom))
            if self._stderr_file is not None and self._stderr_file.cut:
                detail += f"; its stderr was cut at {STDERR_CAP_BYTES >> 20} MiB"
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
                self._writer.write({**end, "summary": run_summary(self.data)})
                self._flush_record()
            with contextlib.suppress(OSError, ValueError):
                self._writer.close()
            if self._stderr_file is not None:
                with contextlib.suppress(OSError):
                    self._stderr_file.close()
            if self.proc is not None and self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
        self._guardian.stop()
        if self._cache is not None:
            self._cache.cleanup()  # a cold cache is this process's alone
        self.finished.set()

    def _end_cgroup(self) -> list[int]:
        """Kill whatever is left in the run's cgroup and remove it; the pids it ended."""
        group, self._cgroup = self._cgroup, None
        return group.end() if group is not None else []

    def _recover_unsent(self) -> None:
        """Iterations the child measured but died before sending, from the shared ring (over
        ``--host``, the guardian's, as it sent it back)."""
        first = self.data.count
        problem = integrity.check_ring_count(self.ring.completed(), first, self.ring.slots)
        ns, st = self.ring.read_ns(first) if problem is None and self._fault is None else ([], [])
        if problem is not None:
            self._integrity_fault(f"the shared ring: {problem}")
        elif ns and not self._timings_hold(ns, st, "the shared ring"):
            ns = []
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

    def _out_of_memory(self, returncode: int) -> str | None:
        """Why the run ran out of memory, in words, where it did (``cgroup.out_of_memory``)."""
        return out_of_memory(
            self._cgroup,
            self.settings.memory_limit,
            returncode,
            oom_kills_here() > self._oom_kills0,
            self.data.error,
            [s["rss_mb"] for s in self.data.samples if s.get("rss_mb") is not None],
        )

    def _seen(self, oom: str | None = None) -> Seen:
        return Seen(
            oom=oom,
            fault=self._fault,
            timeout=self.settings.timeout if self._timed_out else None,
            error=self.data.error,
            done=self._witness.done,
            stop_requested=self._stop_requested,
            killed=self._killed,
            hello=self._hello,
            python=None if is_cpp(self.settings) else self.settings.python,
            iterations=self.data.count,
        )
