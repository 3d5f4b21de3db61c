"""``RunSettings``: everything one run needs, its presets, validation and JSON form."""

from __future__ import annotations

import copy
import math
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from warmscope.core.base.safe_text import clean_line
from warmscope.core.child import target_files
from warmscope.core.child.knobs import KNOBS, KnobError, changed, default_values, knob
from warmscope.core.child.outcome import UsageError
from warmscope.core.data import cpp_runtime
from warmscope.core.data.settings.fields import FIELDS, RunFields, default_of
from warmscope.core.data.settings.process_fields import MIN_PROCS
from warmscope.core.data.settings.setting import COMPILE_CACHE_MODES, KINDS, argv, consent
from warmscope.core.data.settings.setting import DEFAULT_ITERS as DEFAULT_ITERS
from warmscope.core.data.settings.setting import DEFAULT_SAMPLE_HZ as DEFAULT_SAMPLE_HZ
from warmscope.core.data.settings.setting import PRESETS as PRESETS
from warmscope.core.data.settings.setting import SCHEDULES as SCHEDULES
from warmscope.core.data.settings.setting import Preset as Preset
from warmscope.core.data.settings.setting import SettingsError as SettingsError
from warmscope.core.data.settings.setting import parse_seconds_list as parse_seconds_list
from warmscope.core.data.targets import (
    InputSpec,
    Target,
    TargetError,
    parse_dim,
    parse_input,
    resolve_target,
)

# What `--jit-log` means when not given, for script/trace runs: the profiling executor's own
# graph dumps ("Profiled Graph", "Optimized Graph"), which mark its warm-up stages and cost
# nothing once warm.
AUTO_JIT_LOG = "profiling_graph_executor_impl"
MAX_PROFILED = 100
"""The most iterations ``--profile-iters`` may ask for: each runs slowly and writes a trace."""

CONFIG_PREFIXES = ("dynamo.", "inductor.")
"""``--set dynamo.NAME=VALUE``: torch._dynamo.config / torch._inductor.config, checked in the
child against the installed torch."""
MAX_IDLE_PROBES = 10
MAX_SHAPES = 4096

# C0 controls and DEL: never part of a knob's value (a terminal would act on them, a log
# line would break).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


_NAME = r"[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,252})"
HOST_FORM = re.compile(
    rf"(?:ssh://)?(?:{_NAME}@)?(?:{_NAME}|\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9]+)?\])(?::[0-9]{{1,5}})?"
)
"""What ``--host`` takes: ``box``, ``user@box``, ``10.0.0.5``, ``[fe80::1%eth0]``,
``ssh://user@box:2222``; nothing a shell or ssh would read as more than a name."""


