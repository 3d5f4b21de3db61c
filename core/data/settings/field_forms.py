"""How run settings read, write, show and ask for themselves where a field's default way will
not do (``setting.Setting``'s ``read``, ``argv``, ``shown`` and ``consent``): the knobs with
their preset, the maps every ``--set`` fills, fields no option sets, and the line a user
confirms for each setting that runs code or chooses what runs. The declarations that name
them: ``fields``' groups.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from warmscope.core.child.knobs import KNOBS
from warmscope.core.data.settings.setting import (
    DEFAULT_ITERS,
    PRESETS,
    Shown,
    Writer,
    parse_seconds_list,
)

if TYPE_CHECKING:
    from warmscope.core.data.settings import RunSettings

# Knobs: a preset, then --mode and --device, then every --set (the env entry reads them).


def read_knobs(args: argparse.Namespace, settings: RunSettings) -> None:
    if args.preset:
        settings.apply_preset(args.preset)
    if args.mode:
        settings.knobs["mode"] = args.mode
    if args.device:
        settings.set(f"device={args.device}")
    if getattr(args, "runtime", None):
        settings.set(f"runtime={args.runtime}")


def _knob_base(settings: RunSettings) -> dict[str, Any]:
    base = {k.name: k.default for k in KNOBS}
    if settings.preset in PRESETS:
        base.update(PRESETS[settings.preset].knobs)
    return base


def knobs_argv(settings: RunSettings) -> list[str]:
    base, out = _knob_base(settings), []
    for k in KNOBS:
        value = settings.knobs.get(k.name, k.default)
        if value != base.get(k.name):
            out += ["--set", f"{k.name}={k.show(value)}"]
    return out


def knobs_shown(settings: RunSettings) -> dict[str, Any]:
    return {
        k.name: settings.knobs[k.name]
        for k in KNOBS
        if settings.knobs.get(k.name, k.default) != k.default
    }


def read_assignments(args: argparse.Namespace, settings: RunSettings) -> None:
    for assignment in args.assignments:
        settings.set(assignment)


def map_argv(name: str, prefix: str) -> Writer:
    def write(settings: RunSettings) -> list[str]:
        items: dict[str, str] = getattr(settings, name)
        return [part for k, v in items.items() for part in ("--set", f"{prefix}{k}={v}")]

    return write


def map_shown(name: str, prefix: str) -> Shown:
    def show(settings: RunSettings) -> dict[str, Any]:
        items: dict[str, str] = getattr(settings, name)
        return {f"{prefix}{k}": v for k, v in items.items()}

    return show


def read_idle_probe(args: argparse.Namespace, settings: RunSettings) -> None:
    if args.idle_probe is not None:
        settings.idle_probe = parse_seconds_list(args.idle_probe, "--idle-probe")


def iters_argv(settings: RunSettings) -> list[str]:
    # A line that runs for a duration names --iters only where it is not the default.
    if settings.duration and settings.iters == DEFAULT_ITERS:
        return []
    return ["--iters", str(settings.iters)]


def preset_argv(settings: RunSettings) -> list[str]:
    return ["--preset", settings.preset] if settings.preset in PRESETS else []


def no_argv(settings: RunSettings) -> list[str]:
    return []


def read_nothing(args: argparse.Namespace, settings: RunSettings) -> None:
    """Applied with another entry (the preset with the knobs)."""


# What each untrusted setting would do, as the user confirms it (``Setting.consent``).


def imports_consent(settings: RunSettings) -> list[str]:
    return [
        f"--import {name}: imports it in the child, running its code" for name in settings.imports
    ]


def env_consent(settings: RunSettings) -> list[str]:
    return [
        f"--set env.{name}={value}: environment {name}={value} for the child"
        for name, value in settings.env.items()
    ]


def torch_config_consent(settings: RunSettings) -> list[str]:
    return [
        f"--set {name}={value}: torch config the child sets (some options name programs it runs)"
        for name, value in settings.torch_config.items()
    ]


def recipe_consent(settings: RunSettings) -> list[str]:
    return [f"--recipe {settings.recipe}: runs {settings.recipe} (its prepare(model)) in the child"]


def python_consent(settings: RunSettings) -> list[str]:
    return [f"--python {settings.python}: interpreter {settings.python} runs the child"]


def host_consent(settings: RunSettings) -> list[str]:
    # The local files the run names travel with it: the user sees what leaves this machine.
    sent = [
        f"{flag} {value}"
        for flag, value in (("--recipe", settings.recipe), ("--inputs", settings.inputs_file))
        if value
    ]
    line = f"--host {settings.host}: runs the child on {settings.host} over ssh"
    if sent:
        line += f", and sends {' and '.join(sent)} to host {settings.host}"
    return [line]


def trust_pickle_consent(settings: RunSettings) -> list[str]:
    return [f"--trust-pickle: trust pickle: loads code from the file {settings.target}"]


def trust_native_consent(settings: RunSettings) -> list[str]:
    return [f"--trust-native: runs the compiled native code the package {settings.target} holds"]
