"""Building the C++ agent (``cpp_agent.cpp``, beside this file) against the torch an
interpreter imports, cached per torch build and source: wherever the source is, here or, over
``--host``, on the remote machine (the guardian loads this file there, alone, by path).

The torch is found by asking the interpreter where ``torch`` lives, without importing it, and
read from its files (``version.py``, the headers, libraries and CMake config the wheel ships).
The binary lives in the user's cache folder under a key made of the torch build, the source and
the compiler (``~/.cache/warmscope/cpp-agent/KEY/``), built into a scratch file and moved into
place under a lock, so runs, sweeps and test workers started together build it once.

The cache holds code warmscope runs, so it runs only what warmscope built: its folders are
made 0700 whatever the umask, and one that is a link, another user's, or writable by group or
others is refused, naming the path and the fix; nothing in it is opened through a link; each
build records its output's SHA-256 beside it (written whole), checked before every use, and an
output that fails the check (empty, changed, planted) is built again, saying which file.

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
import stat
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
    root: Path | None = None
    """The cache's root (``cache_root()``): it and every folder below it to ``folder`` are
    warmscope's own, checked as such; ``None``: ``folder`` alone."""

    @property
    def binary(self) -> Path:
        return self.folder / BINARY

    @property
    def built(self) -> bool:
        return unsound(self.binary) is None


# -- a cache that runs only what it built -----------------------------------------------------

HASH_SUFFIX = ".sha256"


def private_folders(folder: Path, root: Path | None) -> None:
    """``root`` and each folder below it down to ``folder``, made 0700 where missing (whatever
    the umask), each refused where it is a link, not the user's, or writable by others."""
    top = root if root is not None else folder
    chain = [
        top,
        *(
            top / Path(*folder.relative_to(top).parts[: n + 1])
            for n in range(len(folder.relative_to(top).parts))
        ),
    ]
    top.parent.mkdir(parents=True, exist_ok=True)
    for path in chain:
        try:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # the umask took bits from mkdir's mode; none are added here
        except FileExistsError:
            pass
        check_owned(path, "folder")


def check_owned(path: Path, what: str) -> os.stat_result:
    """``path``'s own status (not a link's target): refused where it is a link, another
    user's, or writable by group or others, in one line naming the fix."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise BuildError(f"warmscope's build cache: cannot read {path}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise BuildError(
            f"warmscope's build cache: {path} is a link; the cache holds none: remove it"
        )
    if st.st_uid != os.geteuid():
        raise BuildError(
            f"warmscope's build cache: {path} belongs to uid {st.st_uid}, not to you: remove "
            f"it, or set {CACHE_VAR} to a folder of your own"
        )
    if st.st_mode & 0o022:
        raise BuildError(
            f"warmscope's build cache: the {what} {path} is writable by others (mode "
            f"{stat.S_IMODE(st.st_mode):o}): chmod go-w {path}, or remove it"
        )
    return st


def unsound(output: Path) -> str | None:
    """Why ``output`` is not what warmscope built (``None`` where it is): missing, empty, not
    a file warmscope can run, or not the bytes its build recorded."""
    if not os.path.lexists(output):
        return "missing"
    if os.path.islink(output):
        return "a link"
    st = check_owned(output, "file")
    if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
        return "empty" if st.st_size == 0 else "not a file"
    if not st.st_mode & stat.S_IXUSR:
        return "not executable"
    recorded = read_private(output.with_name(output.name + HASH_SUFFIX))
    if recorded is None:
        return "without the checksum its build records"
    if recorded.strip() != file_sha256(output):
        return "not the bytes its build recorded (SHA-256 differs)"
    return None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_private(path: Path) -> str | None:
    """A small file of the cache, never through a link (``None``: missing or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
        return f.read(4096)


def write_private(path: Path, text: str) -> None:
    """Written beside (a new file, 0600) and renamed onto ``path``: never through a link, and
    never half."""
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=f".{path.name}-", delete=False, encoding="utf-8"
    ) as f:
        f.write(text)
    os.replace(f.name, path)


def open_private(path: Path, flags: int) -> int:
    """``os.open`` of a file in the cache, refused where it is a link (``O_NOFOLLOW``)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise BuildError(
                f"warmscope's build cache: {path} is a link; the cache holds none: remove it"
            ) from None
        raise BuildError(f"warmscope's build cache: cannot open {path}: {exc.strerror}") from None


def agent_for(python: str | None, source: Path = SOURCE) -> Agent:
    """The agent for the torch ``python`` runs (``BuildError`` where there is no torch or no
    compiler); cheap: nothing is built or imported. ``source``: the agent's file (on a remote
    host, where the guardian put it)."""
    torch = locate_torch(python)
    cxx = compiler()
    root = cache_root()
    key = build_key(torch, cxx, source.read_bytes())
    return Agent(torch, cxx, root / "cpp-agent" / key, source, root)


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
    private_folders(folder, agent.root)
    with os.fdopen(open_private(folder / "lock", os.O_RDWR | os.O_CREAT), "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        why = unsound(output)
        if why is None:
            return output
        if tell is not None and why != "missing":
            tell(f"replacing {output}: {why}")
        if tell is not None:
            tell(f"building {what} against torch {agent.torch.version} (once per torch build)")
        log = folder / "build.log"
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".building-", delete=False) as f:
            scratch = Path(f.name)
        line = line_for(scratch)
        t0 = time.monotonic()
        try:
            with os.fdopen(open_private(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as out:
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
            os.chmod(scratch, 0o700)
            write_private(output.with_name(output.name + HASH_SUFFIX), file_sha256(scratch) + "\n")
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
        write_private(folder / "build.json", json.dumps(facts, indent=1) + "\n")
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
