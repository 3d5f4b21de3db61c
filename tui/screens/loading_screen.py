"""``LoadingScreen``: a long record being read, with how far it has got, over the first frame."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import ProgressBar, Static


class LoadingScreen(ModalScreen[None]):
    """Shown while records are read behind it; the app dismisses it when they are open."""

    CSS_PATH = "loading_screen.tcss"  # loaded when the screen first opens

    # Nothing to go back to: q, Esc and Ctrl+C all leave warmscope (the reading stops).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "app.quit", "Quit", id="loading-quit"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="loading-box"):
            yield Static("reading the record…", id="loading-what", markup=False)
            yield Static("q / Esc: quit", id="loading-keys", markup=False)
            yield ProgressBar(total=1.0, show_eta=False, id="loading-bar")

    def show(self, what: str, fraction: float) -> None:
        """``what`` is being read and ``fraction`` of it is done."""
        self.query_one("#loading-what", Static).update(what)
        self.query_one(ProgressBar).update(progress=fraction)
