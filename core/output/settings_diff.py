"""A run's settings as every view writes them: its one line (what it changes of the defaults)
and what differs between two runs' settings, each value as a person would type it. Walks
``settings.fields.FIELDS``: a new setting is compared and written without a line here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from warmscope.core.base.safe_text import clean_name
from warmscope.core.child.knobs import changed, knob, show_value
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.fields import BY_NAME, FIELDS
from warmscope.core.data.settings.setting import shown, shown_value


@dataclass(frozen=True)
class SettingChange:
    """One setting that differs between two runs, each value as a person would type it."""

    name: str
    a: str
    b: str


SettingsLike: TypeAlias = RunSettings | dict[str, Any]
"""A run's settings, or their JSON form (``RunSettings.to_json``)."""


def _typed(settings: SettingsLike) -> RunSettings:
    return settings if isinstance(settings, RunSettings) else RunSettings.from_json(settings)


def changed_settings(settings: SettingsLike) -> dict[str, str]:
    """The knobs of a run's settings that differ from their defaults, shown; ``mode`` aside
    (every view names the mode on its own)."""
    return {k: show_value(v) for k, v in changed(_typed(settings).knobs, skip=("mode",)).items()}


LINE_FIELDS = ("knobs", "env", "torch_config")
"""What the one-line form names beside the preset: what the run changes of how torch runs."""


def settings_line(settings: SettingsLike) -> str:
    """``preset no-profiling · profiling_executor=off · env.OMP_NUM_THREADS=1``, or
    ``defaults``."""
    typed = _typed(settings)
    parts = [f"preset {typed.preset}"] if typed.preset else []
    parts += [f"{k}={v}" for k, v in changed_settings(typed).items()]
    for name in LINE_FIELDS[1:]:
        parts += [f"{k}={v}" for k, v in shown(BY_NAME[name], typed).items()]
    # Values are names a user or a record chose: one line, nothing hidden in them.
    return clean_name(" · ".join(parts)) if parts else "defaults"


def _absent(field: str, name: str) -> str:
    """How a comparison writes a setting one side leaves at its default: a knob as its own
    default reads (``default``, or its value)."""
    if field == "knobs":
        return show_value(knob(name).default)
    return BY_NAME[field].absent


def settings_diff(a: SettingsLike, b: SettingsLike) -> list[SettingChange]:
    """Every run setting ``FIELDS`` compares that differs between two runs' settings (each
    ``env.*``, ``dynamo.*``/``inductor.*`` option and knob on its own), A then B."""
    ta, tb = _typed(a), _typed(b)
    rows = []
    for f in FIELDS:
        if not f.compared:
            continue
        sa, sb = shown(f, ta), shown(f, tb)
        for name in [*sa, *(n for n in sb if n not in sa)]:
            if name not in sb or name not in sa or sa[name] != sb[name]:
                absent = _absent(f.name, name)
                rows.append(
                    SettingChange(
                        name,
                        shown_value(sa[name]) if name in sa else absent,
                        shown_value(sb[name]) if name in sb else absent,
                    )
                )
    return rows


def run_diff(a: RunData, b: RunData) -> list[SettingChange]:
    """``settings_diff`` of two runs, with the mode as each ran: a preset that names the mode
    a sample runs in anyway (``script``) is no difference."""
    rows = [c for c in settings_diff(a.settings, b.settings) if c.name != "mode"]
    if a.mode != b.mode:
        rows.insert(0, SettingChange("mode", a.mode, b.mode))
    return rows


def same_settings(a: RunData, b: RunData) -> bool:
    """Whether two runs ran the same target in the same mode with the same settings."""
    return a.settings.target == b.settings.target and not run_diff(a, b)


def settings_table(runs: list[RunData]) -> list[tuple[str, list[str]]]:
    """Every setting that differs between the first run and any other: its value in each run
    (as ``run_diff`` writes them: a run with the first's value shows the first's)."""
    names: dict[str, str] = {}
    diffs = []
    for other in runs[1:]:
        diff = {c.name: c for c in run_diff(runs[0], other)}
        diffs.append(diff)
        for c in diff.values():
            names.setdefault(c.name, c.a)
    return [
        (name, [first] + [d[name].b if name in d else first for d in diffs])
        for name, first in names.items()
    ]
