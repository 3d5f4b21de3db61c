"""``warmscope exec``: the user's own program, started with the observer, its streams read.

The program runs as the user would run it, with two changes to its environment: the bootstrap
folder first on ``PYTHONPATH`` (``core/child/exec_boot``), and the path of a Unix socket in a
private folder (0700) that every Python process of its tree connects to (``exec_stream``).
Each connection is one process, folded into a run of its own (``exec_fold.ProcessRun``) and
written to a record of its own: the first process's record at the path asked for, the others
beside it, named by their pid, and listed in the first one's (``exec.streams``).

Headless, the program keeps warmscope's terminal: its stdin, stdout and stderr are its own, it
is in warmscope's process group, so Ctrl-C at the terminal reaches it as it would without
warmscope (warmscope waits for it, and says it was stopped); SIGTERM and SIGHUP to warmscope
are passed on. Under the TUI, which holds the terminal, it runs in a session of its own with
its output in a file beside the record. Either way, once the program has exited, whatever of
its tree is left (it carries the run id in its environment, ``proctree``) is ended.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import selectors
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from warmscope.core.base.safe_text import clean_line
from warmscope.core.child import outcome
from warmscope.core.child.exec_stream import LOG_ENV, SOCKET_ENV, WATCH_ENV
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.record import (
    RecordError,
    RecordWriter,
    create_unique,
    open_side_file,
    side_file_path,
)
from warmscope.core.run import proctree
from warmscope.core.run.exec_fold import ProcessRun, status_of
from warmscope.core.run.sampler import Sampler, host_environment

BOOT_FOLDER = Path(__file__).resolve().parent.parent / "child" / "exec_boot"
SOCKET_PATH_MAX = 107  # sun_path, less its terminating NUL
SAMPLE_EVERY_S = 0.25
FLUSH_EVERY_S = 0.25
HELD_LINES = 10_000
"""Lines of a process that has made no call yet, held before its record is made."""
DRAIN_S = 2.0
"""After the program exits: how long its streams may take to say their last."""
STOP_GRACE_S = 3.0
OUTPUT_CHUNK = 1 << 16
"""The most of the program's output read for the Stderr pane in one look."""


def _socket_folder() -> Path:
    """A private folder with a path short enough for a socket (``$XDG_RUNTIME_DIR``, else the
    temporary folder, else ``/tmp``)."""
    for base in (os.environ.get("XDG_RUNTIME_DIR"), tempfile.gettempdir(), "/tmp"):
        if base and os.path.isdir(base) and len(base) < SOCKET_PATH_MAX - 24:
            with contextlib.suppress(OSError):
                return Path(tempfile.mkdtemp(prefix="ws-exec-", dir=base))  # 0700
    raise UsageError("no folder for warmscope's socket: set TMPDIR to a short writable path")


def check_command(command: list[str]) -> str:
    """The program's executable, found as the shell would; ``UsageError`` (exit 2) for none."""
    if not command:
        raise UsageError("warmscope exec needs a command: warmscope exec -- python serve.py")
    found = shutil.which(command[0])
    if found is None:
        raise UsageError(f"{clean_line(command[0])}: command not found")
    return found


def check_watch(specs: list[str]) -> list[str]:
    """``--watch module:attr`` (a dotted attribute path after the colon)."""
    for spec in specs:
        module, colon, attr = spec.partition(":")
        names = [*module.split("."), *attr.split(".")]
        if not colon or not all(n.isidentifier() for n in names):
            raise UsageError(
                f"--watch {clean_line(spec)}: expected MODULE:ATTRIBUTE, as in "
                "--watch mypkg.serve:runner.run"
            )
    return specs


