"""``--host DEST``: the child on another machine, over one ``ssh`` connection.

The connection is made by the OpenSSH client, so ``~/.ssh/config``, agents, jump hosts and keys
work as they do for ``ssh``; more options for it go in ``WARMSCOPE_SSH_OPTIONS`` (split as a
shell would: ``-p 2222 -i ~/.ssh/lab``). The remote command is the remote interpreter running
the guardian (``core/child/remote_guardian.py``, given as ``-c`` source); the agent and its
sibling modules (and a ``sample:`` target's file) follow on stdin, so nothing needs to be
installed there but python and torch. The local files the settings name (``--recipe``, its
compile-cache artifact, ``--inputs FILE``: ``shipment``) follow them, and the agent is given
their paths there; a file the run makes beside them comes back into the local folder they were
sent from as the agent ends (``remote_file`` lines). The protocol comes back on the
connection's stdout, the raw stderr on its stderr, and the record is written here as lines
arrive.

The shared ring of iteration timings is the guardian's, there: its content comes back when the
agent ends (``RemoteRing``), and the run recovers what a crash kept from it as a local run does.
"""

from __future__ import annotations

import binascii
import contextlib
import json
import os
import select
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from warmscope.core.base.safe_text import clean_line
from warmscope.core.base.sizes import parse_size
from warmscope.core.child import outcome, protocol
from warmscope.core.child.cpp_make import BUILD_TIMEOUT_S
from warmscope.core.child.gpu_sampler import gpu_ordinal
from warmscope.core.child.outcome import UsageError
from warmscope.core.child.ring import SLOTS, IterationRing
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.targets import Target
from warmscope.core.run import launcher
from warmscope.core.run.ending import Ending
from warmscope.core.run.guardian import Guardian
from warmscope.core.run.proctree import RUN_ID_VAR
from warmscope.core.run.shipment import (
    FLAGS,
    SHIPPED_FIELDS,
    Shipment,
    comes_back,
    keep_made,
    shipment,
)

SSH_OPTIONS_VAR = "WARMSCOPE_SSH_OPTIONS"
CHILD_DIR = Path(__file__).resolve().parent.parent / "child"
GUARDIAN = CHILD_DIR / "remote_guardian.py"
CONNECT_TIMEOUT_S = 15
HELLO_TIMEOUT_S = 60.0
"""How long the connection and the remote interpreter's start may take, and the longest ssh may
leave a write of the run's start (the guardian, the agent, the files sent) untaken."""
SIGNAL_TIMEOUT_S = 5.0
"""How long a signal for the remote agent may wait for ssh to take it."""
MAX_HELLO_BYTES = 1 << 20
"""The longest hello a guardian sends (its machine's facts): a longer line is not one."""
NO_SUCH_COMMAND = 127
SSH_FAILED = 255
CRASH_BASE = 128  # the guardian's exit for an agent killed by signal N: 128 + N
FILES_MAX = 256 << 20
"""The most the local files a run names may weigh together to travel with it, and a file the
run makes there to come back (a larger one is left there, and the run's stderr says so)."""


BOOTSTRAP = (
    "import os\n"
    "def r(n):\n"
    " b=b''\n"
    " while n<0 or len(b)<n:\n"
    "  c=os.read(0,1 if n<0 else n-len(b))\n"
    "  if not c:raise SystemExit(70)\n"
    "  b+=c\n"
    "  if n<0 and c==b'\\n':return b\n"
    " return b\n"
    "exec(compile(r(int(r(-1))),'warmscope-guardian','exec'),{'__name__':'__main__'})"
)
"""The remote ``-c`` program: reads the guardian's source (a length line, then the text) from
stdin, a byte at a time up to the length, and runs it."""


def ssh_options() -> list[str]:
    """``WARMSCOPE_SSH_OPTIONS`` split as a shell splits it; one line naming it where it
    cannot be (an unbalanced quote)."""
    text = os.environ.get(SSH_OPTIONS_VAR, "")
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise UsageError(
            f"{SSH_OPTIONS_VAR}={clean_line(text)!r}: {str(exc).lower()}; write it as a shell "
            "line of ssh options (-o Name=value …), quotes balanced"
        ) from None


