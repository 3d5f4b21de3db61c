"""The remote end of ``--host``: run by the remote interpreter as ``python -c SOURCE``.

Standard library only, and self-contained: this file's text is the program. On its stdin it
reads one line (a byte count), then that many bytes of JSON: the agent's files and the run's
environment; then the bytes of each local file the run names (``blobs``: a recipe, its cache
artifact, an inputs file), one after the other. It writes the files into a fresh folder (those
files under ``in/N/``), says who it is in one JSON line on stdout,
and starts the agent in a process group of its own: its stderr is the connection's own (logs and
markers), its protocol lines pass through here to the connection's stdout, with the samples of
its process tree (``remote_sampler``, its GPU through ``gpu_sampler`` where NVML is there)
between them, whole lines only. What comes after on stdin goes to the agent: its config line,
then only ``signal N`` lines, which the guardian delivers.

As a local parent does, the guardian makes the shared ring of iteration timings (``ring``) and
hands its descriptor to the agent (the hello says which, for the agent's config). When the agent
has ended, what the ring holds past the iterations passed through (those it measured but did not
send, if it died) and its count (the iteration it did not finish) go to the connection as one
``remote_ring`` line, so that the parent recovers them as it does from its own ring.

The remote process tree ends with the run: when the connection drops (EOF on stdin) the agent
and its group are killed; when the agent exits, whatever it left (its group, and any process
carrying the run id) is killed too, and the folder goes. Before it goes, a file the agent made
beside a shipped one (a recipe's saved cache artifact) is sent on the connection, in
``remote_file`` lines, ahead of the ``remote_ring`` line.
"""

from __future__ import annotations

import binascii
import contextlib
import importlib.util
import json
import os
import platform
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from array import array
from typing import Any

RUN_ID_VAR = "WARMSCOPE_RUN_ID"
EXIT_GONE = 70  # as the agent's EXIT_PARENT_GONE: nobody is left to report to
CRASH_SIGNALS = (
    signal.SIGKILL,
    signal.SIGSEGV,
    signal.SIGABRT,
    signal.SIGBUS,
    signal.SIGTERM,
    signal.SIGFPE,
    signal.SIGILL,
)
"""An agent killed by one of these exits here with 128 + the signal; the parent reads it back."""


def read_exact(n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            os._exit(EXIT_GONE)
        data += chunk
    return data


class Gone(Exception):
    """The connection closed while the guardian was still reading what it is sent."""


def read_file(path: str, size: int) -> None:
    """``size`` bytes of stdin into ``path``, a piece at a time."""
    with open(path, "wb") as f:
        while size:
            chunk = os.read(0, min(size, 1 << 20))
            if not chunk:
                raise Gone
            f.write(chunk)
            size -= len(chunk)


def read_line() -> bytes:
    line = b""
    while not line.endswith(b"\n"):  # a byte at a time: nothing past it is read away
        chunk = os.read(0, 1)
        if not chunk:
            os._exit(EXIT_GONE)
        line += chunk
    return line


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()


def load_nvml() -> tuple[Any, str]:
    """The initialised ``pynvml`` module where the remote interpreter has it and the NVML
    library is there, and the record's word for it (as a local run's ``nvml``)."""
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
    except Exception as exc:
        return None, f"no GPU: NVML unavailable there ({exc})".replace("\n", " ")
    return pynvml, "ok"


def gpus(nvml: Any, status: str) -> dict[str, object]:
    """The GPUs there and the driver, as a local run's environment says them."""
    found: list[dict[str, object]] = []
    info: dict[str, object] = {"gpus": found, "nvml": status}
    if nvml is None:
        return info
    with contextlib.suppress(Exception):
        driver = nvml.nvmlSystemGetDriverVersion()
        info["driver"] = driver.decode() if isinstance(driver, bytes) else str(driver)
    with contextlib.suppress(Exception):
        for i in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            name = nvml.nvmlDeviceGetName(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle).total // 2**20
            name = name.decode() if isinstance(name, bytes) else str(name)
            found.append({"index": i, "name": name, "memory_mb": memory})
    return info


def whoami(home: str, nvml: Any, status: str) -> dict[str, object]:
    info: dict[str, object] = {
        "t": "remote",
        "home": home,
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_logical": os.cpu_count(),
        "pid": os.getpid(),
        **gpus(nvml, status),
    }
    with contextlib.suppress(AttributeError, OSError):
        info["cpu_affinity"] = len(os.sched_getaffinity(0))
    return info


def end_run(group: int, run_id: str) -> None:
    """Kill the agent's group, then any process that carries the run id (escaped helpers)."""
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGKILL)
    needle = f"{RUN_ID_VAR}={run_id}".encode()
    for name in os.listdir("/proc") if run_id and os.path.isdir("/proc") else []:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{name}/environ", "rb") as f:
                found = needle in f.read().split(b"\0")
            if found:
                os.kill(int(name), signal.SIGKILL)


