"""``TrustScreen``: settings read from a file that choose what runs, shown before a run uses them.

A record is data: its interpreter, the environment it gives the child (``LD_PRELOAD``…) and its
pickle trust run code of the record's author. The screen lists them plainly and lets the user
use them (``y``/Enter), run without them (``n``: this interpreter, no extra environment, no
pickle trust) or start nothing (Esc).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

TrustChoice = Literal["use", "without"]
"""``use``: run with them; ``without``: run with ``RunSettings.without_untrusted()``."""


def trust_items(untrusted: dict[str, Any]) -> list[str]:
    """One line per item of ``RunSettings.untrusted()``, as a person reads it."""
    items = []
    if untrusted.get("python") is not None:
        items.append(f"interpreter {untrusted['python']}")
    for name, value in dict(untrusted.get("env") or {}).items():
        items.append(f"environment {name}={value}")
    if untrusted.get("trust_pickle"):
        items.append("trust pickle: loads code from the file")
    return items


class TrustScreen(ModalScreen[TrustChoice | None]):
    CSS_PATH = "trust_screen.tcss"  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "choose('use')", "Use them", id="trust-use"),
        Binding("n", "choose('without')", "Run without them", id="trust-without"),
        Binding("escape", "cancel", "Cancel", id="trust-cancel"),
    ]

    def __init__(self, untrusted: dict[str, Any], source: str) -> None:
        super().__init__()
        self.items = trust_items(untrusted)
        self.source = source

    def compose(self) -> ComposeResult:
        with Vertical(id="trust-box"):
            yield Static(
                f"These settings come from {self.source}, not from you. They choose what runs:",
                id="trust-intro",
                markup=False,
            )
            yield Static(
                "\n".join(f"  {item}" for item in self.items), id="trust-items", markup=False
            )
            yield Static(
                "y / Enter: use them · n: run without them (this interpreter, no extra "
                "environment, no pickle trust) · Esc: run nothing",
                id="trust-keys",
                markup=False,
            )
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#trust-box").border_title = "run with these?"

    def action_choose(self, choice: TrustChoice) -> None:
        self.dismiss(choice)

    def action_cancel(self) -> None:
        self.dismiss(None)
