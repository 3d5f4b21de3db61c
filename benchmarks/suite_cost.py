"""What the test suite costs: wall seconds and CPU-minutes, in all and per test file.

    python benchmarks/suite_cost.py [--top 15] [--top-tests 0] [--json FILE] [--compiles]
                                    [PYTEST ARGS...]

Without pytest arguments it runs the suite as ``make pytest`` does (``-n auto --maxprocesses 4
--dist loadfile --no-loadscope-reorder``); with some (``tests/test_warmup.py``, ``-k …``,
``-n 2``), those instead. Printed:

- the wall time, and the CPU time of pytest and every process below it (user + system, from
  ``getrusage(RUSAGE_CHILDREN)``; this process is the subreaper of the tree, so processes
  orphaned on the way, their parent gone first, are counted too once they end);
- the files that took the most CPU: each test's own process's CPU and that of the processes
  it waited for (its children, their children), from the test's setup to its teardown, a
  module fixture's teardown counted with the module's last test; "outside tests" is the rest
  (start-up, collection, xdist, what ended after the test that started it);
- with ``--top-tests N``: the N single tests that took the most CPU, as the files;
- with ``--compiles``: each C++ build the suite ran (``g++ … -o``, through a wrapper put first
  on ``PATH``), by what it built (the C++ agent, a recipe's library, a syntax check,
  AOTInductor's, others) and how it ended (built, failed, or stopped: killed).

Figures only: nothing here asserts a time. This process adds one import of the plugin per
pytest process, and a small JSON file per worker.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ARGS = ["-n", "auto", "--maxprocesses", "4", "--dist", "loadfile", "--no-loadscope-reorder"]
"""``make pytest``'s own (its ``-q`` is always added)."""
OUT_VAR = "WARMSCOPE_SUITE_COST_DIR"
"""Where each pytest process of the run writes its per-file figures (set by ``main``)."""
COMPILERS = ("g++", "c++", "clang++")
PR_SET_CHILD_SUBREAPER = 36


# -- the plugin each pytest process loads (``-p benchmarks.suite_cost``) --------------------

_files: dict[str, list[float]] = {}  # file -> [cpu_s, wall_s, tests]
_tests: dict[str, list[float]] = {}  # test -> [cpu_s, wall_s]


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


try:
    import pytest
except ImportError:  # the runner's side needs none of it
    pass
else:

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        cpu, wall = _cpu_s(), time.monotonic()
        yield
        cpu, wall = _cpu_s() - cpu, time.monotonic() - wall
        entry = _files.setdefault(item.location[0], [0.0, 0.0, 0])
        entry[0] += cpu
        entry[1] += wall
        entry[2] += 1
        _tests[item.nodeid] = [cpu, wall]

    def pytest_sessionfinish(session: pytest.Session) -> None:
        folder = os.environ.get(OUT_VAR)
        if not folder:
            return
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(folder, f"{name}.json").write_text(json.dumps({"files": _files, "tests": _tests}))


# -- the runner ----------------------------------------------------------------------------


def become_subreaper() -> bool:
    """Orphans below this process are handed to it (not to init), so that their CPU time is
    counted when it reaps them (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def wait_reaping(proc: subprocess.Popen[bytes]) -> int:
    """``proc``'s exit code, reaping on the way whatever else ends below this process: an
    orphan handed to a subreaper stays a zombie until it is reaped, and tests that wait for a
    process they killed to be gone would wait for it."""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:  # reaped elsewhere (not expected)
            return proc.wait()
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode


def reap_orphans(within: float) -> int:
    """Reap what was handed to this process and has ended, waiting up to ``within`` seconds
    for the rest; how many were still running then (their CPU is not counted)."""
    deadline = time.monotonic() + within
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0
        if pid:
            continue
        if time.monotonic() > deadline:
            return len(_children())
        time.sleep(0.1)


def _children() -> list[str]:
    me = str(os.getpid())
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[1] == me:
                found.append(stat.parent.name)
    return found


WRAPPER = """#!/bin/sh
case " $* " in
  *" -o "*) ;;
  *) exec {real} "$@" ;;
