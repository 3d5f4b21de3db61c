"""``RunSettings``: everything one run needs, its presets, validation and JSON form."""

from __future__ import annotations

import math
import os
import re
import shutil
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from warmscope.core.compile_cache import MODES as COMPILE_CACHE_MODES
from warmscope.core.knobs import KNOBS, KnobError, changed, default_values, knob
from warmscope.core.outcome import UsageError
from warmscope.core.safe_text import clean_line
from warmscope.core.targets import InputSpec, Target, TargetError, parse_input, resolve_target

DEFAULT_ITERS = 200
DEFAULT_SAMPLE_HZ = 10.0
# What `--jit-log` means when not given, for script/trace runs: the profiling executor's own
# graph dumps ("Profiled Graph", "Optimized Graph"), which mark its warm-up stages and cost
# nothing once warm.
AUTO_JIT_LOG = "profiling_graph_executor_impl"
MAX_PROFILED = 100
"""The most iterations ``--profile-iters`` may ask for: each runs slowly and writes a trace."""

# C0 controls and DEL: never part of a knob's value (a terminal would act on them, a log
# line would break).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class SettingsError(UsageError):
    """Settings that cannot run: bad usage, exit code 2. The message names what is wrong."""


@dataclass(frozen=True)
class Preset:
    name: str
    help: str
    knobs: dict[str, Any]


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "torchscript",
            "TorchScript with torch's defaults (profiling executor on)",
            {"mode": "script"},
        ),
        Preset(
            "no-profiling",
            "TorchScript, profiling executor off: no profiling run, no specialization",
            {"mode": "script", "profiling_executor": False},
        ),
        Preset(
            "no-optimizer",
            "TorchScript, graph optimizer off: the graph runs as scripted",
            {"mode": "script", "graph_optimizer": False},
        ),
        Preset(
            "frozen",
            "TorchScript, frozen and optimized for inference",
            {"mode": "script", "freeze": True, "optimize_for_inference": True},
        ),
        Preset("eager", "plain eager PyTorch", {"mode": "eager"}),
        Preset("compile", "torch.compile with its defaults (inductor)", {"mode": "compile"}),
    )
}