class Agent:
    """The agent's process, signalled by its pid only until it is reaped (then the pid may be
    another's): a signal between its fork and its ``setsid`` finds no group of its own yet."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._lock = threading.Lock()
        self._ended = False

    def signal(self, number: int) -> None:
        with self._lock, contextlib.suppress(OSError):
            if not self._ended:
                os.kill(self.pid, number)

    def wait(self) -> int:
        """Its exit status, once it has ended (no signal goes to its pid after)."""
        os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)  # ended, its pid still held
        with self._lock:
            self._ended = True
        return os.waitpid(self.pid, 0)[1]


def forward(to_agent: int, agent: Agent, run_id: str) -> None:
    """The config line to the agent, then ``signal N`` lines; EOF: the connection is gone."""
    config_sent = False
    pending = b""
    while True:
        try:
            chunk = os.read(0, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            agent.signal(signal.SIGKILL)  # it may not lead its own group yet
            end_run(agent.pid, run_id)
            return
        if not config_sent:
            head, newline, pending = chunk.partition(b"\n")
            with contextlib.suppress(OSError):
                os.write(to_agent, head + newline)
            config_sent = bool(newline)
            if not config_sent:
                continue
        else:
            pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            word, _, number = line.decode(errors="replace").partition(" ")
            if word == "signal" and number.strip().isdigit():
                agent.signal(int(number))


class Out:
    """The connection's stdout, one whole line at a time from either thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self.lock:
            view = memoryview(data)
            while view:
                view = view[os.write(1, view) :]


ITERS = b'{"t":"iters",'


class Passed:
    """How many iterations the agent's ``iters`` lines passed through carried: the parent has
    them; the ring's tail after them it may not."""

    def __init__(self) -> None:
        self.through = 0

    def read(self, lines: bytes) -> None:
        for line in lines.split(b"\n"):
            if not line.startswith(ITERS):
                continue
            with contextlib.suppress(ValueError, KeyError, TypeError, binascii.Error):
                msg = json.loads(line)
                ns = msg["ns"]
                count = len(binascii.a2b_base64(ns)) // 8 if isinstance(ns, str) else len(ns)
                self.through = max(self.through, int(msg["i0"]) + count)


