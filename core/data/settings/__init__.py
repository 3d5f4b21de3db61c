"""A run's settings, declared once: ``RunSettings`` (``run_settings``), each field's declaration
(``fields``, from its groups' modules: its option, kind, reproduce-line form, whether compared
and whether trusted), and how a declaration is read, written and shown, with the presets
(``setting``)."""

from warmscope.core.data.settings.run_settings import (
    MAX_PROFILED,
    PRESETS,
    SCHEDULES,
    RunSettings,
    SettingsError,
    check_python,
    parse_profile_iters,
    parse_seconds_list,
)

__all__ = [
    "MAX_PROFILED",
    "PRESETS",
    "SCHEDULES",
    "RunSettings",
    "SettingsError",
    "check_python",
    "parse_profile_iters",
    "parse_seconds_list",
]