def ssh_command(host: str, python: str | None) -> list[str]:
    """The ``ssh`` command line that starts the guardian on ``host``."""
    options = ssh_options()
    remote = f"exec {shlex.quote(python or 'python3')} -c {shlex.quote(BOOTSTRAP)}"
    # The user's options first: for ssh the first value given wins.
    return [
        "ssh",
        "-T",
        *options,
        "-o",
        "BatchMode=yes",
        "-o",
        f"ConnectTimeout={CONNECT_TIMEOUT_S}",
        "--",
        host,
        remote,
    ]


def connect(
    settings: RunSettings,
    mode: str,
    target: Target,
    config: dict[str, Any],
    env: dict[str, str],
    guardian: Guardian,
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Start the guardian on ``settings.host``, hand it the agent, then the agent its
    ``config``: the ``ssh`` process and the guardian's hello. ``UsageError`` (nothing left
    running) when it fails."""
    since = cuts()  # a quit from here on ends the connection, however far it has got
    host, python = str(settings.host), settings.python
    cache = remote_cache(settings) if mode == "compile" else None
    limit = parse_size(settings.memory_limit) if settings.memory_limit else None
    gpu = gpu_ordinal(str(settings.knobs.get("device") or "cpu"))
    sent = shipped_files(shipment(settings), host)
    cpp = settings.knobs.get("runtime") == "cpp"
    first, there = payload(
        target.to_json(), env, settings.sample_hz, cache, limit, gpu, sent, cpp=cpp
    )
    proc = launcher.popen(
        ssh_command(host, python),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Not the run's environment: a guardian ending the run's processes by its id (on the
        # loopback, the remote one too) must not cut the connection that brings its last lines.
        # If warmscope dies, ssh's stdin closes with it, and the remote guardian ends the run.
        start_new_session=True,
        close_fds=True,
    )
    # ssh is in a session of its own, out of the run's id: the run's guardian ends it by its
    # pid if warmscope dies (SIGTERM, SIGKILL) before it could.
    guardian.start(str(env.get(RUN_ID_VAR, "")), None, also=proc.pid)
    try:
        with connecting(proc, since):
            # A failed connection breaks the pipe: the hello's absence then says why.
            if not write_within(proc, first, HELLO_TIMEOUT_S):
                raise UsageError(f"--host {host}: no answer in {HELLO_TIMEOUT_S:g} s ({STALLED})")
            # A C++ run's agent is built there first, where it is not yet: minutes, once.
            hello = read_hello(proc, host, python, BUILD_TIMEOUT_S if cpp else HELLO_TIMEOUT_S)
            if hello.get("cpp_error"):
                raise UsageError(f"--host {host}: {clean_line(str(hello['cpp_error']))}")
            if not write_within(proc, protocol.encode(config_there(config, there, hello))):
                raise UsageError(f"--host {host}: no answer in {HELLO_TIMEOUT_S:g} s ({STALLED})")
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, hello


STALLED = "ssh took none of the run's start for that long: the connection or the remote end stalls"


def write_within(proc: subprocess.Popen[bytes], data: bytes, stall_s: float | None = None) -> bool:
    """All of ``data`` to ``proc``'s stdin, waiting at most ``stall_s`` (``HELLO_TIMEOUT_S``)
    for it to take each part: ``False`` where it took nothing for that long. A broken pipe
    (ssh gone: its exit says why) counts as written."""
    assert proc.stdin is not None
    limit = HELLO_TIMEOUT_S if stall_s is None else stall_s
    fd = proc.stdin.fileno()
    view = memoryview(data)
    os.set_blocking(fd, False)
    try:
        while view:
            if not select.select([], [fd], [], limit)[1]:
                return False
            try:
                view = view[os.write(fd, view[: 1 << 16]) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                return True
    finally:
        os.set_blocking(fd, True)
    return True


_connecting: set[subprocess.Popen[bytes]] = set()
_connecting_lock = threading.Lock()
_cuts = 0
"""How many times ``cut_connecting`` has run in this process."""


def cuts() -> int:
    """Read before an ``ssh`` is started, and given to ``connecting``: a cut that comes while
    it is being started, before it is registered, still ends it."""
    with _connecting_lock:
        return _cuts


@contextlib.contextmanager
def connecting(proc: subprocess.Popen[bytes], since: int) -> Iterator[None]:
    """While ``proc``, an ``ssh``, is still connecting: up to the remote end's first answer.
    ``since``: ``cuts()`` from before ``proc`` was started; where a cut came after it, ``proc``
    is ended now."""
    with _connecting_lock:
        _connecting.add(proc)
        cut = _cuts != since
    if cut:
        with contextlib.suppress(OSError):
            proc.kill()
    try:
        yield
    finally:
        with _connecting_lock:
            _connecting.discard(proc)


def cut_connecting() -> None:
    """End every ``ssh`` still connecting from this process, and those being started: whoever
    waits on one (a run's start, a target's check) fails at once rather than at the connect or
    hello timeout. For a UI that quits while a start waits on a host."""
    global _cuts
    with _connecting_lock:
        _cuts += 1
        procs = list(_connecting)
    for proc in procs:
        with contextlib.suppress(OSError):
            proc.kill()


def remote_cache(settings: RunSettings) -> str:
    """The compile cache a remote compile process gets: ``cold``, a folder of its own that goes
    with the run, or ``user``, the remote user's own. ``warm`` would need a folder shared by two
    remote processes, which the remote end does not keep."""
    cache = settings.compile_cache or "user"  # as a local single run's default
    if cache == "warm":
        raise UsageError("--compile-cache warm: not over --host; use cold or user")
    return cache


def payload(
    target: dict[str, Any],
    env: dict[str, str],
    sample_hz: float,
    cache: str | None = None,
    memory_limit: int | None = None,
    gpu_index: int | None = None,
    sent: Sent | None = None,
    *,
    cpp: bool = False,
) -> tuple[bytes, dict[str, Any]]:
    """What the guardian reads first (a length line, then JSON, then the bytes of each ``sent``
    file), and what will be found on the remote, relative to the guardian's folder: ``target``
    (a ``sample:`` target's file travels with the agent) and each shipped field's file.
    ``gpu_index``: the run's CUDA ordinal, whose device the guardian samples."""
    files = {f"child/{p.name}": p.read_text() for p in sorted(CHILD_DIR.glob("*.py"))}
    if cpp:  # ``--runtime cpp``: the C++ agent's source, built there (``cpp_make``)
        files["child/cpp_agent.cpp"] = (CHILD_DIR / "cpp_agent.cpp").read_text()
    remote_target = dict(target)
    if target.get("kind") == "sample" and target.get("path"):
        sample = Path(target["path"])
        files[f"sample/{sample.name}"] = sample.read_text()
        remote_target["path"] = f"sample/{sample.name}"  # under the guardian's folder
    sent = sent or Sent({}, [])
    own = {k: v for k, v in env.items() if os.environ.get(k) != v}
    unset = [k for k in ("PYTORCH_JIT_LOG_LEVEL", "TORCH_LOGS") if k not in env]
    guardian = GUARDIAN.read_bytes()
    body = json.dumps(
        {
            "files": files,
            "env": own,
            "unset": unset,
            "agent": "child/agent.py",
            "runtime": "cpp" if cpp else "python",
            "sample_hz": sample_hz,
            "compile_cache": cache,
            "memory_limit": memory_limit,
            "gpu_index": gpu_index,
            "shipped": sent.fields,
            "blobs": [[rel, len(data)] for rel, data in sent.blobs],
            "made_max": FILES_MAX,
            "made_names": sent.expected,
        }
    )
    data = body.encode()
    head = b"%d\n%s%d\n%s" % (len(guardian), guardian, len(data), data)
    return b"".join([head, *(blob for _, blob in sent.blobs)]), {
        "target": remote_target,
        **sent.fields,
    }


class Sent:
    """The local files that travel with a run, read: where each field's file goes (relative to
    the guardian's folder), every file's bytes, in the order the guardian reads them, and the
    files the run may make beside them that come back (``in/N/NAME``)."""

    def __init__(
        self,
        fields: dict[str, str],
        blobs: list[tuple[str, bytes]],
        expected: list[str] | None = None,
    ) -> None:
        self.fields, self.blobs, self.expected = fields, blobs, expected or []


def shipped_files(sent: Shipment, host: str) -> Sent:
    """The shipment's files read here; ``UsageError`` (one line) for one that cannot be read,
    or for more than ``FILES_MAX`` in all: before any connection, so nothing is left there."""
    named = {index: (FLAGS[field], file) for field, (index, file) in sent.fields.items()}
    blobs, total = [], 0
    for index, name, path in sent.files:
        flag, file = named[index]
        what = f"{flag} {clean_line(str(path))}"
        if name != file:
            what = f"the cache artifact {clean_line(str(path))}"
        try:
            size = path.stat().st_size
            total += size
            if total > FILES_MAX:
                raise UsageError(
                    f"--host {host}: {what} is {size / 2**20:.0f} MiB: at most "
                    f"{FILES_MAX >> 20} MiB of files (--recipe, its cache artifact, --inputs) "
                    "travel with a run"
                )
            data = path.read_bytes()
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            raise UsageError(f"--host {host}: cannot read {what} to send it there: {why}") from None
        blobs.append((sent.place(index, name), data))
    fields = {name: sent.place(index, file) for name, (index, file) in sent.fields.items()}
    expected = [sent.place(i, name) for i, names in sent.expected.items() for name in names]
    return Sent(fields, blobs, sorted(expected))


def read_hello(
    proc: subprocess.Popen[bytes], host: str, python: str | None, within: float = HELLO_TIMEOUT_S
) -> dict[str, Any]:
    """The guardian's first line on stdout (who and where it is), read a byte at a time so that
    nothing of the protocol behind it is taken. ``UsageError`` naming why when it never comes."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    line = bytearray()
    deadline = time.monotonic() + within
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            proc.kill()
            raise UsageError(f"--host {host}: no answer in {within:g} s")
        if len(line) >= MAX_HELLO_BYTES:
            proc.kill()
            raise UsageError(f"--host {host}: the remote end's first line runs past 1 MiB")
        chunk = os.read(fd, 1)
        if not chunk:
            raise UsageError(failure(proc, host, python))
        line += chunk
    try:
        hello = json.loads(line)
        if not isinstance(hello, dict) or hello.get("t") != "remote":
            raise ValueError
    except (ValueError, RecursionError):
        raise UsageError(
            f"--host {host}: the remote interpreter printed something else: {bytes(line[:80])!r}"
        ) from None
    missing = hello_problem(hello)
    if missing:
        raise UsageError(
            f"--host {host}: the remote end's hello {missing}: not warmscope's guardian"
        )
    return dict(hello)


def hello_problem(hello: dict[str, Any]) -> str | None:
    """What a hello lacks that the run needs of it (its folder there, its agent's ring)."""
    home = hello.get("home")
    if not isinstance(home, str) or not home.startswith("/"):
        return "names no home folder (an absolute path)"
    ring = hello.get("ring", {})
    if not isinstance(ring, dict) or not all(
        isinstance(ring.get(key), int) for key in ring.keys() & {"fd", "slots"}
    ):
        return "gives a ring that is not a descriptor and a count"
    shipped = hello.get("shipped", {})
    if not isinstance(shipped, dict) or not all(isinstance(v, str) for v in shipped.values()):
        return "places the files sent somewhere that is not a path"
    return None


def failure(proc: subprocess.Popen[bytes], host: str, python: str | None) -> str:
    """Why the connection ended before the guardian spoke, in one line."""
    assert proc.stderr is not None
    try:
        code = proc.wait(timeout=CONNECT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    said = [ln.strip() for ln in proc.stderr.read(1 << 16).decode(errors="replace").splitlines()]
    said = [ln for ln in said if ln and not ln.startswith("Warning: Permanently added")]
    last = said[-1][:200] if said else f"exit status {code}"
    if code == NO_SUCH_COMMAND:
        return f"--host {host}: no {python or 'python3'} there (--python names the remote interpreter): {last}"
    if code == SSH_FAILED:
        return f"--host {host}: ssh failed: {last}"
    return f"--host {host}: the remote interpreter could not start the run: {last}"


def ended(code: int, settings: RunSettings, stop_requested: bool) -> tuple[int, Ending | None]:
    """The ``ssh`` process's exit ``code`` as the agent's, and, where the connection rather
    than the agent ended the run, why."""
    return returncode(code, settings.host), lost(code, settings, stop_requested)


def returncode(code: int, host: str | None) -> int:
    """The agent's exit as a local child's would read (killed by signal N is -N): over
    ``--host``, the guardian says 128 + N."""
    sig = code - CRASH_BASE if host else 0
    crashes = (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGTERM)
    return -sig if sig in (*crashes, signal.SIGFPE, signal.SIGILL) else code


def lost(code: int, settings: RunSettings, stop_requested: bool) -> Ending | None:
    """The connection, not the agent, ended the run: ssh failed (255) or was killed here."""
    if not settings.host or stop_requested or not (code == SSH_FAILED or code < 0):
        return None
    how = "ssh failed" if code == SSH_FAILED else f"ssh was killed by {signal.Signals(-code).name}"
    return Ending(
        outcome.CRASHED,
        f"the connection to {settings.host} was lost ({how}): the remote run was ended",
        outcome.EXIT_FAILED,
    )


def send_signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Deliver ``sig`` to the remote agent (the guardian does); SIGKILL drops the connection,
    and the guardian then kills the agent's whole group."""
    if proc.returncode is not None:
        return
    if sig == signal.SIGKILL or proc.stdin is None:
        proc.kill()
        return
    try:
        taken = write_within(proc, b"signal %d\n" % sig, SIGNAL_TIMEOUT_S)
    except (OSError, ValueError):
        taken = False
    if not taken:
        proc.kill()  # the connection is gone or stalls: the guardian ends what it started


def environment(hello: dict[str, Any], host: str) -> dict[str, Any]:
    """The record's ``env`` for a remote run: the machine that ran the child."""
    env = {k: v for k, v in hello.items() if k not in ("t", "home", "pid", "ring")}
    return {**env, "host": host}


def sample_line(msg: dict[str, Any], t: float, iteration: int) -> dict[str, Any]:
    """A record's sample line from a sample the guardian took beside the agent: the fields a
    local sample has (``gpu_*`` ones where NVML is there)."""
    fields = ("cpu", "rss_mb", "threads", "procs", "sys_cpu")
    return {
        "type": "sample",
        **{k: v for k, v in msg.items() if k in fields or k.startswith("gpu_")},
        "t": round(t, 3),
        "iteration": iteration,
    }


def config_there(
    config: dict[str, Any], there: dict[str, Any], hello: dict[str, Any]
) -> dict[str, Any]:
    """The agent's config as the remote end needs it: the shipped target and files under the
    guardian's folder, no local parent to watch (the guardian is its parent), the guardian's
    shared ring."""
    home = str(hello["home"])
    target = dict(there["target"])
    if target.get("kind") == "sample":
        target["path"] = f"{home}/{target['path']}"
    files = {name: f"{home}/{there[name]}" for name in SHIPPED_FIELDS if name in there}
    ring = hello.get("ring") or {}
    return {
        **config,
        **files,
        "target": target,
        "parent_pid": 0,
        "ring_fd": ring.get("fd"),
        "ring_slots": ring.get("slots", config.get("ring_slots")),
        "trace_prefix": f"{home}/trace",
    }


LAST_WORDS = ("remote_ring", "remote_file")
"""What the guardian sends once the agent has ended (``RemoteRing.received``)."""


def ring_for(settings: RunSettings, received: Callable[[], int]) -> IterationRing | RemoteRing:
    """The run's ring of iteration timings: shared with a local child, or the remote
    guardian's, read back when the agent ends (``received``: the iterations the run holds)."""
    if not settings.host:
        return IterationRing.create()
    sent = shipment(settings)
    return RemoteRing(received, sent.folders, sent.expected, settings.host)


class RemoteRing:
    """The guardian's ring as the ``remote_ring`` line brought it back: read as a local
    ``IterationRing`` is once its child has ended. Until that line comes (it never does when
    the connection is lost), its count is the larger of the iterations received and the count
    the last sample carried (the iteration running there, as of that sample).

    The ``remote_file`` lines before it bring the files the run made beside the shipped ones,
    in pieces: each one the run is known to make (``expected``, ``shipment.comes_back``) is
    kept in the local ``folders`` its neighbour was sent from; any other is named, not kept."""

    fd = -1
    """No descriptor here: the agent's is the guardian's (``config_there``)."""

    def __init__(
        self,
        received: Callable[[], int],
        folders: Sequence[Path] = (),
        expected: dict[int, set[str]] | None = None,
        host: str = "the host",
    ) -> None:
        self.slots = SLOTS
        self.host_name = host
        self._received = received
        self._completed: int | None = None
        self._sampled = 0
        self._first = 0
        self._ns: Sequence[int] = ()
        self._st: Sequence[int] = ()
        self._folders = list(folders)
        self._expected = expected or {}
        self._made: dict[tuple[int, str], bytearray] = {}
        self.left: list[str] = []
        """Files the run made there that were not copied here (``path there``, by name)."""

    def received(self, msg: dict[str, Any]) -> str | None:
        """One of the guardian's ``LAST_WORDS``; ``ValueError`` when it does not hold together.
        A note for the run's events where the run made a file that is not copied here."""
        if msg["t"] == "remote_file":
            return self.received_file(msg)
        self.received_ring(msg)
        return None

    def received_file(self, msg: dict[str, Any]) -> str | None:
        """A piece of a file the run made there beside a shipped one; the last piece keeps it
        (the first process to make it wins). A file the run is not known to make is named in
        the note returned with its first piece, and none of it is kept."""
        index, name = int(msg["beside"]), str(msg["name"])
        if not 0 <= index < len(self._folders):
            raise ValueError(f"a remote file with no place here: {clean_line(name[:80])!r}")
        if msg.get("left") or not comes_back(name, self._expected.get(index, set())):
            if msg.get("left") or int(msg.get("at", 0)) == 0:
                self.left.append(name)
                return (
                    f"the run made {clean_line(name[:120])!r} beside a file sent to "
                    f"{self.host_name}: not copied here (only a recipe's cache artifact comes "
                    "back)"
                )
            return None
        got = self._made.setdefault((index, name), bytearray())
        if int(msg["at"]) != len(got):
            raise ValueError(f"the pieces of the remote file {name[:80]!r} are out of order")
        got += binascii.a2b_base64(str(msg["data"]))
        if len(got) > FILES_MAX:
            raise ValueError(f"the remote file {name[:80]!r} is over {FILES_MAX >> 20} MiB")
        if msg.get("end"):
            del self._made[(index, name)]
            with contextlib.suppress(OSError):  # no room here: as if the run had made none
                keep_made(self._folders[index] / name, bytes(got))
        return None

    def received_ring(self, msg: dict[str, Any]) -> None:
        """The guardian's ``remote_ring`` line; ``ValueError`` when it does not hold together."""
        ns, st, _ = protocol.iteration_columns(msg)
        completed, first, slots = int(msg["completed"]), int(msg["i0"]), int(msg["slots"])
        if len(ns) != len(st) or (ns and first + len(ns) != completed) or slots < 1:
            raise ValueError("a remote ring whose count and timings disagree")
        self._completed, self._first, self.slots = completed, first, slots
        self._ns, self._st = ns, st

    def sampled(self, msg: dict[str, Any]) -> None:
        """A ``remote_sample`` line: the ring's count as it was taken."""
        self._sampled = max(self._sampled, int(msg.get("completed", 0)))

    def completed(self) -> int:
        if self._completed is not None:
            return self._completed
        return max(self._received(), self._sampled)

    def read_ns(self, first: int) -> tuple[list[int], list[int]]:
        """Durations and start offsets of iterations ``first`` .. completed - 1, of those the
        guardian sent (it sends the ones past what it passed through); none where some before
        them are missing."""
        if first < self._first:
            return [], []
        skip = first - self._first
        return list(self._ns[skip:]), list(self._st[skip:])

    def close(self) -> None:
        """Nothing to release here: the guardian's ring goes with it."""
