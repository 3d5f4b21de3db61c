"""``repaint_all``: send the terminal every cell of the screen again.

Textual writes only what changed since its last frame. When the terminal lost what it showed
(the process was stopped with Ctrl+Z or SIGTSTP and the shell used the screen, or another
program wrote over it), unchanged cells such as borders and titles would stay blank until the
next resize; this redraws them all, as a resize does.
"""

from __future__ import annotations

from typing import Any

from textual.app import App


def repaint_all(app: App[Any]) -> None:
    screen = app.screen
    # The whole screen region marked dirty makes the next frame a full update, screens below
    # a modal one included; a layout pass first, as sizes may be stale too.
    screen.refresh(layout=True)
    screen.refresh(screen.region)
