"""``ProfileScreen``: which iterations the next run profiles (``--profile-iters``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import App
from textual.widget import Widget
from textual.widgets import Input, Static

from warmscope.core.data.settings import SettingsError, parse_profile_iters
from warmscope.tui.messages import NextRun
from warmscope.tui.screens.prompt_screen import PromptScreen

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState

HELP = (
    "0,1,2,50 · ranges 0-3 · steady: one more pass once the run has settled. Profiled "
    "iterations are slower and left out of the statistics. Empty: no profiling."
)


class ProfileScreen(PromptScreen[str]):
    """Returns the checked list ("" for none), or None when cancelled."""

    CSS_PATH = "profile_screen.tcss"  # loaded when the screen first opens

    PREFIX = "profile"
    BOX_TITLE = "profile on the next run"
    LABEL = "iterations"
    OK = "Set"

    def __init__(self, current: str, iters: int | None) -> None:
        super().__init__(current, input_id="profile-iters", placeholder="0,1,steady")
        self.iters = iters

    def notes(self) -> Iterable[Widget]:
        yield Static("", id="profile-error", markup=False)
        yield Static(HELP, id="profile-help", markup=False)

    @on(Input.Changed)
    def changed(self) -> None:
        self._show_error("")

    def accept(self, text: str) -> None:
        text = ",".join(p.strip() for p in text.split(",") if p.strip())
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


def open_screen(app: App[Any], state: AppState) -> None:
    """``p``: the iterations the next run profiles, which become its settings (``NextRun``)."""
    base = state.next_base()

    def done(text: str | None) -> None:
        if text is None:
            return
        settings = base.copy()
        settings.profile_iters = text or None
        what = f"profiles {text}" if text else "profiles nothing"
        app.post_message(NextRun(settings, f"next run {what} (r runs it)"))

    iters = base.iters if base.duration is None else None
    app.push_screen(ProfileScreen(base.profile_iters or "", iters), done)
