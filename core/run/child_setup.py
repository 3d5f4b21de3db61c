"""What the agent is given as it starts: its config (on stdin) and its environment.

Parent side; the session builds both from its settings just before it spawns the child.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from warmscope.core.child.knobs import KNOBS
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.targets import Target
from warmscope.core.run import launcher
from warmscope.core.run.proctree import RUN_ID_VAR


def agent_config(
    settings: RunSettings,
    target: Target,
    mode: str,
    *,
    markers: bool,
    marker_secret: str,
    trace_prefix: str,
    ring_fd: int,
    ring_slots: int,
    separate_profiles: bool,
) -> dict[str, Any]:
    """The config the agent reads from stdin before any model code runs.
    ``separate_profiles``: the profile came from another process, this one takes none."""
    knobs = dict(settings.knobs)
    knobs["mode"] = mode
    profile_iters, profile_steady = settings.profile_plan()
    if separate_profiles:
        profile_iters, profile_steady = [], False
    return {
        "parent_pid": os.getpid(),
        "target": target.to_json(),
        "inputs": [s.to_json() for s in settings.input_specs(target)],
        "inputs_file": settings.inputs_file,
        "imports": settings.imports,
        "shapes": settings.shape_plan(target),
        "schedule": settings.schedule,
        "seed": settings.seed,
        "gap": settings.gap,
        "idle_probe": settings.idle_probe,
        "replay_opening": settings.replay_opening,
        "torch_config": settings.torch_config,
        "recipe": settings.recipe,
        "fresh_inputs": settings.fresh_inputs,
        "mode": mode,
        "knobs": knobs,
        "iters": settings.iters,
        "duration": settings.duration,
        "markers": markers,
        "marker_secret": marker_secret,
        "profile_iters": profile_iters,
        "profile_steady": profile_steady,
        "trace_prefix": trace_prefix,
        "ring_fd": ring_fd,
        "ring_slots": ring_slots,
    }


def child_env(
    settings: RunSettings, jit_log: str | None, cache_env: dict[str, str], run_id: str
) -> dict[str, str]:
    """The child's environment: warmscope's, with the run's logs, knobs, cache and run id."""
    env = dict(os.environ)
    env.pop("PYTORCH_JIT_LOG_LEVEL", None)
    env.pop("TORCH_LOGS", None)
    if jit_log:
        env["PYTORCH_JIT_LOG_LEVEL"] = jit_log
    if settings.torch_logs:
        env["TORCH_LOGS"] = settings.torch_logs
    for k in KNOBS:
        value = settings.knobs.get(k.name)
        if k.apply.startswith("env:") and value is not None:
            env[k.apply.removeprefix("env:")] = str(value)
    env.update(settings.env)
    env.update(cache_env)
    env["PYTHONUNBUFFERED"] = "1"
    # Inherited by everything the child starts (compile workers too): finds any survivor.
    env[RUN_ID_VAR] = run_id
    return env


def spawn_agent(
    command: list[str], env: dict[str, str], ring_fd: int, who: str
) -> subprocess.Popen[bytes]:
    """The agent on this machine (``command``: an interpreter and agent.py, or the C++
    agent), at warmscope's own priority (not its UI's), in a process group of its own (stop it
    and its workers together), holding the shared ring's descriptor. ``who``: how a failure to
    start names it."""
    try:
        return launcher.popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
            pass_fds=(ring_fd,),
        )
    except OSError as exc:
        raise UsageError(f"{who}: cannot run it ({exc.strerror})") from None
