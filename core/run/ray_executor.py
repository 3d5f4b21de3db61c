"""A sweep's processes as Ray tasks (``warmscope sweep --executor ray[:ADDRESS]``).

Each process of the sweep is one Ray task that starts one fresh warmscope child on a node,
through the same run plan as a local process (``start_run`` on that node), and streams its
record back as it is written: complete lines, every half second. The record is written here
as the lines arrive, so a task that dies half way leaves every line it sent. Through Ray
Client (``ray://``), which carries no streamed returns, the same body runs in an actor that
the driver pulls each message from.

A task reserves a whole node: all of its CPUs (and its GPUs for a CUDA run), pinned to that
node. The driver hands the next process of the sweep's interleaved plan to a free node, the
free one that ran that cell least: no two processes share a machine, each node sees the cells
in the plan's order, and every cell runs on every node (a node's speed does not go with one
cell, and the hosts can be compared).

Files the settings name (a ``--recipe`` and the compile-cache artifact beside it, ``--inputs
FILE``: ``shipment``) travel with the task: a cluster shares no filesystem. The task writes
them into its scratch folder and runs the settings rewritten to point there; a file the run
writes beside them (the artifact a recipe saves when it finds none) comes back beside the
local file it was shipped from.

Ray is imported only here, and only when a Ray sweep starts: it is an optional dependency.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warmscope.core.base.files import appending, atomic_write_bytes
from warmscope.core.base.safe_text import clean_line
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.reading import read_run
from warmscope.core.data.record import RecordError
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.run_plan import start_run
from warmscope.core.run.shipment import (
    comes_back,
    keep_made,
    shipment,
    side_comes_back,
    write_data,
)

INSTALL = "--executor ray needs Ray, which is not installed: pip install 'warmscope[ray]'"
SIDE_FILE_MAX = 64 << 20
"""A side file (the child's stderr) larger than this stays on its node."""
STREAM_EVERY_S = 0.5
"""How often a task sends the record lines written since its last send."""


def start_executor(text: str) -> RayExecutor | None:
    """``--executor TEXT``: ``None`` for ``local``; else the Ray executor, started
    (``UsageError`` without Ray, or where the cluster cannot be reached)."""
    name, address = parse_executor(text)
    if name == "local":
        return None
    executor = RayExecutor(address)
    executor.start()
    return executor


def parse_executor(text: str) -> tuple[str, str | None]:
    """``local``, ``ray``, ``ray:auto`` or ``ray:ray://HOST:PORT``: the executor and the Ray
    address (``None``: an embedded local Ray)."""
    name, sep, address = text.partition(":")
    if name == "local" and not sep:
        return "local", None
    if name == "ray":
        if sep and not address:
            raise UsageError("--executor ray: an address after 'ray:' (auto, ray://HOST:PORT)")
        return "ray", address or None
    raise UsageError(f"bad --executor {text!r}: local, ray, ray:auto or ray:ray://HOST:PORT")


REACH_TIMEOUT_S = 5.0
CLIENT_SERVER_DIED = ("Starting Ray client server failed", "ZombieProcess")
"""How a ``ray://`` connection fails where the server the head starts for it died as it
started (Ray's issue 63202: it is forked from a busy gRPC process): the head says the server
failed, or its wait for the server's process met a zombie (``psutil.ZombieProcess``)."""
CLIENT_TRIES = 3
"""How often a ``ray://`` connection is tried where the head's client server failed to start."""
CLIENT_SERVER_CURE = (
    f" ({CLIENT_TRIES} tries; the head's client server forks its per-connection servers with"
    " gRPC's fork support on, and they can die as they start: start the head with"
    " GRPC_ENABLE_FORK_SUPPORT=0 in its environment)"
)
"""What the one line adds where every try met a per-connection server that died as it started."""


def check_reachable(address: str | None) -> None:
    """``UsageError`` where ``HOST:PORT`` (or ``ray://HOST:PORT``) takes no connection: Ray
    itself would retry for minutes, printing its own warnings."""
    if not address or address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--executor ray:{address}: expected HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(f"--executor ray:{address}: no Ray there ({reason})") from None


def client_server_died(exc: BaseException) -> bool:
    """Whether a failure to join through Ray Client is the head's per-connection server
    dying as it started: the next connection gets a new one."""
    return any(sign in str(exc) for sign in CLIENT_SERVER_DIED)


def import_ray() -> Any:
    """The ``ray`` module, or ``UsageError`` saying how to install it."""
    try:
        # Ray is optional (the `ray` extra) and slow to import: loaded only where Ray runs
        import ray
    except ImportError:
        raise UsageError(INSTALL) from None
    return ray


@dataclass
class Node:
    """One Ray node a process can run on: its whole CPUs (and GPUs) are reserved."""

    node_id: str
    hostname: str
    cpus: float
    gpus: float

    def to_json(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "hostname": self.hostname}


@dataclass
class Finished:
    """A process the executor ran: where, and why it ended early if it did."""

    n: int
    node: dict[str, Any]
    error: str | None = None
    """The task's failure (a worker or node lost, an exception on the node)."""
    cancelled: bool = False
    """The sweep stopped it (Ctrl-C, or an abort)."""


def _note_left(record: Path, where: dict[str, Any], names: list[str]) -> None:
    """Files a task made that were not copied here, named where the run's output is kept."""
    shown = ", ".join(repr(clean_line(name[:120])) for name in names[:20])
    more = f" and {len(names) - 20} more" if len(names) > 20 else ""
    line = (
        f"warmscope: the task on {clean_line(str(where.get('hostname', '?')))} made {shown}{more} "
        "beside the files sent to it: not copied here\n"
    )
    with (
        contextlib.suppress(OSError),
        appending(record.with_suffix(".stderr.txt"), create=True) as f,
    ):
        f.write(line)


def _unpack(
    settings: RunSettings,
    folder: Path,
    files: list[tuple[int, str, Any]],
    fields: dict[str, tuple[int, str]],
) -> tuple[RunSettings, dict[int, set[str]]]:
    """On the node: the shipped files written under ``folder/in/INDEX/``; the settings with
    their fields pointing there; the names shipped into each folder."""
    ray = import_ray()
    shipped: dict[int, set[str]] = {}
    for index, name, ref in files:
        place = folder / "in" / str(index)
        place.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(place / name, ray.get(ref))
        shipped.setdefault(index, set()).add(name)
    settings = settings.copy()
    for key, (index, name) in fields.items():
        setattr(settings, key, str(folder / "in" / str(index) / name))
    return settings, shipped


def _stream_process(
    settings: RunSettings,
    name: str,
    command: list[str],
    files: list[tuple[int, str, Any]] | None = None,
    fields: dict[str, tuple[int, str]] | None = None,
    every: float = STREAM_EVERY_S,
    stop: threading.Event | None = None,
) -> Iterator[dict[str, Any]]:
    """The task's body, on its node: the shipped files unpacked, one run plan; its record's
    complete lines as they come; then its side files and the files it made beside the
    shipped ones. ``stop`` set: the child stopped, as by ``ray.cancel``."""
    yield {"node": {"hostname": socket.gethostname(), "pid": os.getpid()}}
    folder = Path(tempfile.mkdtemp(prefix="warmscope-ray-"))
    run = None
    try:
        settings, shipped = _unpack(settings, folder, files or [], fields or {})
        run = start_run(settings, record_path=folder / name, command=command)
        with open(run.record_path, "rb") as f:
            pending = b""
            while True:
                finished = run.wait(every)
                pending += f.read()
                cut = pending.rfind(b"\n") + 1
                if cut:
                    yield {"lines": pending[:cut]}
                    pending = pending[cut:]
                if finished:
                    break
                if stop is not None and stop.is_set():
                    raise KeyboardInterrupt
        for side in sorted(folder.iterdir()):  # the stderr side file, and any other
            if side.name != name and side.is_file() and side.stat().st_size <= SIDE_FILE_MAX:
                yield {"file": side.name, "data": side.read_bytes()}
        for index, names in sorted(shipped.items()):
            for made in sorted((folder / "in" / str(index)).iterdir()):
                if made.name not in names and made.is_file():
                    yield {"beside": index, "file": made.name, "data": made.read_bytes()}
        yield {"status": run.data.status}
    except KeyboardInterrupt:  # ray.cancel: the child is stopped, not left behind
        if run is not None:
            run.stop()
            run.wait()
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Stream:
    """Under Ray Client, which carries no streamed returns of a task: the task's body in an
    actor that the driver pulls its messages from, one call each."""

    def __init__(
        self,
        settings: RunSettings,
        name: str,
        command: list[str],
        files: list[tuple[int, str, Any]],
        fields: dict[str, tuple[int, str]],
    ) -> None:
        self._stop = threading.Event()
        self._body = _stream_process(settings, name, command, files, fields, stop=self._stop)

    def pull(self) -> dict[str, Any] | None:
        """The next message; ``None`` once the body has ended (or stopped)."""
        try:
            return next(self._body)
        except (StopIteration, KeyboardInterrupt):
            return None

    def stop(self) -> None:
        """Called beside a ``pull`` in progress (two calls at once): stop the child."""
        self._stop.set()


@dataclass
class RayExecutor:
    """Runs a sweep's processes as Ray tasks, one per free node."""

    address: str | None = None
    nodes: list[Node] = field(default_factory=list)
    _ray: Any = None
    _started: bool = False
    _client: bool = False
    """Joined through Ray Client (``ray://``): tasks stream through an actor (``_Stream``)."""
    _busy: dict[str, Any] = field(default_factory=dict)
    _done: queue.Queue[Finished] = field(default_factory=queue.Queue)
    _threads: list[threading.Thread] = field(default_factory=list)
    _ran: dict[tuple[str, int], int] = field(default_factory=dict)
    """Processes each node ran of each cell."""
    _stopping: set[str] = field(default_factory=set)
    """The nodes whose task ``cancel`` stopped (one task a node: it is that one)."""
    _refs: dict[tuple[str, int, int], Any] = field(default_factory=dict)
    """A shipped file's contents in Ray's object store, by path, size and modification time:
    put once however many processes need it."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _outstanding: int = 0
    """Processes submitted and not yet handed back by ``next_finished``."""

    @property
    def name(self) -> str:
        return "ray" + (f":{self.address}" if self.address else "")

    def start(self) -> None:
        """Start (no address) or join Ray and list its nodes; ``UsageError`` if it cannot."""
        ray = self._ray = import_ray()
        os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")  # a warning less
        # No metrics from this driver: where the node runs no metrics agent, it would print
        # an error line in the middle of the sweep's progress.
        os.environ.setdefault("RAY_enable_metrics_collection", "0")
        if not ray.is_initialized():
            check_reachable(self.address)
            for attempt in range(CLIENT_TRIES):
                try:
                    ray.init(
                        # No address: a Ray of its own, even where a cluster runs on this machine.
                        address=self.address or "local",
                        include_dashboard=False,
                        log_to_driver=False,
                        logging_level="ERROR",
                    )
                    break
                except Exception as exc:
                    # The server Ray Client starts for each connection sometimes dies as it
                    # starts on a busy head; another is started for the next connection.
                    if client_server_died(exc) and attempt + 1 < CLIENT_TRIES:
                        with contextlib.suppress(Exception):
                            ray.shutdown()  # whatever the failed connection left
                        continue
                    raise UsageError(
                        f"--executor {self.name}: cannot start or join Ray: {short(exc)}"
                        + (CLIENT_SERVER_CURE if client_server_died(exc) else "")
                    ) from None
            self._started = True
        # Ray's own modules, as `import_ray` (optional)
        from ray.util.client import ray as client

        self._client = client.is_connected()
        self.nodes = [
            Node(
                n["NodeID"],
                n.get("NodeManagerHostname", "?"),
                float(n["Resources"].get("CPU", 0)),
                float(n["Resources"].get("GPU", 0)),
            )
            for n in ray.nodes()
            if n.get("Alive") and n["Resources"].get("CPU", 0) >= 1
        ]
        if not self.nodes:
            raise UsageError(f"--executor {self.name}: the Ray cluster has no node with a CPU")

    @property
    def slots(self) -> int:
        """Processes at once: one per node."""
        return len(self.nodes)

    def free(self) -> bool:
        """A node is free, and no process that ended waits to be taken: a node takes its next
        process once the sweep has seen its last one end (and, stopping, stops submitting)."""
        with self._lock:
            return self._done.empty() and len(self._busy) < len(self.nodes)

    def submit(
        self, n: int, cell: int, settings: RunSettings, record: Path, command: list[str]
    ) -> None:
        """Start process ``n`` (of ``cell``) on a free node, the one that ran that cell least,
        so that each cell runs on every node and no node's speed goes with one cell; its
        record is written at ``record`` here."""
        # Ray's own modules, as `import_ray` (optional)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        free = [x for x in self.nodes if x.node_id not in self._busy]
        node = min(free, key=lambda x: self._ran.get((x.node_id, cell), 0))
        self._ran[(node.node_id, cell)] = self._ran.get((node.node_id, cell), 0) + 1
        gpus = node.gpus if str(settings.knobs.get("device", "cpu")).startswith("cuda") else 0
        sent = shipment(settings)
        files = [(index, name, self._put(path)) for index, name, path in sent.files]
        where = NodeAffinitySchedulingStrategy(node.node_id, soft=False)
        args = (settings, record.name, command, files, sent.fields)
        if self._client:
            actor = ray.remote(_Stream).options(
                num_cpus=node.cpus,
                num_gpus=gpus,
                max_restarts=0,
                max_concurrency=2,  # a ``stop`` beside the ``pull`` it interrupts
                scheduling_strategy=where,
            )
            stream: Any = actor.remote(*args)
        else:
            task = ray.remote(_stream_process).options(
                num_cpus=node.cpus, num_gpus=gpus, max_retries=0, scheduling_strategy=where
            )
            stream = task.remote(*args)
        self._busy[node.node_id] = stream
        self._outstanding += 1
        thread = threading.Thread(
            target=self._follow,
            args=(n, node, stream, record, sent.folders, sent.expected),
            daemon=True,
            name="warmscope-ray",
        )
        self._threads.append(thread)
        thread.start()

    def _put(self, path: Path) -> Any:
        """``path``'s contents in the object store (once for the same file unchanged)."""
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if key not in self._refs:
            self._refs[key] = self._ray.put(path.read_bytes())
        return self._refs[key]

    def _follow(
        self,
        n: int,
        node: Node,
        stream: Any,
        record: Path,
        folders: list[Path],
        expected: dict[int, set[str]],
    ) -> None:
        """Write the task's lines to ``record`` as they come, its side files beside it and the
        files it made beside shipped ones that come back (``shipment.comes_back``) beside
        their local originals; then tell the sweep. Any other file the task sends is named in
        the record's stderr side file, not copied."""
        where = node.to_json()
        error = None
        left: list[str] = []
        try:
            with appending(record, create=True, binary=True) as out:
                for message in self._messages(stream):
                    if "node" in message:
                        where = {**where, "hostname": message["node"]["hostname"]}
                    if "lines" in message:
                        out.write(message["lines"])
                        out.flush()
                    if "file" not in message:
                        continue
                    name, index = str(message["file"]), message.get("beside")
                    if index is None and side_comes_back(record.name, name):
                        write_data(record.parent / name, message["data"])
                    elif (
                        isinstance(index, int)
                        and 0 <= index < len(folders)
                        and comes_back(name, expected.get(index, set()))
                    ):
                        keep_made(folders[index] / name, message["data"])
                    else:
                        left.append(name)
        except Exception as exc:
            error = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
        finally:
            if left:
                _note_left(record, where, left)
            if self._client:  # the actor holds its node's CPUs until it is gone
                with contextlib.suppress(Exception):
                    self._ray.kill(stream)
            with self._lock:  # the node is free and its end told at once (see ``free``)
                self._done.put(Finished(n, where, error, node.node_id in self._stopping))
                self._stopping.discard(node.node_id)
                self._busy.pop(node.node_id, None)

    def _messages(self, stream: Any) -> Iterator[dict[str, Any]]:
        """The task's messages as they come: its streamed returns, or the actor's pulls."""
        if not self._client:
            for ref in stream:
                yield self._ray.get(ref)
            return
        while (message := self._ray.get(stream.pull.remote())) is not None:
            yield message

    def next_finished(self, timeout: float = 0.2) -> Finished | None:
        try:
            finished = self._done.get(timeout=timeout) if timeout else self._done.get_nowait()
        except queue.Empty:
            return None
        self._outstanding -= 1
        return finished

    @property
    def running(self) -> int:
        """Processes submitted whose end the sweep has not taken yet."""
        return self._outstanding

    def cancel(self, wait_s: float = 10.0) -> None:
        """Stop every task in progress (each stops its child) and wait a while for them."""
        with self._lock:
            busy = list(self._busy.items())
            self._stopping.update(node_id for node_id, _ in busy)
        for _, stream in busy:
            with contextlib.suppress(Exception):
                if self._client:
                    stream.stop.remote()
                else:
                    self._ray.cancel(stream)
        deadline = time.monotonic() + wait_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        if self._started and self._ray is not None:
            self._ray.shutdown()
            self._started = False


def short(exc: BaseException) -> str:
    """Ray's message in one line: a server's traceback (Ray Client's) down to its first line
    and its last, the exception that ended it."""
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()] or [type(exc).__name__]
    return lines[0] if len(lines) == 1 else f"{lines[0]} {lines[-1]}"


