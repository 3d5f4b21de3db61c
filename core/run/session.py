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

Its collaborators: the record and the live data (``live_record``), the agent's process and
the run's others (``agent_process``), the stops asked of it (``run_stop``), what the child
says on its protocol pipe (``child_messages``).

Start the session from a long-lived thread (the main one): the child's parent-death signal
fires when the *thread* that spawned it exits.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from warmscope.core.child import outcome, protocol
from warmscope.core.child.gpu_sampler import gpu_ordinal
from warmscope.core.data.cpp_runtime import is_cpp
from warmscope.core.data.run import Cursor, Event, RunData, Update
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.compile_cache import default_compile_cache
from warmscope.core.data.targets import Target
from warmscope.core.run import compile_cache, launcher, remote, remote_target
from warmscope.core.run.agent_process import AgentProcess
from warmscope.core.run.attribution import Attribution, BadMarker
from warmscope.core.run.child_messages import ChildMessages
from warmscope.core.run.child_setup import agent_config
from warmscope.core.run.compile_cache import CacheSetup
from warmscope.core.run.ending import Seen, classify
from warmscope.core.run.live_record import LiveRecord
from warmscope.core.run.pipes import DRAIN_S, PipeReader
from warmscope.core.run.run_stop import STOP_GRACE_S, RunStop
from warmscope.core.run.sampler import Sampler, host_environment
from warmscope.core.run.side_cap import STDERR_CAP_BYTES


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
        self._t0 = 0.0
        self.run_id = f"{os.getpid()}-{time.time_ns()}"
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.agent = AgentProcess(settings, self.run_id)
        self.stopping = RunStop(self.agent, self.finished)
        # Created now, exclusively: two runs never share a record (RecordError names why).
        self.record = LiveRecord(
            settings,
            self.target,
            self.mode,
            self.run_id,
            record_path=record_path,
            command=command,
            overwrite=overwrite,
            elapsed=self.elapsed,
            on_failed=self._record_failed,
        )
        self.record_path = self.record.path
        self.stderr_path = self.record.stderr_path
        self.data: RunData = self.record.data
        self.messages = ChildMessages(settings, self.record, self.stopping, self.elapsed)
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
        self.warm_cache = warm_cache
        self.separate_profiles = profiles
        """Both may be handed over until ``start``: a run plan's earlier processes fill them."""
        self._cache: CacheSetup | None = None

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        """The agent's process, once spawned (``subprocess.Popen``; over ``--host``, ``ssh``)."""
        return self.agent.proc

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Spawn the agent. ``WarmscopeError`` (nothing left running, no record left) when it
        cannot start: a side file in the way, an interpreter that cannot run."""
        try:
            self.record.open()
            self.ring = remote.ring_for(self.settings, lambda: self.data.count)
            self.messages.ring = self.ring
            if not self.settings.host:  # a remote run's env comes from its remote end
                self.record.commit({"type": "env", "env": host_environment()})
            if self.mode == "compile" and not self.settings.host:
                # Which compiled code the child can find on disk decides its cold start.
                self._cache = compile_cache.prepare(
                    self.settings.compile_cache or default_compile_cache(repeated=False),
                    {**os.environ, **self.settings.env},
                    self.warm_cache,
                )
                self.record.commit({"type": "env", "env": {"compile_cache": self._cache.info}})
            for profile in self.separate_profiles or []:
                self.record.commit({"type": "profile", **profile, "separate": True})
            self.record.flush_start()
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
        command, who, cpp_config = self.agent.command()
        self._t0 = time.monotonic()
        self.agent.environment(self.jit_log, self._cache.env if self._cache is not None else {})
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
        config.update(cpp_config)
        self.agent.launch(
            command,
            who,
            config,
            mode=self.mode,
            target=self.target,
            ring_fd=self.ring.fd,
            commit=self.record.commit,
        )

    def _observe(self) -> None:
        launcher.observe(self.data.env.get("observer", {}).get("observer_cpus"))

    def _abandon(self) -> None:
        """Undo a start that failed: nothing of it is left, running or on disk."""
        self.agent.abandon()
        self.record.abandon()
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
        self.stopping.stop(grace)

    def kill(self) -> None:
        """SIGKILL the child and every process of the run, now."""
        self.stopping.kill()

    def _record_failed(self, detail: str) -> None:
        """The record cannot be kept (a full disk): the run ends now."""
        self.stopping.end(outcome.FAILED, detail, outcome.EXIT_FAILED)

    def _internal_fault(self, detail: str) -> None:
        self.stopping.end(outcome.FAILED, detail, outcome.EXIT_FAILED)
        if not self.finished.is_set() and self.agent.proc is not None:
            # The reader may be the thread that died: make sure the run still ends.
            threading.Thread(target=self._finish_after_exit, daemon=True).start()

    def _finish_after_exit(self) -> None:
        proc = self.agent.proc
        assert proc is not None
        proc.wait()
        time.sleep(DRAIN_S * 2)  # the reader, if alive, finishes first (``_finish`` runs once)
        self._finish(proc.returncode if proc.returncode is not None else -9)

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
            update.phase, update.busy = self.messages.phase, self.messages.busy
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
        proc = self.agent.proc
        assert proc is not None
        self.record.last_flush = time.monotonic()
        PipeReader(proc, self, measure_stderr=self._markers).run()
        proc.wait()
        code, lost = remote.ended(proc.returncode, self.settings, self.stopping.requested)
        self.stopping.fault = self.stopping.fault or lost
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
                settled = self._attribution.settle(self._count0, self.ring.completed())
                self.record.add_events(settled)
        if idle:
            with self.lock:
                self.record.add_events(self._attribution.idle())
        if self.record.flush_due(now):
            with self.lock:
                self.record.flush()
        lingering = self.messages.witness.lingering(now)
        if lingering is not None:
            with self.lock:
                self.messages.integrity_fault(lingering)
        timeout = self.settings.timeout
        if timeout and now > self._t0 + timeout and not self.stopping.timed_out:
            self.stopping.timed_out = True
            self.stop()

    def protocol_lines(self, lines: list[bytes]) -> None:
        with self.lock:
            for line in lines:
                if line.strip():
                    try:
                        self.messages.take(line)
                    except Exception as exc:  # a hostile child: never the reader's death
                        self.messages.protocol_fault(f"{exc!r} on {line[:120]!r}")

    def stderr_lines(self, lines: list[bytes]) -> None:
        with self.lock:
            running = max(self.ring.completed(), self.data.count)
            fed = self._attribution.feed(lines, running)
            for item in fed.out:
                if isinstance(item, BadMarker):
                    self.messages.protocol_fault(item.reason)
                else:
                    self.record.add_event(item)
            if self.stopping.fault is None:
                self.record.write_stderr(fed.plain)

    def torn_message(self, tail: bytes) -> None:
        """A protocol line with no end: the child died (or was killed) while writing it.
        Not a broken protocol: what the line held is lost, the run ends as its exit says."""
        with self.lock:
            self.record.add_event(
                Event(
                    "info",
                    "the child's last protocol message was cut off as it ended",
                    f"{len(tail)} bytes: {tail[:120]!r}",
                )
            )

    def message_too_long(self, limit: int) -> None:
        self.messages.protocol_fault(f"a message longer than {limit >> 20} MiB")

    # -- sampling ------------------------------------------------------------------------

    def _sample(self) -> None:
        if self.settings.host:  # sampled on the remote, beside the agent
            return
        self._observe()
        proc = self.agent.proc
        assert proc is not None
        gpu_index = gpu_ordinal(str(self.settings.knobs.get("device") or "cpu"))
        try:
            sampler = Sampler(proc.pid, gpu_index, self.agent.env.get("CUDA_VISIBLE_DEVICES"))
        except Exception:
            return  # the child is already gone
        if sampler.gpu is not None:  # which device, its ceilings, what it cannot report
            with self.lock:
                self.record.commit({"type": "env", "env": {"gpu": sampler.gpu.describe()}})
        period = 1.0 / max(self.settings.sample_hz, 0.1)
        while not self.finished.wait(period):
            reading = sampler.sample()
            if reading is None:
                return
            reading["t"] = round(self.elapsed(), 3)
            with self.lock:
                reading["iteration"] = self.data.count
                self.record.commit({"type": "sample", **reading})

    # -- the end -------------------------------------------------------------------------

    def _finish(self, returncode: int) -> None:
        """Once, when the agent has exited: end what the run left, then the record."""
        with self._finish_lock:
            if self._finishing:
                return
            self._finishing = True
        oom = self._out_of_memory(returncode)
        escaped, left = self.agent.end_leftovers()
        with self.lock:
            self._last_lines(escaped, left)
            self.record.end(self._end_line(returncode, oom))
            self.agent.close_stdin()
        self.agent.guardian.stop()
        if self._cache is not None:
            self._cache.cleanup()  # a cold cache is this process's alone
        self.finished.set()

    def _last_lines(self, escaped: list[int], left: list[int]) -> None:
        """What the run's end has to record before its status: the processes it left, the
        last stderr lines, iterations the child did not send, the checks of its end, what it
        left in its compile cache."""
        if escaped:
            self.record.add_event(
                Event(
                    "info",
                    f"ended {len(escaped)} process(es) the run left in its cgroup",
                    f"pids: {escaped}",
                )
            )
        self.record.add_events(self._attribution.end(self.ring.completed()))
        if left:
            self.record.add_event(
                Event("info", f"processes of the run still alive after SIGKILL: {left}")
            )
        self.messages.recover_unsent()
        if self.stopping.fault is None:
            problem = self.messages.witness.ending(
                self.data.count, self.settings, self.stopping.requested
            )
            self.messages.integrity_fault(problem)
        if self._cache is not None and self._cache.env:
            # What the run left in its cache: a cold one that stays empty was not used.
            after = sum(compile_cache.count_files(Path(p)) for p in self._cache.env.values())
            info = {**self._cache.info, "entries_after": after}
            self.record.commit({"type": "env", "env": {"compile_cache": info}})

    def _end_line(self, returncode: int, oom: str | None) -> dict[str, Any]:
        """The record's ``end`` line: the run's status, as what was seen of it says."""
        status, detail, exit_code = classify(returncode, self._seen(oom))
        if self.record.stderr_cut:
            detail += f"; its stderr was cut at {STDERR_CAP_BYTES >> 20} MiB"
        self.messages.busy = None
        return {
            "type": "end",
            "status": status,
            "detail": detail,
            "exit_code": exit_code,
            "returncode": returncode,
            "iterations": self.data.count,
        }

    def _out_of_memory(self, returncode: int) -> str | None:
        """Why the run ran out of memory, in words, where it did (``cgroup.out_of_memory``)."""
        rss = [s["rss_mb"] for s in self.data.samples if s.get("rss_mb") is not None]
        return self.agent.out_of_memory(returncode, self.data.error, rss)

    def _seen(self, oom: str | None = None) -> Seen:
        return Seen(
            oom=oom,
            fault=self.stopping.fault,
            timeout=self.settings.timeout if self.stopping.timed_out else None,
            error=self.data.error,
            done=self.messages.witness.done,
            stop_requested=self.stopping.requested,
            killed=self.stopping.killed,
            hello=self.messages.hello,
            python=None if is_cpp(self.settings) else self.settings.python,
            iterations=self.data.count,
        )
