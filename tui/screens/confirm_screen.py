"""``ConfirmScreen``: a yes/no question before something that cannot be undone (kill, quit)."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = "y / Enter: yes · n / Esc: no"
MAX_WIDTH = 70
BOX_FRAME = 6  # the border and the padding, both sides
MIN_HEIGHT_FOR_KEYS = 8  # below it, the question has the box to itself


class ConfirmScreen(ModalScreen[bool]):
    """``y``/Enter answers yes; ``n``, Esc or ``q`` answer no."""

    CSS_PATH = "confirm_screen.tcss"  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "answer(True)", "Yes", id="confirm-yes"),
        Binding("n,escape,q", "answer(False)", "No", id="confirm-no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question, id="confirm-question", markup=False)
            yield Static(KEYS, id="confirm-keys", markup=False)

    def on_resize(self, event: events.Resize) -> None:
        # As wide as the question, at most 70 and never past the screen's edge, where the
        # lines wrap: a tiny terminal still shows the question (the keys line goes first).
        wanted = max(len(self.question), len(KEYS)) + BOX_FRAME
        self.query_one("#confirm-keys").display = event.size.height >= MIN_HEIGHT_FOR_KEYS
        self.query_one("#confirm-box").styles.width = max(
            1, min(wanted, MAX_WIDTH, event.size.width)
        )

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
