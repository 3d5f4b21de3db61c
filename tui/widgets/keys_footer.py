"""``KeysFooter``: Textual's footer, rebuilt only when the keys it shows change.

Textual's ``Footer`` rebuilds its keys (a widget each, styled and laid out again, and the
screen with them) whenever the screen's bindings are updated, that is on every change of
focus. Moving between the fields of the settings form, or between the panes of the main
screen, shows the same keys: rebuilding them was most of what such a keypress cost.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


def shown_keys(screen: Screen[Any]) -> tuple[tuple[object, ...], ...]:
    """What the footer draws of ``screen``'s bindings (as ``Footer.compose`` reads them)."""
    return tuple(
        (binding.key, binding.action, binding.description, binding.group, enabled, tooltip)
        for _node, binding, enabled, tooltip in screen.active_bindings.values()
        if binding.show
    )


class KeysFooter(Footer):
    """A ``Footer`` that is rebuilt only when the keys it shows change."""

    _shown: tuple[tuple[object, ...], ...] | None = None
    """The keys drawn, or to be drawn by the rebuild asked for (``None``: none yet)."""

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._shown = shown_keys(self.screen)
        yield from super().compose()

    def bindings_changed(self, screen: Screen[Any]) -> None:
        # Textual's own, with two tests more: the screen is on top (a screen under one just
        # opened has its bindings updated too, and is updated again when it is back on top),
        # and the keys differ from those drawn, or about to be (opening a screen updates its
        # bindings several times before its footer is rebuilt).
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and screen.is_active:
            keys = shown_keys(screen)
            if keys != self._shown:
                self._shown = keys
                self.call_after_refresh(self.recompose)