@dataclass
class RunSettings(RunFields):
    """One run's settings: the fields ``RunFields`` declares (``knobs`` holds every knob;
    ``None`` means torch's own default), built, checked, copied and read from files."""

    # -- building -------------------------------------------------------------------------

    def apply_preset(self, name: str) -> None:
        """Apply a preset: its knobs take its values, every other knob stays as it is (a
        preset is what it names: ``frozen`` freezes, whatever fusion strategy was chosen).
        The one rule for ``--preset``, a sweep's cells and the TUI's settings alike."""
        preset = PRESETS.get(name)
        if preset is None:
            raise SettingsError(f"unknown preset {name!r}: one of {', '.join(PRESETS)}")
        self.preset = name
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

    def resolve(self, there: Callable[[str], Target] | None = None) -> Target:
        """Validate everything and resolve the target; ``SettingsError`` names the problem.
        With ``--host`` a file target is a path there: ``there`` checks it there (the run
        layer's ``remote_target.resolve`` passes one that asks the host over ssh); without it
        nothing leaves this machine, and a stand-in takes the file's place (no mode check
        refuses it and, as every file target, it brings no example inputs)."""
        return self._check(there)

    def check_here(self) -> None:
        """What ``resolve`` checks, but a file target on ``--host``: nothing leaves this
        machine (for a screen that checks as the user types)."""
        self._check(None)

    def check_field(self, name: str) -> None:
        """The check of one setting's value alone (``FIELD_CHECKS``): the command line runs
        every one, the settings form the one of the field typed in."""
        check = FIELD_CHECKS.get(name)
        if check is None:
            return
        try:
            check(self)
        except SettingsError:
            raise
        except UsageError as exc:  # a bad input or dimension spec: a setting that cannot run
            raise SettingsError(str(exc)) from None

    def _check(self, there: Callable[[str], Target] | None) -> Target:
        for k in KNOBS:
            try:
                k.check(self.knobs.get(k.name, k.default))
            except KnobError as exc:
                raise SettingsError(str(exc)) from None
        unknown = set(self.knobs) - {k.name for k in KNOBS}
        if unknown:
            raise SettingsError(f"unknown knob {sorted(unknown)[0]!r}")
        if self.recipe is not None and not os.path.isfile(self.recipe):
            raise SettingsError(f"--recipe {clean_line(self.recipe)}: no such file")
        for name in FIELD_CHECKS:
            self.check_field(name)
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
        if self.max_procs < MIN_PROCS:
            raise SettingsError(
                f"--max-procs {self.max_procs}: at least {MIN_PROCS} (torch starts threads of "
                "its own)"
            )
        if self.host is not None and not HOST_FORM.fullmatch(self.host):
            # Checked here, not left to ssh: an ssh_config ProxyCommand's %h would hand the
            # name to a shell.
            raise SettingsError(
                f"--host {clean_line(self.host)!r}: expected a host name, an ssh_config alias, "
                "user@host, [v6 address], or ssh://[user@]host[:port] (letters, digits, . _ -)"
            )
        if self.python is not None and self.host is None:  # on a remote host, found there
            check_python(self.python)
        try:
            target = resolve_target(
                self.target,
                trust_pickle=self.trust_pickle,
                trust_native=self.trust_native,
                there=self._there(there),
            )
            self.shape_plan(target)
        except UsageError as exc:  # a bad target, or a host that could not be asked
            raise SettingsError(str(exc)) from None
        mode = self.knobs.get("mode")
        if target.scripted and mode not in (None, "script"):
            raise SettingsError(
                f"{clean_line(self.target)} is a TorchScript archive, already scripted: --mode {mode} does not apply"
            )
        if target.kind == "aoti" and mode not in (None, "eager"):
            raise SettingsError(
                f"{clean_line(self.target)} is an AOTInductor package, already compiled: --mode {mode} does not apply"
            )
        for name in self.imports:
            if not all(part.isidentifier() for part in name.split(".")):
                raise SettingsError(f"bad --import {clean_line(name)!r}: expected a module name")
        if cpp_runtime.is_cpp(self) and (refused := cpp_runtime.refusal(self, target)):
            raise SettingsError(refused)
        return target

    def _there(self, there: Callable[[str], Target] | None) -> Callable[[str], Target] | None:
        """How a file target is checked: here (``None``) where it lies here; over ``--host``,
        by ``there``, else by a stand-in."""
        if self.host is None:
            return None
        return there or (lambda spec: Target(spec, "file", spec))

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
            try:
                target_files.check_zip(self.inputs_file)  # torch.load inflates its members
            except target_files.Refused as exc:
                raise TargetError(f"--inputs: {exc}") from None
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

    def command_line(self, command: str = "run") -> list[str]:
        """The ``warmscope run`` command that reproduces these settings (parses back to them);
        ``command="sweep"``: the same settings as a sweep's base, without the options a sweep
        does not take."""
        sweep = command == "sweep"
        return ["warmscope", command, self.target] + [
            a
            for f in FIELDS
            if not f.options or any(o.applies(sweep) for o in f.options)
            for a in argv(f, self)
        ]

    def copy(self) -> RunSettings:
        """An independent copy: changing its lists and maps leaves these alone."""
        return copy.deepcopy(self)

    # -- JSON -----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def untrusted(self) -> dict[str, Any]:
        """The settings that run code or choose what runs (``Setting.trusted`` false: the
        interpreter, the child's environment such as ``LD_PRELOAD``, pickle trust, torch's
        compiler configuration), those not at their defaults. Read from a file, they are used
        only when the user confirms them."""
        return {
            f.name: copy.deepcopy(getattr(self, f.name))
            for f in FIELDS
            if not f.trusted and getattr(self, f.name) != default_of(f.name)
        }

    def consent_items(self) -> list[str]:
        """``untrusted()`` as the user is asked to confirm it: every item of it, one line each,
        with what it would do (``Setting.consent``)."""
        found = self.untrusted()
        return [line for f in FIELDS if f.name in found for line in consent(f, self)]

    def without_untrusted(self) -> RunSettings:
        """A copy with ``untrusted()`` reset: this interpreter, no extra environment, no pickle."""
        safe = self.copy()
        for f in FIELDS:
            if not f.trusted:
                setattr(safe, f.name, default_of(f.name))
        return safe

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSettings:
        """Settings as ``to_json`` wrote them, from any version: a field this version does not
        know is left out, one a record leaves out or gives a value of another kind (a damaged
        file) runs with its default, and knobs it leaves out with theirs."""
        settings = cls()
        for f in FIELDS:
            value = data.get(f.name)
            if f.name in data and KINDS[f.kind](value):
                setattr(settings, f.name, copy.deepcopy(value))
        settings.knobs = {**default_values(), **settings.knobs}
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