class ExecSession:
    """The program, its streams, its records. ``start`` spawns it; the reader thread reads
    every stream as it comes; ``finish`` waits for the end and closes every record."""

    def __init__(
        self,
        command: list[str],
        *,
        record: Path | None = None,
        overwrite: bool = False,
        watch: list[str] = (),  # type: ignore[assignment]
        own_terminal: bool = True,
        warmscope_command: list[str] | None = None,
    ) -> None:
        self.command = command
        self.executable = check_command(command)
        self.watch = check_watch(list(watch))
        self.own_terminal = own_terminal
        self.run_id = secrets.token_hex(8)
        self.warmscope_command = warmscope_command or ["warmscope", "exec", "--", *command]
        self.processes: list[ProcessRun] = []
        """Every process that connected, in the order they said hello."""
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.exit_code: int | None = None
        self.stopped = False
        self.started_at = time.monotonic()
        self._writers: dict[int, RecordWriter | None] = {}
        """Each process's record writer, by ``id`` of its run (``None``: it could not be
        made; the process is kept in memory only)."""
        self._first: ProcessRun | None = None
        self._streams: list[str] = []
        """The names of the other processes' records, beside the first one's."""
        self.failures: list[str] = []
        """Records that could not be written, one line each."""
        self._main_writer = self._claim_record(record, overwrite)
        self.record_path = self._main_writer.path
        self._output: BinaryIO | None = None
        self._output_reader: BinaryIO | None = None
        self._output_tail = b""
        self.output_path: Path | None = None
        if not own_terminal:
            self.output_path = side_file_path(self.record_path)
            self._output = open_side_file(self.output_path, overwrite=overwrite)
            self._output_reader = self.output_path.open("rb")
        self._folder = _socket_folder()
        self.socket_path = str(self._folder / "s")
        self.log_path = self._folder / "unwatched.log"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.socket_path)
        self._listener.listen(64)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._reader: threading.Thread | None = None
        self._closing = threading.Event()
        self._finishing = threading.Lock()
        self._sampler: Sampler | None = None
        self.on_new_process: Callable[[ProcessRun], None] | None = None

    def _claim_record(self, record: Path | None, overwrite: bool) -> RecordWriter:
        """The first process's record, claimed before the program starts: one that cannot
        be written is refused first."""
        if record is not None:
            return RecordWriter.create(record, overwrite=overwrite)
        name = Path(self.command[-1] if len(self.command) > 1 else self.command[0]).name
        return create_unique(name or "program", "exec")

    # -- starting ----------------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        paths = [str(BOOT_FOLDER)]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env[SOCKET_ENV] = self.socket_path
        env[LOG_ENV] = str(self.log_path)
        env[proctree.RUN_ID_VAR] = self.run_id
        if self.watch:
            env[WATCH_ENV] = ";".join(self.watch)
        else:
            env.pop(WATCH_ENV, None)
        return env

    def start(self) -> None:
        """Spawn the program and start reading; ``UsageError`` where it cannot be spawned."""
        options: dict[str, Any] = {"env": self.environment()}
        if not self.own_terminal:
            options.update(
                stdin=subprocess.DEVNULL,
                stdout=self._output,
                stderr=self._output,
                start_new_session=True,
            )
        try:
            self.proc = subprocess.Popen([self.executable, *self.command[1:]], **options)
        except OSError as exc:
            self.close()
            raise UsageError(
                f"cannot run {clean_line(self.command[0])}: {exc.strerror or exc}"
            ) from None
        with contextlib.suppress(Exception):
            self._sampler = Sampler(self.proc.pid)
        self._reader = threading.Thread(target=self._read_loop, name="warmscope-exec", daemon=True)
        self._reader.start()

    # -- reading -----------------------------------------------------------------------------

    def _read_loop(self) -> None:
        next_flush = next_sample = time.monotonic()
        while not self._closing.is_set():
            for key, _ in self._selector.select(timeout=0.05):
                if key.fileobj is self._listener:
                    self._accept()
                else:
                    self._receive(key)
            now = time.monotonic()
            if now >= next_sample:
                next_sample = now + SAMPLE_EVERY_S
                self._sample()
            if now >= next_flush:
                next_flush = now + FLUSH_EVERY_S
                self._show_output()
                self._flush()

    def _accept(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while True:
                conn, _ = self._listener.accept()
                conn.setblocking(False)
                run = ProcessRun(
                    None,
                    self.warmscope_command,
                    self.run_id,
                    str(self.output_path) if self.output_path else None,
                )
                run.owner = self
                run.write_line = self._writer_for(run)  # its record is named once its pid is known
                self._selector.register(conn, selectors.EVENT_READ, run)

    def _receive(self, key: selectors.SelectorKey) -> None:
        conn: socket.socket = key.fileobj  # type: ignore[assignment]
        run: ProcessRun = key.data
        try:
            chunk = conn.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            known = run.pid is not None
            try:
                run.feed(chunk)
            except Exception as exc:  # warmscope's own fault: this stream is read no more
                self.failures.append(f"process {run.pid}: {type(exc).__name__}: {exc}")
                chunk = b""
            if not known and run.pid is not None:
                self._joined(run)
            if chunk:
                return
        self._selector.unregister(conn)
        conn.close()
        if run.pid is not None and run is not self.main:  # the first one ends with the program
            self._end_other(run)

    def _end_other(self, run: ProcessRun) -> None:
        """A process besides the first, its stream over: its run ended, its record closed."""
        if self.stopped:
            run.end(outcome.STOPPED, "stopped with the program", None)
        else:
            run.end(outcome.OK, "the process ended", None)
        self._close_writer(run)

    def _joined(self, run: ProcessRun) -> None:
        with self.lock:
            self.processes.append(run)
        run.set_env(host_environment())
        if self.on_new_process is not None:
            self.on_new_process(run)

    def watched(self) -> list[ProcessRun]:
        """The processes shown: the first one, and every other once it has made a call (a
        compile worker that never calls a module has no record and no view)."""
        main = self.main
        return [p for p in list(self.processes) if p is main or p.data.count]

    def _writer_for(self, run: ProcessRun) -> Callable[[dict[str, Any]], None]:
        """Where ``run``'s record lines go: the first process's record; another process's
        lines are held until its first call, then its own record is made beside it."""
        held: list[dict[str, Any]] = []

        def write(line: dict[str, Any]) -> None:
            writer = self._writers.get(id(run))
            if writer is None:
                if self._first is None:
                    self._first = run
                if run is not self._first and line["type"] != "iters" and len(held) < HELD_LINES:
                    held.append(line)
                    return
                writer = self._open_record(run)
                if writer is None:
                    return
                for earlier in held:
                    writer.write(earlier)
                held.clear()
            writer.write(line)

        return write

    def _open_record(self, run: ProcessRun) -> RecordWriter | None:
        if run is self._first:
            writer = self._main_writer
        else:
            try:
                writer = RecordWriter.create(self._record_of(run))
            except (RecordError, OSError) as exc:
                self.failures.append(f"process {run.pid}: {exc}")
                self._writers[id(run)] = None
                return None
        self._writers[id(run)] = writer
        main = self.main
        if run is not self._first and main is not None:
            self._streams.append(self._record_of(run).name)
            main.set_streams(list(self._streams))
        return writer

    def _record_of(self, run: ProcessRun) -> Path:
        if run is self.main or not self.processes:
            return self.record_path
        path = self.record_path
        return path.with_name(f"{path.stem}.{run.pid}{path.suffix}")

    def _close_writer(self, run: ProcessRun) -> None:
        writer = self._writers.get(id(run))
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()

    def _flush(self) -> None:
        for writer in list(self._writers.values()):
            if writer is not None:
                with contextlib.suppress(OSError, ValueError):
                    writer.flush()

    def _show_output(self) -> None:
        """Under the TUI: the program's new output lines, as events of its first process (the
        Stderr pane's); all of it stays in the file."""
        main = self.main
        if self._output_reader is None or main is None:
            return
        with contextlib.suppress(OSError):
            self._output_tail += self._output_reader.read(OUTPUT_CHUNK)
        lines, _, self._output_tail = self._output_tail.rpartition(b"\n")
        if lines:
            main.output(lines.decode("utf-8", "replace").splitlines(), str(self.output_path))

    def _sample(self) -> None:
        main = self.main
        if self._sampler is None or main is None:
            return
        try:
            sample = self._sampler.sample()
        except Exception:  # the program's tree changes under the sampler: the next one
            return
        if sample is not None:
            main.sample(sample)

    @property
    def main(self) -> ProcessRun | None:
        """The first process that said hello: the program itself, where it is Python."""
        return self.processes[0] if self.processes else None

    # -- the end -----------------------------------------------------------------------------

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """SIGINT to the program (its group under the TUI), then SIGTERM and SIGKILL to what is
        left of its tree if it has not ended after ``grace`` seconds each (on a thread)."""
        self.stopped = True
        if not self.running():
            return
        threading.Thread(target=self._stop_steps, args=(grace,), daemon=True).start()

    def _stop_steps(self, grace: float) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.signal(sig)
            deadline = time.monotonic() + grace
            while self.running() and time.monotonic() < deadline:
                time.sleep(0.05)
            if not self.running():
                return
        self.kill()

    def kill(self) -> None:
        self.stopped = True
        if self.proc is not None:
            proctree.end_all(self.run_id, self.proc.pid, grace=0.0)

    def signal(self, sig: int) -> None:
        """``sig`` to the program (to its process group where it has one of its own)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.own_terminal:
                os.kill(self.proc.pid, sig)
            else:
                os.killpg(self.proc.pid, sig)

    def wait(self, tick: Callable[[], None] | None = None, every: float = 0.1) -> int:
        """Wait for the program to exit (``tick`` between looks); its exit code, as a shell
        gives it (128 + the signal that killed it)."""
        assert self.proc is not None
        while True:
            try:
                code = self.proc.wait(timeout=every)
                break
            except subprocess.TimeoutExpired:
                if tick is not None:
                    tick()
        self.exit_code = code
        return self.shell_code

    @property
    def shell_code(self) -> int:
        """The program's exit code as a shell gives it: 128 + N where signal N ended it; 0
        before it has exited."""
        code = self.exit_code or 0
        return 128 - code if code < 0 else code

    def finish(self) -> None:
        """After the program's exit: its streams drained, what is left of its tree ended, every
        record closed with its end. Safe to call again, from any thread (a second caller
        waits for the first)."""
        with self._finishing:
            if not self._closing.is_set():
                self._finish()

    def _finish(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.kill()
            self.exit_code = self.proc.wait()
        deadline = time.monotonic() + DRAIN_S
        while self._open_streams() and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.proc is not None:
            proctree.end_all(self.run_id, None, grace=0.5)
        deadline = time.monotonic() + DRAIN_S / 2
        while self._open_streams() and time.monotonic() < deadline:
            time.sleep(0.02)
        self._closing.set()
        if self._reader is not None:
            self._reader.join(timeout=2.0)
        for key in list(self._selector.get_map().values()):
            if isinstance(key.data, ProcessRun):
                with contextlib.suppress(OSError):
                    conn: socket.socket = key.fileobj  # type: ignore[assignment]
                    while chunk := conn.recv(1 << 16):
                        key.data.feed(chunk)
        self._show_output()
        main = self.main
        if main is not None:
            for line in self.unwatched_log():
                main.note(f"process {line}")
        if main is not None:
            main.end(*status_of(self.exit_code, self.stopped), self.exit_code)
        for run in self.processes:
            if run is not main:
                self._end_other(run)
        self._flush()
        for run in self.processes:
            self._close_writer(run)
        self.close()

    def _open_streams(self) -> bool:
        return any(isinstance(k.data, ProcessRun) for k in self._selector.get_map().values())

    def unwatched_log(self) -> list[str]:
        """The lines of processes that could not reach warmscope (``pid why``)."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return [clean_line(line) for line in text.splitlines() if line.strip()][:20]

    def close(self) -> None:
        """The socket and its folder removed; the first record removed too where no process
        ever said hello (nothing was watched: there is no run to keep)."""
        self._closing.set()
        with contextlib.suppress(OSError, KeyError, ValueError):
            self._selector.close()
        with contextlib.suppress(OSError):
            self._listener.close()
        shutil.rmtree(self._folder, ignore_errors=True)
        for f in (self._output, self._output_reader):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()
        if not self.processes:
            with contextlib.suppress(OSError):
                self._main_writer.close()
            with contextlib.suppress(OSError):
                self.record_path.unlink()

    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def describe(self) -> str:
        return shlex.join(self.command)


__all__ = ["ExecSession", "RecordError", "check_command", "check_watch"]
