"""``GotoScreen``: jump to any iteration of the run, by its number."""

from __future__ import annotations

from collections.abc import Iterable

from textual import on
from textual.widget import Widget
from textual.widgets import Input, Static

from warmscope.tui.screens.prompt_screen import PromptScreen


class GotoScreen(PromptScreen[int]):
    """Returns the iteration to show (``0`` to ``count - 1``), or None when cancelled."""

    CSS_PATH = "goto_screen.tcss"  # loaded when the screen first opens

    PREFIX = "goto"
    BOX_TITLE = "go to iteration"
    LABEL = "iteration"
    OK = "Go"

    def __init__(self, count: int) -> None:
        super().__init__("", input_id="goto-iteration", placeholder=f"0-{max(0, count - 1)}")
        self.count = count

    def notes(self) -> Iterable[Widget]:
        yield Static("", id="goto-error", markup=False)

    @on(Input.Changed)
    def changed(self) -> None:
        self.query_one("#goto-error", Static).update("")

    def accept(self, text: str) -> None:
        value = text.strip().lstrip("#")
        if not value.isdigit() or not 0 <= int(value) < self.count:
            self.query_one("#goto-error", Static).update(
                f"a number from 0 to {self.count - 1}, not {text.strip()!r}"
            )
            return
        self.dismiss(int(value))
