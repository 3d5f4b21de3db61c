"""The command palette's own entries (ctrl+p): every run key, the help, the sweep, the presets."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from warmscope.core.data.settings import PRESETS
from warmscope.tui.keys import RUN_BINDINGS, opens


def run_commands(
    app: App[Any], screen: Screen[Any], main: Screen[Any], *, sweeps: bool
) -> Iterator[SystemCommand]:
    """What the palette offers on ``screen`` beside Textual's own commands: each runs an action
    as its key does, the main screen's own on ``main``. ``sweeps``: a sweep is there to show."""
    for binding in RUN_BINDINGS:
        if not isinstance(binding, Binding) or binding.action.startswith("pane"):
            continue
        on_main = not binding.action.startswith("app.")
        if on_main and screen is not main:
            continue  # a main-screen key (log scale, search…) means nothing elsewhere
        yield SystemCommand(
            binding.description,
            f"{binding.tooltip} [{binding.key}]",
            # the main screen's own actions run there, the app's here
            partial(app.run_action, binding.action, main),
        )
    yield SystemCommand("Help", "Every key [?]", partial(app.run_action, opens("help_screen")))
    if sweeps:
        yield SystemCommand(
            "Sweep",
            "The opened sweep's answer and table",
            partial(app.run_action, opens("sweep_screen")),
        )
    for preset in PRESETS.values():
        yield SystemCommand(
            f"Next run: preset {preset.name}",
            preset.help,
            partial(app.run_action, f"preset({preset.name!r})"),
        )