def data_from_lines(record: Path, settings: RunSettings, finished: Finished) -> Any:
    """The process's data from the lines that arrived; marked failed where the task died."""
    try:
        data = read_run(record) if record.stat().st_size else None
    except (RecordError, OSError):
        data = None
    if data is None:
        data = RunData(settings=settings, record_path=str(record))
    if data.stderr_path:  # the node's path, in the record; its copy lies beside the record
        copy = record.parent / Path(data.stderr_path).name
        if copy.is_file():
            data.stderr_path = str(copy)
    if ends_whole(record):
        return data  # the run's own end came back: its status stands
    where = finished.node.get("hostname", "?")
    if finished.cancelled:
        data.status = outcome.STOPPED
        data.status_detail = (
            f"stopped on {where} with the sweep: "
            f"{data.count} iteration{'s' if data.count != 1 else ''} kept"
        )
        data.exit_code = outcome.EXIT_STOPPED
    else:
        data.status = outcome.FAILED
        data.status_detail = (
            f"the Ray task on {where} ended early: {finished.error or 'its record is incomplete'}"
        )
        data.exit_code = outcome.EXIT_FAILED
    return data


def ends_whole(record: Path) -> bool:
    """Whether the record's last line is the run's ``end`` line."""
    try:
        with open(record, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
            lines = f.read().rstrip(b"\n").rsplit(b"\n", 1)
    except OSError:
        return False
    return lines[-1].startswith(b'{"type":"end"')
