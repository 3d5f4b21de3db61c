"""Building the C++ agent (``cpp_agent.cpp``, beside this file) against the torch an
interpreter imports, cached per torch build and source: wherever the source is, here or, over
``--host``, on the remote machine (the guardian loads this file there, alone, by path).

The torch is found by asking the interpreter where ``torch`` lives, without importing it, and
read from its files (``version.py``, the headers, libraries and CMake config the wheel ships).
The binary lives in the user's cache folder under a key made of the torch build, the source and
the compiler (``~/.cache/warmscope/cpp-agent/KEY/``), built into a scratch file and moved into
place under a lock, so runs, sweeps and test workers started together build it once.

One ``g++`` line, no CMake: the agent is one file, and CMake's configure step (its compiler
checks, Torch's config) adds to a build it cannot parallelise (measured here: 0.9 s configure
+ 37.4 s ninja against 37.7 s for this line). Almost all of a build is the compiler reading
libtorch's headers.

Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

try:
    from .outcome import UsageError as _Refusal
except ImportError:  # loaded alone, by path, on a remote host: its message is what travels
    _Refusal = ValueError  # type: ignore[assignment,misc]

SOURCE = Path(__file__).resolve().parent / "cpp_agent.cpp"
BINARY = "warmscope-cpp-agent"
CACHE_VAR = "WARMSCOPE_CACHE_DIR"
"""Where warmscope caches what it builds; else ``$XDG_CACHE_HOME/warmscope``, else
``~/.cache/warmscope``."""
COMPILERS = ("c++", "g++", "clang++")
BUILD_TIMEOUT_S = 900.0
FIND_TORCH = (
    "import importlib.util as u; s = u.find_spec('torch'); "
    "print(s.origin if s and s.origin else '')"
)
"""Where the interpreter finds torch, asked without importing it (that takes seconds)."""


class BuildError(_Refusal):
    """No torch, no compiler, or the agent did not build: the one line names what to install
    or read (exit 2: the machine, not the model, is what to fix)."""


@dataclass(frozen=True)
class Torch:
    """A torch installation, as its files say."""

    root: Path
    """The package folder (``site-packages/torch``): ``include``, ``lib``, ``share/cmake``."""
    version: str
    git: str
    cuda: str

    @property
    def libraries(self) -> list[str]:
        """What the agent links: libtorch's CPU part, and its CUDA part where the wheel has one
        (linked whatever the agent calls, so that CUDA registers itself as it loads)."""
        names = ["torch", "torch_cpu", "c10"]
        names += [
            n for n in ("torch_cuda", "c10_cuda") if (self.root / "lib" / f"lib{n}.so").exists()
        ]
        return names


def _version_field(text: str, name: str) -> str:
    match = re.search(rf"^{name}(?:\s*:[^=]*)?\s*=\s*['\"]([^'\"]*)['\"]", text, re.MULTILINE)
    return match.group(1) if match else ""


def locate_torch(python: str | None) -> Torch:
    """The torch that ``python`` (``None``: this interpreter) imports; ``BuildError`` where
    it has none, or one without libtorch's headers."""
    if python is None:
        spec = importlib.util.find_spec("torch")
        origin = spec.origin if spec is not None else None
    else:
        try:
            found = subprocess.run(
                [python, "-c", FIND_TORCH], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BuildError(f"--python {python}: cannot run it ({exc})") from None
        origin = found.stdout.strip() if found.returncode == 0 else None
    who = python or sys.executable
    if not origin:
        raise BuildError(
            f"{who} has no torch: install torch there, or pass --python with an interpreter "
            "that has it"
        )
    root = Path(origin).resolve().parent
    if not (root / "include" / "torch" / "script.h").exists() or not (root / "lib").is_dir():
        raise BuildError(
            f"the torch at {root} ships no libtorch headers and libraries (include/, lib/): "
            "the C++ runtime builds against a torch wheel's libtorch"
        )
    try:
        text = (root / "version.py").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return Torch(
        root,
        _version_field(text, "__version__") or "unknown",
        _version_field(text, "git_version"),
        _version_field(text, "cuda"),
    )


def compiler() -> str:
    """The C++ compiler: ``$CXX``, else the first of ``COMPILERS`` on ``PATH``."""
    chosen = os.environ.get("CXX")
    if chosen:
        found = shutil.which(chosen)
        if found is None:
            raise BuildError(f"the C++ runtime builds its agent with $CXX={chosen}: not found")
        return found
    for name in COMPILERS:
        found = shutil.which(name)
        if found:
            return found
    raise BuildError(
        "the C++ runtime builds its agent with a C++ compiler, and none is on PATH: install "
        "g++ (Debian/Ubuntu: apt install g++; Fedora: dnf install gcc-c++) or set CXX"
    )


def _compiler_version(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.splitlines()[0] if out.stdout else ""


def _torch_flags(torch: Torch) -> tuple[str, list[str]]:
    """The C++ standard libtorch's headers need and the flags its CMake config asks of users
    (the C++11 ABI choice of older wheels), read from ``TorchConfig.cmake``."""
    try:
        config = (torch.root / "share" / "cmake" / "Torch" / "TorchConfig.cmake").read_text()
    except OSError:
        config = ""
    standard = re.search(r"CXX_STANDARD\s+(\d+)", config)
    flags = re.search(r'set\(TORCH_CXX_FLAGS\s+"([^"]*)"\)', config)
    return standard.group(1) if standard else "17", flags.group(1).split() if flags else []


def command(
    torch: Torch, cxx: str, source: Path, output: Path, extra: tuple[str, ...] = ()
) -> list[str]:
    """The one line that builds ``source`` against ``torch`` (``extra``: flags of its own)."""
    standard, flags = _torch_flags(torch)
    lib = torch.root / "lib"
    return [
        cxx,
        f"-std=c++{standard}",
        "-O1",  # the loop is a few lines; libtorch's headers are the build's time
        "-w",
        "-pthread",
        *flags,
        *extra,
        f'-DWARMSCOPE_TORCH_VERSION="{torch.version}"',
        f'-DWARMSCOPE_TORCH_GIT="{torch.git}"',
        f'-DWARMSCOPE_TORCH_CUDA="{torch.cuda}"',
        f"-I{torch.root / 'include'}",
        f"-I{torch.root / 'include' / 'torch' / 'csrc' / 'api' / 'include'}",
        str(source),
        "-o",
        str(output),
        f"-L{lib}",
        f"-Wl,-rpath,{lib}",
        "-Wl,--no-as-needed",
        *(f"-l{name}" for name in torch.libraries),
        "-Wl,--as-needed",
        "-ldl",
    ]


def cache_root() -> Path:
    explicit = os.environ.get(CACHE_VAR)
    if explicit:
        root = Path(explicit)
        if root.exists() and not root.is_dir():
            raise BuildError(
                f"{CACHE_VAR}={explicit!r}: not a folder; name a folder for warmscope's builds "
                "(made if missing), or unset it"
            )
        return root
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "warmscope"


def build_key(torch: Torch, cxx: str, source: bytes) -> str:
    """One key per torch build and agent source (and compiler): a new torch, a changed agent
    or another compiler is another binary."""
    libtorch = torch.root / "lib" / "libtorch_cpu.so"
    try:
        stat = libtorch.stat()
        lib_id = f"{stat.st_size}:{stat.st_mtime_ns}"
    except OSError:
        lib_id = "?"
    parts = [torch.version, torch.git, str(torch.root), lib_id, cxx, _compiler_version(cxx)]
    digest = hashlib.sha256(source)
    for part in parts:
        digest.update(b"\0" + part.encode())
    return f"{torch.version.replace('+', '-')}-{digest.hexdigest()[:16]}"


@dataclass(frozen=True)
class Agent:
    """Where the agent for one torch is, built or not."""

    torch: Torch
    cxx: str
    folder: Path
    source: Path = SOURCE

    @property
    def binary(self) -> Path:
        return self.folder / BINARY

    @property
    def built(self) -> bool:
        return os.access(self.binary, os.X_OK)


def agent_for(python: str | None, source: Path = SOURCE) -> Agent:
    """The agent for the torch ``python`` runs (``BuildError`` where there is no torch or no
    compiler); cheap: nothing is built or imported. ``source``: the agent's file (on a remote
    host, where the guardian put it)."""
    torch = locate_torch(python)
    cxx = compiler()
    return Agent(
        torch, cxx, cache_root() / "cpp-agent" / build_key(torch, cxx, source.read_bytes()), source
    )


def build(
    agent: Agent,
    *,
    cancelled: Callable[[], bool] = lambda: False,
    tell: Callable[[str], None] | None = None,
) -> Path:
    """The agent's binary, built first where it is not yet: one build at a time per key (a
    second caller waits and finds it built). ``BuildError`` names a failed build in one line
    (the compiler's first error, and where its whole output is)."""
    return built_once(
        agent.folder,
        agent.binary,
        lambda out: command(agent.torch, agent.cxx, agent.source, out),
        "the C++ agent",
        agent,
        cancelled,
        tell,
    )


def built_once(
    folder: Path,
    output: Path,
    line_for: Callable[[Path], list[str]],
    what: str,
    agent: Agent,
    cancelled: Callable[[], bool],
    tell: Callable[[str], None] | None,
) -> Path:
    """``output``, compiled by ``line_for(scratch)`` into a scratch file moved into place,
    under the folder's lock, unless it is there already."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        if output.exists():
            return output
        if tell is not None:
            tell(f"building {what} against torch {agent.torch.version} (once per torch build)")
        log = folder / "build.log"
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".building-", delete=False) as f:
            scratch = Path(f.name)
        line = line_for(scratch)
        t0 = time.monotonic()
        try:
            with open(log, "wb") as out:
                # A session of its own: g++ runs cc1plus as a child, which a stop must end too.
                proc = subprocess.Popen(
                    line, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
                code = _wait(proc, cancelled)
            if code is None:
                raise BuildError(f"stopped while building {what}")
            if code != 0:
                raise BuildError(
                    f"{what} did not build against torch {agent.torch.version} "
                    f"({Path(agent.cxx).name} exited {code}): {first_error(log)}; the whole "
                    f"output: {log}"
                )
            os.chmod(scratch, 0o755)
            os.replace(scratch, output)
        finally:
            with contextlib.suppress(OSError):
                scratch.unlink()
        facts = {
            "torch": agent.torch.version,
            "torch_root": str(agent.torch.root),
            "compiler": _compiler_version(agent.cxx),
            "seconds": round(time.monotonic() - t0, 1),
            "command": line,
        }
        (folder / "build.json").write_text(json.dumps(facts, indent=1) + "\n")
        return output


def _wait(proc: subprocess.Popen[bytes], cancelled: Callable[[], bool]) -> int | None:
    """The compiler's exit code; ``None`` where ``cancelled()`` said stop. Stopped, or left by
    an exception (a Ctrl-C, which its own session does not get), it is killed with the
    compiler proper and the assembler it started: its whole process group."""
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    try:
        while True:
            try:
                return proc.wait(0.2)
            except subprocess.TimeoutExpired:
                if cancelled() or time.monotonic() > deadline:
                    _kill_group(proc)
                    return None
    except BaseException:
        _kill_group(proc)
        raise


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def first_error(log: Path) -> str:
    """The compiler's first error line, or its last line where it named none."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no output"
    for ln in lines:
        if "error" in ln.lower():
            return ln.strip()[:300]
    return (lines[-1].strip() if lines else "no output")[:300]
