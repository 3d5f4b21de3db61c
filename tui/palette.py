"""The command palette's own entries (ctrl+p): every run key, the help, the sweep, the presets."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from warmscope.core.data.settings import PRESETS
from warmscope.tui.keys import RUN_BINDINGS

if TYPE_CHECKING:
    from warmscope.tui.app import WarmscopeApp


def run_commands(app: WarmscopeApp, screen: Screen) -> Iterator[SystemCommand]:
    """What the palette offers on ``screen`` beside Textual's own commands."""
    for binding in RUN_BINDINGS:
        if not isinstance(binding, Binding) or binding.action.startswith("pane"):
            continue
        on_main = not binding.action.startswith("app.")
        if on_main and screen is not app.main:
            continue  # a main-screen key (log scale, search…) means nothing elsewhere
        yield SystemCommand(
            binding.description,
            f"{binding.tooltip} [{binding.key}]",
            # the main screen's own actions run there, the app's here
            partial(app.run_action, binding.action, app.main),
        )
    yield SystemCommand("Help", "Every key [?]", app.action_help)
    if app.sweeps:
        yield SystemCommand("Sweep", "The opened sweep's answer and table", app.action_sweep)
    for preset in PRESETS.values():
        yield SystemCommand(
            f"Next run: preset {preset.name}",
            preset.help,
            partial(app.action_preset, preset.name),
        )
