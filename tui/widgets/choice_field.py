"""``ChoiceField``: one focusable line that cycles through a few values (on/off/default, ...).

A settings form holds a couple of dozen of these; a ``Select`` per knob (a dropdown and its
option list each) made the form take seconds to open. Keys: ← → or space/enter to change.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget


class ChoiceField(Widget, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right,space,enter", "step(1)", "Next value", show=False),
        Binding("left", "step(-1)", "Previous value", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"choice-field--other"}

    value: reactive[str] = reactive("", init=False)

    class Changed(Message):
        def __init__(self, field: ChoiceField, value: str) -> None:
            super().__init__()
            self.field = field
            self.value = value

        @property
        def control(self) -> ChoiceField:
            return self.field

    def __init__(self, options: list[str], value: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.options = options
        self.set_reactive(ChoiceField.value, value if value in options else options[0])

    def validate_value(self, value: str) -> str:
        return value if value in self.options else self.options[0]

    def watch_value(self, value: str) -> None:
        self.post_message(self.Changed(self, value))

    def action_step(self, step: int) -> None:
        index = self.options.index(self.value)
        self.value = self.options[(index + step) % len(self.options)]

    def on_click(self, event: events.Click) -> None:
        self.action_step(1)

    def render(self) -> Text:
        others = self.get_component_rich_style("choice-field--other", partial=True)
        text = Text("‹ ", style=others)
        text.append(self.value, style="bold")
        text.append(" ›  ", style=others)
        text.append(" ".join(o for o in self.options if o != self.value), style=others)
        return text