esac
line="$*"
printf 'start\\t%s\\n' "$line" >> {log}
{real} "$@"
code=$?
printf '%s\\t%s\\n' "$code" "$line" >> {log}
exit $code
"""
"""A compiler that logs each build (a line with ``-o``) as it starts and as it ends."""


def compiler_wrappers(folder: Path, log: Path) -> dict[str, str]:
    """``WRAPPER`` for each C++ compiler on ``PATH``; the environment that puts them first."""
    folder.mkdir()
    for name in COMPILERS:
        real = shutil.which(name)
        if real is None:
            continue
        path = folder / name
        path.write_text(WRAPPER.format(log=shlex.quote(str(log)), real=shlex.quote(real)))
        path.chmod(0o755)
    env = {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}
    cxx = os.environ.get("CXX")
    if cxx and shutil.which(Path(cxx).name, path=str(folder)):
        env["CXX"] = Path(cxx).name
    return env


def kind_of_build(line: str) -> str:
    words = line.split()
    if "cpp_agent.cpp" in line:
        return "the C++ agent"
    if "shim.cpp" in line and "-DWARMUP_NO_MAIN" in words:
        return "a C++ recipe's library, for the agent"
    if "-fsyntax-only" in words:
        return "a syntax check"
    if "torchinductor" in line.lower() or "aoti" in line.lower():
        return "AOTInductor's or inductor's"
    return "other (a recipe built on its own, ...)"


def builds_by_kind(log: list[str]) -> dict[str, list[int]]:
    """Each kind's builds: ``[ended well, failed, stopped]`` (started and never ended: killed
    with its process group, as a stopped build is)."""
    started: list[str] = []
    ended: dict[str, list[int]] = {}
    for entry in log:
        status, _, line = entry.partition("\t")
        if status == "start":
            started.append(line)
        else:
            ended.setdefault(line, []).append(int(status))
    kinds: dict[str, list[int]] = {}
    for line in started:
        counts = kinds.setdefault(kind_of_build(line), [0, 0, 0])
        codes = ended.get(line)
        counts[0 if codes and codes[0] == 0 else 1 if codes else 2] += 1
        if codes:
            codes.pop(0)
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog="Other arguments go to pytest."
    )
    parser.add_argument("--top", type=int, default=15, help="how many files to list (15)")
    parser.add_argument(
        "--top-tests", type=int, default=0, help="how many single tests to list as well (0)"
    )
    parser.add_argument("--json", type=Path, help="write the figures to this file as well")
    parser.add_argument(
        "--compiles", action="store_true", help="count the C++ builds, by what they built"
    )
    ours, pytest_args = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="suite-cost-") as scratch:
        out = Path(scratch, "files")
        out.mkdir()
        env = dict(os.environ, **{OUT_VAR: str(out)})
        log = Path(scratch, "compiles.log")
        if ours.compiles:
            env.update(compiler_wrappers(Path(scratch, "bin"), log))
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "benchmarks.suite_cost"]
        argv += pytest_args or DEFAULT_ARGS
        subreaper = become_subreaper()
        t0 = time.monotonic()
        code = wait_reaping(subprocess.Popen(argv, cwd=ROOT, env=env))
        wall = time.monotonic() - t0
        still_running = reap_orphans(10.0) if subreaper else 0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = usage.ru_utime + usage.ru_stime
        files: dict[str, list[float]] = {}
        tests: dict[str, list[float]] = {}
        for part in out.glob("*.json"):
            doc = json.loads(part.read_text())
            tests.update(doc["tests"])
            for name, (c, w, n) in doc["files"].items():
                entry = files.setdefault(name, [0.0, 0.0, 0])
                entry[0] += c
                entry[1] += w
                entry[2] += n
        builds = log.read_text().splitlines() if log.exists() else []
    report(ours, code, wall, cpu, usage, files, tests, builds, still_running, subreaper)
    sys.exit(code)


def report(
    ours: argparse.Namespace,
    code: int,
    wall: float,
    cpu: float,
    usage: resource.struct_rusage,
    files: dict[str, list[float]],
    tests: dict[str, list[float]],
    builds: list[str],
    still_running: int,
    subreaper: bool,
) -> None:
    in_tests = sum(c for c, _, _ in files.values())
    ranked = sorted(files.items(), key=lambda kv: kv[1][0], reverse=True)
    print()
    print(f"pytest exited {code}")
    print(f"wall: {wall:.0f} s")
    print(
        f"CPU:  {cpu / 60:.1f} CPU-min ({cpu:.0f} s: user {usage.ru_utime:.0f}, "
        f"system {usage.ru_stime:.0f}), {cpu / wall:.2f} cores on average"
    )
    if not subreaper:
        print("      (not a subreaper here: processes orphaned on the way are not counted)")
    if still_running:
        print(f"      ({still_running} processes still ran 10 s after pytest: not counted)")
    print(f"      in tests {in_tests:.0f} s, outside tests {cpu - in_tests:.0f} s")
    if ranked:
        print(f"\nthe {min(ours.top, len(ranked))} files that took the most CPU:")
        print(f"{'CPU-s':>7} {'wall-s':>7} {'tests':>5}  file")
        for name, (c, w, n) in ranked[: ours.top]:
            print(f"{c:7.1f} {w:7.1f} {n:5d}  {name}")
    if ours.top_tests and tests:
        print(f"\nthe {min(ours.top_tests, len(tests))} tests that took the most CPU:")
        print(f"{'CPU-s':>7} {'wall-s':>7}  test")
        for name, (c, w) in sorted(tests.items(), key=lambda kv: -kv[1][0])[: ours.top_tests]:
            print(f"{c:7.1f} {w:7.1f}  {name}")
    if ours.compiles:
        kinds = builds_by_kind(builds)
        print(f"\nC++ builds: {sum(sum(c) for c in kinds.values())}")
        print(f"{'built':>5} {'failed':>6} {'stopped':>7}  of")
        for kind, (ok, failed, stopped) in sorted(kinds.items(), key=lambda kv: -sum(kv[1])):
            print(f"{ok:5d} {failed:6d} {stopped:7d}  {kind}")
    if ours.json is not None:
        ours.json.write_text(
            json.dumps(
                {
                    "exit": code,
                    "wall_s": round(wall, 1),
                    "cpu_s": round(cpu, 1),
                    "user_s": round(usage.ru_utime, 1),
                    "system_s": round(usage.ru_stime, 1),
                    "files": {
                        name: {"cpu_s": round(c, 1), "wall_s": round(w, 1), "tests": n}
                        for name, (c, w, n) in ranked
                    },
                    "tests": {
                        name: {"cpu_s": round(c, 1), "wall_s": round(w, 1)}
                        for name, (c, w) in sorted(tests.items(), key=lambda kv: -kv[1][0])
                    },
                    "compiler_log": builds,
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
