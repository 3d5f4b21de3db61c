"""A run setting typed as text, read as the command line reads it: one parser for each input.

The settings form has a text field for some settings (``--iters``, ``--dim``, ``--seed``, …).
What is typed there goes through the setting's own option, as declared in ``fields``: the
same ``argparse`` type and choices, the same ``read`` hook, then the same value check
(``RunSettings.check_field``). A value the command line refuses is refused in the form with
the same words, and the help beside the field is the option's ``--help`` line.
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from warmscope.core.data.settings.fields import BY_NAME
from warmscope.core.data.settings.run_settings import RunSettings
from warmscope.core.data.settings.setting import Setting, SettingsError, read

LIST_KINDS = ("strs", "floats")
"""Settings whose option is given once per item (``--dim A --dim B``) or as one list."""


class _Refusing(argparse.ArgumentParser):
    """argparse's words for a bad value, raised instead of printed with an exit."""

    def error(self, message: str) -> NoReturn:
        raise SettingsError(message)


def declared(name: str) -> Setting:
    """The declaration of setting ``name``, which must have an option of its own."""
    found = BY_NAME.get(name)
    if found is None or not found.options:
        raise KeyError(f"{name} is not a run setting with an option of its own")
    return found


def help_of(name: str) -> str:
    """The setting's ``--help`` line, as the form shows it beside the field."""
    option = declared(name).options[0]
    return f"{option.flags[0]}: " + str(option.spec.get("help", "")).replace("%%", "%")


def parse_field(base: RunSettings, name: str, text: str) -> Any:
    """The value ``text`` gives setting ``name`` (typed as after its option; a list's items
    separated by spaces), checked as the command line checks it: ``SettingsError`` (or a
    ``UsageError``) names what is wrong. Empty text leaves an optional or list setting unset."""
    setting = declared(name)
    option = setting.options[0]
    flag = option.flags[0]
    items = text.split()
    parser = _Refusing(prog="warmscope", add_help=False, exit_on_error=False)
    parser.add_argument(*option.flags, **option.spec)
    if not items and (setting.kind.endswith("?") or setting.kind in LIST_KINDS):
        argv: list[str] = []
    elif option.spec.get("action") == "append":
        argv = [part for item in items for part in (flag, item)]
    else:
        argv = [flag, text.strip()]
    try:
        args = parser.parse_args(argv)
    except argparse.ArgumentError as exc:  # a bad type or choice: argparse's own words
        raise SettingsError(str(exc)) from None
    settings = base.copy()
    read(setting, args, settings)
    settings.check_field(name)
    return getattr(settings, name)
