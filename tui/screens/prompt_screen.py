"""``PromptScreen``: a one-line prompt in a box: a labelled input, notes, OK and Cancel.

Subclasses name their parts (``PREFIX`` gives the ids the stylesheet knows: ``PREFIX-box``,
``-line``, ``-label``, ``-ok``, ``-no``) and decide what the typed text means in ``accept``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Generic, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label

from warmscope.tui.widgets.keys_footer import KeysFooter

T = TypeVar("T")


class PromptScreen(ModalScreen[T | None], Generic[T]):
    """Enter or the OK button accepts, Esc or Cancel dismisses with ``None``."""

    PREFIX: ClassVar[str]
    BOX_TITLE: ClassVar[str]
    LABEL: ClassVar[str]
    OK: ClassVar[str]
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, value: str, *, input_id: str, placeholder: str = "") -> None:
        super().__init__()
        self._value = value
        self._input_id = input_id
        self._placeholder = placeholder

    def head(self) -> Iterable[Widget]:
        """Widgets above the input line."""
        return ()

    def notes(self) -> Iterable[Widget]:
        """Widgets between the input line and the buttons."""
        return ()

    def accept(self, text: str) -> None:
        """Dismiss with what ``text`` means, or say what is wrong and stay."""
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        p = self.PREFIX
        with Vertical(id=f"{p}-box"):
            yield from self.head()
            with Horizontal(id=f"{p}-line"):
                yield Label(self.LABEL, id=f"{p}-label")
                yield Input(self._value, placeholder=self._placeholder, id=self._input_id)
            yield from self.notes()
            with Horizontal(id=f"{p}-buttons"):
                yield Button(f"{self.OK} ⏎", id=f"{p}-ok", variant="primary", compact=True)
                yield Button("Cancel esc", id=f"{p}-no", compact=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one(f"#{self.PREFIX}-box").border_title = self.BOX_TITLE
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def submitted(self) -> None:
        self.accept(self.query_one(Input).value)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        if event.button.id == f"{self.PREFIX}-ok":
            self.accept(self.query_one(Input).value)
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(None)