@dataclass
class RunSettings:
    """One run's settings. ``knobs`` holds every knob; ``None`` means torch's own default."""

    target: str
    inputs: list[str] = field(default_factory=list)
    knobs: dict[str, Any] = field(default_factory=default_values)
    env: dict[str, str] = field(default_factory=dict)
    iters: int = DEFAULT_ITERS
    duration: float | None = None
    timeout: float | None = None
    jit_log: str | None = None
    """``PYTORCH_JIT_LOG_LEVEL`` syntax; ``None``: automatic (see ``AUTO_JIT_LOG``); ``""``: off."""
    torch_logs: str | None = None
    """``TORCH_LOGS`` syntax, passed to the child."""
    profile_iters: str | None = None
    profiled_in_stats: bool = False
    """Count profiled iterations in the latency statistics (by default the profiler's slowdown
    keeps them out)."""
    profile_in_run: bool = False
    """``warmscope run``: profile inside the measured process. By default the profile comes
    from a separate process (trtexec's ``--separateProfileRun``) and the measured one runs
    without the profiler. A ``RunSession`` itself always profiles in its own process."""
    python: str | None = None
    trust_pickle: bool = False
    preset: str | None = None
    sample_hz: float = DEFAULT_SAMPLE_HZ
    compile_cache: str | None = None
    """``cold``, ``warm`` or ``user`` (see ``compile_cache``); ``None``: ``user`` for one run.
    Only compile runs have one."""

    # -- building -------------------------------------------------------------------------

    def apply_preset(self, name: str) -> None:
        """Apply a preset: every executor knob back to its default (a preset promises what
        it names, whatever an earlier choice turned off), then the preset's own values.
        Knobs of how the model runs (device, dtype, threads, grad mode) are kept."""
        preset = PRESETS.get(name)
        if preset is None:
            raise SettingsError(f"unknown preset {name!r}: one of {', '.join(PRESETS)}")
        self.preset = name
        for k in KNOBS:
            if k.group != "run":
                self.knobs[k.name] = k.default
        for key, value in preset.knobs.items():
            self.knobs[key] = value

    def set(self, assignment: str) -> None:
        """Apply one ``KEY=VALUE`` (``--set``); ``env.NAME=VALUE`` sets a child variable."""
        key, sep, value = assignment.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SettingsError(f"bad --set {assignment!r}: expected KEY=VALUE")
        if key.startswith("env."):
            self.env[key.removeprefix("env.")] = value
            return
        try:
            declared = knob(key)
        except KnobError as exc:
            raise SettingsError(str(exc)) from None
        bad = _CONTROL.search(value)
        if bad is not None:
            raise SettingsError(
                f"{key}: control character {bad.group()!r} in {value!r}; not allowed in a value"
            )
        try:
            self.knobs[key] = declared.parse(value)
        except KnobError as exc:
            raise SettingsError(str(exc)) from None

    # -- checking -------------------------------------------------------------------------

    def resolve(self) -> Target:
        """Validate everything and resolve the target; ``SettingsError`` names the problem."""
        for k in KNOBS:
            try:
                k.check(self.knobs.get(k.name, k.default))
            except KnobError as exc:
                raise SettingsError(str(exc)) from None
        unknown = set(self.knobs) - {k.name for k in KNOBS}
        if unknown:
            raise SettingsError(f"unknown knob {sorted(unknown)[0]!r}")
        if self.iters < 1:
            raise SettingsError(f"--iters must be at least 1, got {self.iters}")
        for name, value in (("--duration", self.duration), ("--timeout", self.timeout)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise SettingsError(f"{name} must be a positive number of seconds, got {value}")
        for name, env_value in self.env.items():
            if not name or "=" in name or "\0" in name:
                raise SettingsError(f"bad environment variable name {name!r}")
            if "\0" in env_value:
                raise SettingsError(f"env.{clean_line(name)}: a NUL character in {env_value!r}")
        for flag, text in (("--jit-log", self.jit_log), ("--torch-logs", self.torch_logs)):
            if text is not None and "\0" in text:
                raise SettingsError(f"{flag}: a NUL character in {text!r}")
        self.profile_plan()
        if self.compile_cache is not None and self.compile_cache not in COMPILE_CACHE_MODES:
            raise SettingsError(
                f"--compile-cache {clean_line(str(self.compile_cache))}: one of "
                + ", ".join(COMPILE_CACHE_MODES)
            )
        if self.python is not None:
            check_python(self.python)
        try:
            target = resolve_target(self.target, trust_pickle=self.trust_pickle)
            self.input_specs(target)
        except TargetError as exc:
            raise SettingsError(str(exc)) from None
        mode = self.knobs.get("mode")
        if target.scripted and mode not in (None, "script"):
            raise SettingsError(
                f"{clean_line(self.target)} is a TorchScript archive, already scripted: --mode {mode} does not apply"
            )
        return target

    def profile_plan(self) -> tuple[list[int], bool]:
        """``--profile-iters``: the iterations to profile, and whether to add a steady one."""
        return parse_profile_iters(
            self.profile_iters or "", self.iters if self.duration is None else None
        )

    def input_specs(self, target: Target) -> list[InputSpec]:
        """The forward arguments: ``--input`` if given, else the target's own example inputs."""
        return [parse_input(s) for s in (self.inputs or list(target.default_inputs))]

    def effective_mode(self, target: Target) -> str:
        return self.knobs.get("mode") or target.default_mode

    def effective_jit_log(self, target: Target) -> str:
        if self.jit_log is not None:
            return self.jit_log
        return AUTO_JIT_LOG if self.effective_mode(target) in ("script", "trace") else ""

    def changed_knobs(self) -> dict[str, Any]:
        """Knobs that differ from their defaults, in declaration order."""
        return changed(self.knobs)

    def command_line(self) -> list[str]:
        """The ``warmscope run`` command that reproduces these settings (parses back to them)."""
        argv = ["warmscope", "run", self.target]
        for spec in self.inputs:
            argv += ["--input", spec]
        base = default_values()
        if self.preset in PRESETS:
            argv += ["--preset", self.preset]
            base.update(PRESETS[self.preset].knobs)
        for k in KNOBS:
            value = self.knobs.get(k.name, k.default)
            if value != base.get(k.name):
                argv += ["--set", f"{k.name}={k.show(value)}"]
        for name, value in self.env.items():
            argv += ["--set", f"env.{name}={value}"]
        argv += (
            ["--duration", f"{self.duration:g}"] if self.duration else ["--iters", str(self.iters)]
        )
        optional = (
            ("--timeout", self.timeout),
            ("--jit-log", self.jit_log),
            ("--torch-logs", self.torch_logs),
            ("--profile-iters", self.profile_iters),
            ("--python", self.python),
            ("--compile-cache", self.compile_cache),
        )
        for flag, value in optional:
            if value is not None:
                argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
        if self.profiled_in_stats:
            argv.append("--profiled-in-stats")
        if self.profile_in_run:
            argv.append("--profile-in-run")
        if self.trust_pickle:
            argv.append("--trust-pickle")
        return argv

    # -- JSON -----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def untrusted(self) -> dict[str, Any]:
        """The settings that run code or choose what runs: the interpreter, the child's
        environment (``LD_PRELOAD``…) and pickle trust. Read from a file, they are used only
        when the user confirms them."""
        found: dict[str, Any] = {}
        if self.python is not None:
            found["python"] = self.python
        if self.env:
            found["env"] = dict(self.env)
        if self.trust_pickle:
            found["trust_pickle"] = True
        return found

    def without_untrusted(self) -> RunSettings:
        """A copy with ``untrusted()`` reset: this interpreter, no extra environment, no pickle."""
        safe = RunSettings.from_json(self.to_json())
        safe.python, safe.env, safe.trust_pickle = None, {}, False
        return safe

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSettings:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        settings = cls(**values)
        merged = default_values()
        merged.update(settings.knobs or {})
        settings.knobs = merged
        return settings


def check_python(python: str) -> None:
    """``--python``: an executable file (a bare name is looked up on ``PATH``, as the child is
    started). Whether it is a Python with torch is found when the child starts."""
    shown = clean_line(python)
    if not python:
        raise SettingsError("--python: empty path")
    if "\0" in python:
        raise SettingsError(f"--python {python!r}: a NUL character in the path")
    if os.sep not in python:
        if shutil.which(python) is None:
            raise SettingsError(f"--python {shown}: not an executable file, and not found on PATH")
        return
    if os.path.isdir(python):
        raise SettingsError(f"--python {shown} is a folder, not a Python interpreter")
    if not os.path.exists(python):
        raise SettingsError(f"--python {shown}: not an executable file: no such file")
    if not os.path.isfile(python):
        raise SettingsError(f"--python {shown}: not an executable file: not a regular file")
    if not os.access(python, os.X_OK):
        raise SettingsError(
            f"--python {shown}: not an executable file: no permission to execute it"
        )


def parse_profile_iters(text: str, iters: int | None = None) -> tuple[list[int], bool]:
    """``0,1,2,50``, ranges ``0-3``, and ``steady`` (one more pass once the run has settled).

    ``SettingsError`` names a bad item, an iteration beyond ``iters`` when that is known, or
    more than ``MAX_PROFILED`` iterations (counted before any range is expanded).
    """
    indices: set[int] = set()
    steady = False
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item == "steady":
            steady = True
            continue
        low, dash, high = item.partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise SettingsError(
                f"bad --profile-iters item {item!r}: expected N, N-M or steady"
            ) from None
        if first < 0 or last < first:
            raise SettingsError(f"bad --profile-iters range {item!r}")
        # Count before expanding: a range of 10^8 must not become a set of 10^8.
        overlap = sum(1 for i in indices if first <= i <= last)
        total = len(indices) + (last - first + 1) - overlap
        if total > MAX_PROFILED:
            raise SettingsError(
                f"--profile-iters {clean_line(text.strip())} asks for {total} profiled "
                f"iterations; at most {MAX_PROFILED} (each is slow and writes a trace)"
            )
        if iters is not None and last >= iters:
            raise SettingsError(
                f"--profile-iters {clean_line(item)}: the run has only {iters} iterations (0-{iters - 1})"
            )
        indices.update(range(first, last + 1))
    return sorted(indices), steady
