"""The agent's process for one run, and every process the run starts: spawned here (into the
run's own cgroup, beside the observer's cores, its config on stdin), as the C++ agent, or over
``--host``; signalled alone or as the whole run; what it leaves ended (``proctree``, the
cgroup); whether it ran out of memory.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warmscope.core.base.sizes import parse_size
from warmscope.core.child import protocol
from warmscope.core.data.cpp_runtime import is_cpp
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.targets import Target
from warmscope.core.run import cpp_build, launcher, proctree, remote
from warmscope.core.run.cgroup import RunCgroup, contain, oom_kills_here, out_of_memory
from warmscope.core.run.child_setup import child_env, spawn_agent
from warmscope.core.run.guardian import Guardian

AGENT = Path(__file__).resolve().parent.parent / "child" / "agent.py"

Commit = Callable[[dict[str, Any]], None]
"""Where a record line about the process goes (``LiveRecord.commit``)."""


class AgentProcess:
    """The process that runs the agent for ``settings``, and the run's others (``run_id``)."""

    def __init__(self, settings: RunSettings, run_id: str) -> None:
        self.settings = settings
        self.run_id = run_id
        self.proc: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] = {}
        """The child's environment, once made (``environment``)."""
        self.cgroup: RunCgroup | None = None
        """The run's own cgroup, where one could be made (``cgroup``)."""
        self.guardian = Guardian()
        """Ends the run's processes if warmscope dies (see ``guardian``)."""
        self._memory_limit = (
            parse_size(settings.memory_limit) if settings.memory_limit is not None else None
        )
        self._oom_kills0 = 0

    @property
    def cpp(self) -> bool:
        """The C++ agent runs here (``--runtime cpp``; over ``--host`` its remote end builds it)."""
        return is_cpp(self.settings) and not self.settings.host

    def command(self) -> tuple[list[str], str, dict[str, Any]]:
        """What starts the agent, who it is in an error, and the C++ agent's own config: built
        first where it is not yet (a run plan builds it as a step it shows)."""
        python = self.settings.python or sys.executable
        if not self.cpp:
            return [python, str(AGENT)], f"--python {python}", {}
        child = cpp_build.child_for(self.settings.python, self.settings.recipe)
        command, cpp_config = child.build()
        return command, "the C++ agent", cpp_config

    def environment(self, jit_log: str | None, cache_env: dict[str, str]) -> dict[str, str]:
        self.env = child_env(self.settings, jit_log, cache_env, self.run_id)
        return self.env

    def launch(
        self,
        command: list[str],
        who: str,
        config: dict[str, Any],
        *,
        mode: str,
        target: Target,
        ring_fd: int,
        commit: Commit,
    ) -> None:
        """Start the agent and hand it ``config``: over ``--host`` (no local cgroup, no
        placement; its ring is ``remote``'s), else here, contained and placed."""
        self._oom_kills0 = oom_kills_here()  # kills after this one are the run's
        if host := self.settings.host:
            self.proc, hello = remote.connect(
                self.settings, mode, target, config, self.env, self.guardian
            )
            commit({"type": "spawned", "pid": self.proc.pid})
            commit({"type": "env", "env": remote.environment(hello, host)})
            return
        if self.cpp:
            config["spawn_ns"] = time.monotonic_ns()  # its first phase: from here to its main
        self.proc = spawn_agent(command, self.env, ring_fd, who)
        # Into the run's cgroup before it reads its config: no model code has run yet.
        self.cgroup, containment = contain(
            self.run_id, self.proc.pid, self._memory_limit, self.settings.max_procs
        )
        self.guardian.start(self.run_id, self.cgroup.path if self.cgroup else None)
        commit({"type": "spawned", "pid": self.proc.pid})
        commit({"type": "env", "env": {"containment": containment}})
        commit({"type": "env", "env": {"observer": launcher.place_observer(self.proc.pid)}})
        assert self.proc.stdin is not None
        # A child that is not a Python (``--python /bin/ls``) may be gone already: what it did
        # is judged when it exits (no hello), not here.
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(protocol.encode(config))
            self.proc.stdin.flush()  # stays open: its EOF tells the child the parent is gone

    def signal(self, sig: int, *, group: bool) -> None:
        """``sig`` to the agent, or (``group``) to the whole run: its process group, its
        descendants, helpers that escaped."""
        proc = self.proc
        if proc is None:
            return
        if self.settings.host:  # the remote guardian delivers it, to the agent's group
            return remote.send_signal(proc, sig)
        if group:
            proctree.signal_all(self.run_id, proc.pid if proc.returncode is None else None, sig)
        elif proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, sig)

    def abandon(self) -> None:
        """A start that failed: whatever it started ended, now."""
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
        self.end_cgroup()
        self.guardian.stop()

    def end_cgroup(self) -> list[int]:
        """Kill whatever is left in the run's cgroup and remove it; the pids it ended."""
        group, self.cgroup = self.cgroup, None
        return group.end() if group is not None else []

    def end_leftovers(self) -> tuple[list[int], list[int]]:
        """Helpers the model started (inheriting the pipes, or escaped with setsid) ended
        too: all at once through the run's cgroup where it has one (it finds helpers that
        scrubbed their environment), then by the run id. The pids the cgroup held, and what
        was still alive after SIGKILL."""
        escaped = self.end_cgroup()
        return escaped, proctree.end_all(self.run_id, None)

    def out_of_memory(
        self, returncode: int, error: dict[str, Any] | None, rss_mb: list[float]
    ) -> str | None:
        """Why the run ran out of memory, in words, where it did (``cgroup.out_of_memory``)."""
        return out_of_memory(
            self.cgroup,
            self.settings.memory_limit,
            returncode,
            oom_kills_here() > self._oom_kills0,
            error,
            rss_mb,
        )

    def close_stdin(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
