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
from warmscope.core.targets import (
    InputSpec,
    Target,
    TargetError,
    parse_dim,
    parse_input,
    resolve_target,
)

DEFAULT_ITERS = 200
DEFAULT_SAMPLE_HZ = 10.0
# What `--jit-log` means when not given, for script/trace runs: the profiling executor's own
# graph dumps ("Profiled Graph", "Optimized Graph"), which mark its warm-up stages and cost
# nothing once warm.
AUTO_JIT_LOG = "profiling_graph_executor_impl"
MAX_PROFILED = 100
"""The most iterations ``--profile-iters`` may ask for: each runs slowly and writes a trace."""

SCHEDULES = ("cycle", "random", "ramp", "once")
"""How ``--dim`` shapes follow each other: in turn, at random (``--seed``), in blocks in the
order given, or each once (the run then ends)."""
CONFIG_PREFIXES = ("dynamo.", "inductor.")
"""``--set dynamo.NAME=VALUE``: torch._dynamo.config / torch._inductor.config, checked in the
child against the installed torch."""
MAX_IDLE_PROBES = 10
MAX_SHAPES = 4096

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
    """``--input [NAME=]SPEC[:GEN]``: positional arguments, and keyword ones with ``NAME=``."""
    inputs_file: str | None = None
    """``--inputs FILE.pt``: a tensor, tuple/list (positional) or dict (keywords)."""
    dims: list[str] = field(default_factory=list)
    """``--dim NAME=V1,V2|A..B:STEP``: the sizes of a symbolic dimension of the inputs."""
    schedule: str = "cycle"
    seed: int = 0
    """Seeds the input values and the ``random`` schedule."""
    gap: float | None = None
    """Seconds to sleep before every iteration (not timed)."""
    idle_probe: list[float] = field(default_factory=list)
    """After the run: for each, sleep that long then time one call, three times."""
    torch_config: dict[str, str] = field(default_factory=dict)
    """``--set dynamo.NAME=VALUE`` / ``inductor.NAME=VALUE``, as typed."""
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
    recipe: str | None = None
    """``--recipe FILE.py``: a warm-up recipe whose ``prepare(model)`` runs after loading, as a
    setup phase of its own (see ``warmup``); runs code from the file."""
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
        if key.startswith(CONFIG_PREFIXES):
            check_config_key(key, value)
            self.torch_config[key] = value
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
        for key, config_value in self.torch_config.items():
            check_config_key(key, config_value)
        if self.schedule not in SCHEDULES:
            raise SettingsError(
                f"--schedule {clean_line(str(self.schedule))}: one of {', '.join(SCHEDULES)}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise SettingsError(f"--seed must be a non-negative integer, got {self.seed}")
        if self.gap is not None and not (math.isfinite(self.gap) and self.gap >= 0):
            raise SettingsError(f"--gap must be a number of seconds, got {self.gap}")
        if len(self.idle_probe) > MAX_IDLE_PROBES:
            raise SettingsError(f"--idle-probe: at most {MAX_IDLE_PROBES} gaps")
        for gap in self.idle_probe:
            if not (math.isfinite(gap) and 0 <= gap <= 3600):
                raise SettingsError(f"--idle-probe: {gap} is not a number of seconds (0-3600)")
        if self.python is not None:
            check_python(self.python)
        if self.recipe is not None and not os.path.isfile(self.recipe):
            raise SettingsError(f"--recipe {clean_line(self.recipe)}: no such file")
        try:
            target = resolve_target(self.target, trust_pickle=self.trust_pickle)
            self.shape_plan(target)
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
        """The forward arguments: ``--input`` if given, else the target's own example inputs
        (none when ``--inputs FILE`` brings them)."""
        if self.inputs_file is not None:
            return []
        specs = [parse_input(s) for s in (self.inputs or list(target.default_inputs))]
        seen: set[str] = set()
        for spec in specs:
            if spec.name is not None:
                if spec.name in seen:
                    raise TargetError(f"--input {spec.name}= is given twice")
                seen.add(spec.name)
        return specs

    def dim_values(self) -> dict[str, tuple[int, ...]]:
        """``--dim``: each symbolic dimension's sizes, in the order given."""
        values: dict[str, tuple[int, ...]] = {}
        for text in self.dims:
            name, sizes = parse_dim(text)
            if name in values:
                raise TargetError(f"--dim {name}= is given twice")
            values[name] = sizes
        return values

    def shape_plan(self, target: Target) -> list[dict[str, int]]:
        """Every combination of the ``--dim`` sizes (the last name varies fastest); ``[]``
        when no dimension is symbolic. ``TargetError`` names a name without sizes, sizes
        without a name, or inputs that cannot take dimensions."""
        if self.inputs_file is not None:
            if self.inputs:
                raise TargetError("give --input or --inputs FILE, not both")
            if not os.path.isfile(self.inputs_file):
                raise TargetError(f"--inputs {clean_line(self.inputs_file)}: no such file")
        specs = self.input_specs(target)
        dims = self.dim_values()
        used = {name for spec in specs for name in spec.symbols}
        for name in used:
            if name not in dims:
                raise TargetError(
                    f"--input uses dimension {name} but no --dim {name}=... gives its sizes"
                )
        for name in dims:
            if name not in used:
                raise TargetError(f"--dim {name}: no --input has a dimension named {name}")
        plan: list[dict[str, int]] = [{}]
        for name, sizes in dims.items():
            plan = [{**combo, name: size} for combo in plan for size in sizes]
            if len(plan) > MAX_SHAPES:
                raise TargetError(f"--dim: more than {MAX_SHAPES} shapes in all")
        if dims and self.schedule == "ramp" and self.duration is not None:
            raise TargetError("--schedule ramp splits --iters into blocks: not with --duration")
        return plan if dims else []

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
        if self.inputs_file is not None:
            argv += ["--inputs", self.inputs_file]
        for dim in self.dims:
            argv += ["--dim", dim]
        if self.schedule != "cycle":
            argv += ["--schedule", self.schedule]
        if self.seed:
            argv += ["--seed", str(self.seed)]
        if self.gap is not None:
            argv += ["--gap", f"{self.gap:g}"]
        if self.idle_probe:
            argv += ["--idle-probe", ",".join(f"{g:g}" for g in self.idle_probe)]
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
        for name, value in self.torch_config.items():
            argv += ["--set", f"{name}={value}"]
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
            ("--recipe", self.recipe),
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
        environment (``LD_PRELOAD``…), pickle trust and torch's compiler configuration. Read from a file, they are used only
        when the user confirms them."""
        found: dict[str, Any] = {}
        if self.python is not None:
            found["python"] = self.python
        if self.env:
            found["env"] = dict(self.env)
        if self.trust_pickle:
            found["trust_pickle"] = True
        if self.recipe is not None:
            found["recipe"] = self.recipe
        if self.torch_config:
            # Some options name programs (inductor.cpp.cxx): chosen by the user, not a file.
            found["torch_config"] = dict(self.torch_config)
        return found

    def without_untrusted(self) -> RunSettings:
        """A copy with ``untrusted()`` reset: this interpreter, no extra environment, no pickle."""
        safe = RunSettings.from_json(self.to_json())
        safe.python, safe.env, safe.trust_pickle = None, {}, False
        safe.torch_config = {}
        safe.recipe = None
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


def check_config_key(key: str, value: str) -> None:
    """``dynamo.NAME`` / ``inductor.NAME``: a plain option name and a printable value. Whether
    this torch has the option, and takes the value, is checked in the child."""
    name = key.partition(".")[2]
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise SettingsError(f"bad --set {clean_line(key)}: expected dynamo.NAME or inductor.NAME")
    bad = _CONTROL.search(value)
    if bad is not None:
        raise SettingsError(f"{key}: control character {bad.group()!r} in {value!r}")


def parse_seconds_list(text: str, flag: str) -> list[float]:
    """``--idle-probe 1,5,30`` -> ``[1.0, 5.0, 30.0]``; ``SettingsError`` names a bad item."""
    out = []
    for item in (p.strip() for p in text.split(",")):
        try:
            out.append(float(item))
        except ValueError:
            raise SettingsError(f"bad {flag} item {clean_line(item)!r}: expected seconds") from None
    return out


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
