"""``TrustScreen``: settings read from a file that choose what runs, shown before a run uses them.

A record is data: its interpreter, the environment it gives the child (``LD_PRELOAD``…), its
recipe, imports, host, torch config and trust of pickles or native code run code of the
record's author. The screen lists every one of them, ``RunSettings.untrusted()`` item by item
with what it would do (``RunSettings.consent_items``), in a list that scrolls however long it
is, and lets the user use them (``y``/Enter), run without them (``n``: this interpreter, no
extra environment, none of them) or start nothing (Esc).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from warmscope.core.data.settings import RunSettings
from warmscope.tui.widgets.keys_footer import KeysFooter

TrustChoice = Literal["use", "without"]
"""``use``: run with them; ``without``: run with ``RunSettings.without_untrusted()``."""


def trust_items(settings: RunSettings) -> list[str]:
    """One line per item of ``settings.untrusted()``, as a person reads it."""
    return settings.consent_items()


class TrustScreen(ModalScreen[TrustChoice | None]):
    CSS_PATH = "trust_screen.tcss"  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "choose('use')", "Use them", id="trust-use"),
        Binding("n", "choose('without')", "Run without them", id="trust-without"),
        Binding("escape", "cancel", "Cancel", id="trust-cancel"),
    ]

    def __init__(self, settings: RunSettings, source: str) -> None:
        super().__init__()
        self.items = trust_items(settings)
        self.source = source

    def compose(self) -> ComposeResult:
        count = len(self.items)
        with Vertical(id="trust-box"):
            yield Static(
                f"These settings come from {self.source}, not from you. They choose what runs "
                f"({count} item{'s' if count != 1 else ''}; ↑ ↓ PgUp PgDn scroll):",
                id="trust-intro",
                markup=False,
            )
            # A list of any length scrolls inside the box: the keys below stay on screen.
            with VerticalScroll(id="trust-list"):
                yield Static(
                    "\n".join(f"• {item}" for item in self.items), id="trust-items", markup=False
                )
            yield Static(
                "y / Enter: use them · n: run without them (this interpreter, none of the "
                "above) · Esc: run nothing",
                id="trust-keys",
                markup=False,
            )
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#trust-box").border_title = "run with these?"
        self.query_one("#trust-list", VerticalScroll).focus()

    def action_choose(self, choice: TrustChoice) -> None:
        self.dismiss(choice)

    def action_cancel(self) -> None:
        self.dismiss(None)


def trusted_then(
    app: App[Any],
    settings: RunSettings,
    source: str | None,
    start: Callable[[RunSettings], None],
    confirmed: Callable[[RunSettings], None] = lambda chosen: None,
) -> None:
    """``start(settings)`` where settings read from ``source`` (a file's name; ``None``: the
    user's own) choose nothing that runs; else once the user has seen those choices and kept
    them or dropped them, ``confirmed`` told first of what was chosen; nothing where the user
    started nothing."""
    untrusted = settings.untrusted() if source is not None else {}
    if not untrusted:
        start(settings)
        return

    def done(choice: TrustChoice | None) -> None:
        if choice is None:
            app.notify("nothing started", timeout=2)
            return
        chosen = settings if choice == "use" else settings.without_untrusted()
        confirmed(chosen)
        start(chosen)

    app.push_screen(TrustScreen(settings, source or "a file"), done)