def pass_protocol(from_agent: int, out: Out, passed: Passed) -> None:
    """The agent's protocol lines to the connection, whole (a torn last one as it ends)."""
    pending = b""
    while True:
        try:
            chunk = os.read(from_agent, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            if pending:
                out.write(pending)
            return
        pending += chunk
        cut = pending.rfind(b"\n") + 1
        if cut:
            out.write(pending[:cut])
            passed.read(pending[:cut])
            pending = pending[cut:]


def column(values: list[int]) -> str:
    """A column of 64-bit integers as an ``iters`` line carries it: little-endian, base64."""
    col = array("q", values)
    if sys.byteorder == "big":
        col.byteswap()
    return binascii.b2a_base64(col.tobytes(), newline=False).decode()


def ring_line(ring: Any, through: int) -> bytes:
    """The ``remote_ring`` line: the ring's count, and the timings it holds past ``through``
    (as many as it still holds: the parent's check of the count says when some were lost)."""
    completed = ring.completed()
    first = max(through, completed - ring.slots)
    ns, st = ring.read_ns(first) if completed > first else ([], [])
    msg = {
        "t": "remote_ring",
        "completed": completed,
        "slots": ring.slots,
        "i0": first,
        "ns": column(ns),
        "st": column(st),
    }
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


PIECE = 4 << 20
"""The bytes of a made file one ``remote_file`` line carries."""


def send_made(home: str, shipped: set[str], most: int, out: Out, wanted: set[str]) -> None:
    """Each file made in a folder of shipped files (``in/N/``), in ``remote_file`` lines:
    its folder's number, its name, and its bytes in base64 pieces, where it is one the parent
    takes back (``wanted``: ``in/N/NAME``); any other only by name (``left``), and one over
    ``most`` bytes stays (the run's stderr says so)."""
    root = os.path.join(home, "in")
    folders = [n for n in os.listdir(root) if n.isdigit()] if os.path.isdir(root) else []
    for index in sorted(folders, key=int):
        for name in sorted(os.listdir(os.path.join(root, index))):
            path = os.path.join(root, index, name)
            if f"in/{index}/{name}" in shipped or not os.path.isfile(path) or os.path.islink(path):
                continue
            info = os.stat(path)
            if info.st_size > most:
                sys.stderr.write(
                    f"warmscope: {name}, made there beside a shipped file, is "
                    f"{info.st_size / 2**20:.0f} MiB: over {most >> 20} MiB, it stays there "
                    "(and goes with the run's folder)\n"
                )
                sys.stderr.flush()
                continue
            head = {"t": "remote_file", "beside": int(index), "name": name}
            if f"in/{index}/{name}" not in wanted:
                out.write((json.dumps({**head, "left": True}) + "\n").encode())
                continue
            with open(path, "rb") as f:
                at, piece = 0, f.read(PIECE)
                while True:
                    after = f.read(PIECE) if piece else b""
                    data = binascii.b2a_base64(piece, newline=False).decode()
                    msg = {**head, "at": at, "data": data, "end": not after}
                    out.write((json.dumps(msg, separators=(",", ":")) + "\n").encode())
                    if not after:
                        break
                    at, piece = at + len(piece), after


def load_sibling(home: str, name: str) -> Any:
    """One of the shipped child modules, by path (the guardian itself is not in a package)."""
    path = os.path.join(home, "child", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_warmscope_remote_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up as they are made
    spec.loader.exec_module(module)
    return module


def open_gpu(home: str, nvml: Any, ordinal: object, visible: str | None) -> Any:
    """The run's ``cuda:N`` through NVML (``gpu_sampler``), where there is one."""
    if nvml is None or not isinstance(ordinal, int):
        return None
    return load_sibling(home, "gpu_sampler").open_gpu(nvml, ordinal, visible)


def sample(sampler: Any, pid: int, gpu: Any, ring: Any, hz: float, out: Out) -> None:
    """Samples of the agent's tree, each with the ring's count then (the iteration running)."""
    tree = sampler.TreeSampler(pid, gpu)
    period = 1.0 / max(hz, 0.1)
    while True:
        time.sleep(period)
        try:
            reading = tree.sample()
        except (OSError, ValueError, IndexError):
            reading = None
        if reading is None:
            return
        msg = {"t": "remote_sample", **reading, "completed": ring.completed()}
        out.write((json.dumps(msg) + "\n").encode())


def main() -> None:
    """Unpack what was shipped, say hello, start the agent, pass its protocol and samples
    through, send back what it made; exit as the agent did."""
    payload = json.loads(read_exact(int(read_line())))
    home = tempfile.mkdtemp(prefix="warmscope-remote-")
    try:
        shipped = unpack(home, payload)
        env = dict(os.environ)
        for name in payload.get("unset", []):
            env.pop(name, None)
        env.update(payload["env"])
        run_id = env.get(RUN_ID_VAR, "")
        sampler = load_sibling(home, "remote_sampler")
        sampler = sampler if sampler.available() else None
        nvml, nvml_status = load_nvml()
        gpu = open_gpu(home, nvml, payload.get("gpu_index"), env.get("CUDA_VISIBLE_DEVICES"))
        ring = load_sibling(home, "ring").IterationRing.create()
        hello = hello_line(home, payload, env, nvml, nvml_status, gpu, sampler, ring)
        out = Out()
        command = agent_command(home, payload, hello, out)
        out.write((json.dumps(hello) + "\n").encode())
        pid, to_agent, from_agent = spawn(command, env, ring, payload)
        agent = Agent(pid)
        threading.Thread(
            target=forward, args=(to_agent, agent, run_id), name="forward", daemon=True
        ).start()
        passed = Passed()
        passing = threading.Thread(
            target=pass_protocol, args=(from_agent, out, passed), daemon=True
        )
        passing.start()
        if sampler is not None:
            hz = float(payload.get("sample_hz", 10))
            args = (sampler, pid, gpu, ring, hz, out)
            threading.Thread(target=sample, args=args, daemon=True).start()
        status = agent.wait()
        end_run(pid, run_id)
        passing.join(5.0)  # the last protocol lines, once every writer is gone
        with contextlib.suppress(OSError):  # the connection may be what ended the run
            wanted = {str(rel) for rel in payload.get("made_names") or []}
            send_made(home, shipped, int(payload.get("made_max", 0)), out, wanted)
            out.write(ring_line(ring, passed.through))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        os._exit(128 + sig if sig in CRASH_SIGNALS else 1)
    os._exit(os.WEXITSTATUS(status))


def unpack(home: str, payload: dict[str, Any]) -> set[str]:
    """The shipped sources and the run's files (recipe, inputs) under ``home``; the latter's
    names (what the run may make beside them is told from them)."""
    for rel, text in payload["files"].items():
        path = os.path.join(home, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    shipped: set[str] = set()
    for rel, size in payload.get("blobs", []):
        path = os.path.join(home, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        read_file(path, int(size))
        shipped.add(rel)
    return shipped


def hello_line(
    home: str,
    payload: dict[str, Any],
    env: dict[str, str],
    nvml: Any,
    nvml_status: str,
    gpu: Any,
    sampler: Any,
    ring: Any,
) -> dict[str, Any]:
    """Who and where the guardian is, what it samples, the run's ring, compile cache and
    containment here (``env`` takes a cold cache's folders)."""
    hello = whoami(home, nvml, nvml_status)
    if payload.get("shipped"):  # where each local file the run names was put here
        hello["shipped"] = {k: f"{home}/{rel}" for k, rel in payload["shipped"].items()}
    if gpu is not None:  # which device, its ceilings, what it cannot report
        hello["gpu"] = gpu.describe()
    hello["samples"] = (
        "not taken: no /proc there"
        if not sampler
        else "taken there, from /proc (CPU and memory) and NVML (the GPU)"
        if gpu
        else "taken there, from /proc (CPU and memory; not the GPU)"
    )
    hello["ring"] = {"fd": ring.fd, "slots": ring.slots}
    cache = payload.get("compile_cache")
    if cache == "cold":  # a fresh folder, gone with the run's own
        folders = {"inductor": f"{home}/cache/inductor", "triton": f"{home}/cache/triton"}
        env.update(TORCHINDUCTOR_CACHE_DIR=folders["inductor"], TRITON_CACHE_DIR=folders["triton"])
        hello["compile_cache"] = {"mode": cache, "folders": folders, "had_entries": False}
    elif cache is not None:
        hello["compile_cache"] = {"mode": cache, "folders": "the remote user's own"}
    held: dict[str, object] = {"by": "process group and run id, there"}
    if payload.get("memory_limit"):  # the child's address space, as without a memory cgroup
        held.update(memory_limit=payload["memory_limit"], memory_by="RLIMIT_AS")
    hello["containment"] = held
    return hello


def agent_command(home: str, payload: dict[str, Any], hello: dict[str, Any], out: Any) -> list[str]:
    """The agent to run: the shipped Python one, or the C++ one built here against the torch
    this interpreter imports (cached as a local run caches it); where it cannot be built, the
    hello says why and the guardian exits as an agent that refused its run."""
    command = [sys.executable, os.path.join(home, payload["agent"])]
    if payload.get("runtime") != "cpp":
        return command
    try:
        maker = load_sibling(home, "cpp_make")
        source = maker.Path(home, "child", "cpp_agent.cpp")
        command = [str(maker.build(maker.agent_for(None, source)))]
        hello["cpp_agent"] = command[0]
    except Exception as exc:
        hello["cpp_error"] = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        out.write((json.dumps(hello) + "\n").encode())
        shutil.rmtree(home, ignore_errors=True)
        os._exit(2)  # as an agent that refused its run: bad usage
    return command


def spawn(
    command: list[str], env: dict[str, str], ring: Any, payload: dict[str, Any]
) -> tuple[int, int, int]:
    """The agent in a session of its own (its workers end with it), the ring passed as a
    local parent passes it, the memory limit as an rlimit: its pid, and the guardian's ends
    of its stdin and stdout."""
    read_side, to_agent = os.pipe()
    from_agent, agent_out = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.dup2(read_side, 0)
        os.dup2(agent_out, 1)
        for fd in (read_side, to_agent, from_agent, agent_out):
            os.close(fd)
        os.set_inheritable(ring.fd, True)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as a freshly started process has it
        limit = payload.get("memory_limit")
        if limit:
            import resource  # in the forked child only

            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if payload.get("runtime") == "cpp":  # its first phase: from here to its main
            env["WARMSCOPE_SPAWN_NS"] = str(time.monotonic_ns())
        os.execve(command[0], command, env)
    os.close(read_side)
    os.close(agent_out)
    return pid, to_agent, from_agent


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # signals reach the agent as `signal N` lines
    try:
        main()
    except Gone:  # its folder is gone already (``main``'s own cleanup)
        os._exit(EXIT_GONE)
