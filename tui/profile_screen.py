"""``ProfileScreen``: which iterations the next run profiles (``--profile-iters``)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

from warmscope.core.settings import SettingsError, parse_profile_iters

HELP = (
    "0,1,2,50 · ranges 0-3 · steady: one more pass once the run has settled. Profiled "
    "iterations are slower and left out of the statistics. Empty: no profiling."
)


class ProfileScreen(ModalScreen[str | None]):
    """Returns the checked list ("" for none), or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="profile-cancel"),
    ]

    def __init__(self, current: str, iters: int | None) -> None:
        super().__init__()
        self.current = current
        self.iters = iters

    def compose(self) -> ComposeResult:
        with Vertical(id="profile-box"):
            with Horizontal(id="profile-line"):
                yield Label("iterations", id="profile-label")
                yield Input(self.current, placeholder="0,1,steady", id="profile-iters")
            yield Static("", id="profile-error", markup=False)
            yield Static(HELP, id="profile-help", markup=False)
            with Horizontal(id="profile-buttons"):
                yield Button("Set ⏎", id="profile-ok", variant="primary", compact=True)
                yield Button("Cancel esc", id="profile-no", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#profile-box").border_title = "profile on the next run"
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def submitted(self) -> None:
        self._done()

    @on(Input.Changed)
    def changed(self) -> None:
        self._show_error("")

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "profile-ok":
            self._done()
        else:
            self.action_cancel()

    def _done(self) -> None:
        text = ",".join(p.strip() for p in self.query_one(Input).value.split(",") if p.strip())
        try:
            parse_profile_iters(text, self.iters)
        except SettingsError as exc:
            self._show_error(str(exc))
            return
        self.dismiss(text)

    def _show_error(self, message: str) -> None:
        error = self.query_one("#profile-error", Static)
        error.update(message)
        error.set_class(bool(message), "-shown")

    def action_cancel(self) -> None:
        self.dismiss(None)