# -- one setting's value alone ---------------------------------------------------------------


def _iters(s: RunSettings) -> None:
    if s.iters < 1:
        raise SettingsError(f"--iters must be at least 1, got {s.iters}")


def _seconds(flag: str, name: str) -> Callable[[RunSettings], None]:
    def check(s: RunSettings) -> None:
        value = getattr(s, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise SettingsError(f"{flag} must be a positive number of seconds, got {value}")

    return check


def _inputs(s: RunSettings) -> None:
    for spec in s.inputs:
        parse_input(spec)


def _dims(s: RunSettings) -> None:
    for dim in s.dims:
        parse_dim(dim)


def _schedule(s: RunSettings) -> None:
    if s.schedule not in SCHEDULES:
        raise SettingsError(
            f"--schedule {clean_line(str(s.schedule))}: one of {', '.join(SCHEDULES)}"
        )


def _seed(s: RunSettings) -> None:
    if isinstance(s.seed, bool) or not isinstance(s.seed, int) or s.seed < 0:
        raise SettingsError(f"--seed must be a non-negative integer, got {s.seed}")


def _gap(s: RunSettings) -> None:
    if s.gap is not None and not (math.isfinite(s.gap) and s.gap >= 0):
        raise SettingsError(f"--gap must be a number of seconds, got {s.gap}")


def _idle_probe(s: RunSettings) -> None:
    if len(s.idle_probe) > MAX_IDLE_PROBES:
        raise SettingsError(f"--idle-probe: at most {MAX_IDLE_PROBES} gaps")
    for gap in s.idle_probe:
        if not (math.isfinite(gap) and 0 <= gap <= 3600):
            raise SettingsError(f"--idle-probe: {gap} is not a number of seconds (0-3600)")


FIELD_CHECKS: dict[str, Callable[[RunSettings], None]] = {
    "iters": _iters,
    "duration": _seconds("--duration", "duration"),
    "timeout": _seconds("--timeout", "timeout"),
    "inputs": _inputs,
    "dims": _dims,
    "schedule": _schedule,
    "seed": _seed,
    "gap": _gap,
    "idle_probe": _idle_probe,
}
"""What one setting's value must be, by the setting's name, whatever front end set it;
checks across settings stay in ``RunSettings._check``."""
