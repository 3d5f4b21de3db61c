"""``HelpScreen``: every key, what it does, and how warmscope runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from warmscope.tui.keys import RUN_BINDINGS
from warmscope.tui.widgets.keys_footer import KeysFooter

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState

LEAVING: tuple[tuple[str, str], ...] = (
    (
        "q",
        "Quit: from the main screen (asks first while a run is going; it is stopped, nothing "
        "is left running); on any other screen q closes it",
    ),
    ("Esc", "Close: a dialog or screen"),
)
"""How to leave: listed first, so that even a small screen shows it."""

NAVIGATION: tuple[tuple[str, str], ...] = (
    ("?", "Help: this list"),
    ("1 2 3", "Panes: events, usage (CPU, memory, GPU), the child's stderr"),
    ("↑ ↓ j k PgUp PgDn", "Move: in a list; Home the first row, End or G the newest (follow)"),
    ("Enter", "Open: an iteration (latency, events, operators, diff), or an event's text"),
    ("Tab", "Focus: the next pane"),
    ("ctrl+p", "Palette: every action by name"),
    ("+ - w x", "Compare: + - add or drop a run (up to 6, all overlaid), w B becomes A, x export"),
    ("space c", "History: space marks runs, c compares them"),
)

FIGURES: tuple[tuple[str, str], ...] = (
    ("first", "iteration 0's latency: the cold start"),
    (
        "warm-up",
        "iterations before latency is steady (steady from #N), and + the time they spent "
        "above the steady p50 (the warm-up excess)",
    ),
    ("p50 p90 p99", "percentiles of the steady iterations (from #N on; profiled ones left out)"),
    ("CV", "spread of the steady iterations: standard deviation / mean"),
    ("steady", "iterations a second in steady state (summary)"),
    ("it/s now, overall", "the header's rate by the wall clock, slow iterations included"),
    ("ev", "events pinned to the iteration (JIT logs, compiles, warnings, output)"),
    ("P O C R W", "chart marks: profiling run, optimized, compile, recompile, warning"),
)

ABOUT = (
    "Each run is a fresh child process: JIT and compiler state (profiling executor, fusion "
    "caches, dynamo caches, the CUDA context) is process-wide, so settings change between "
    "runs. Every run is recorded (JSONL); `warmscope open RECORD...` shows records again."
)


def key_rows() -> list[tuple[str, str]]:
    """How to leave, the run keys from their bindings (one declaration), then navigation."""
    rows = [
        (b.key_display or b.key, f"{b.description}: {b.tooltip}" if b.tooltip else b.description)
        for b in RUN_BINDINGS
        if isinstance(b, Binding) and b.key not in ("1", "2", "3")
    ]
    return [*LEAVING, *rows, *NAVIGATION]


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help_screen.tcss"  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close", id="close-help"),
    ]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, what in key_rows():
            table.add_row(key, what)
        figures = Table.grid(padding=(0, 2))
        figures.add_column(style="bold", no_wrap=True)
        figures.add_column()
        for name, what in FIGURES:
            figures.add_row(name, what)
        with VerticalScroll(id="help-box"):
            yield Static(table, id="help-keys")
            yield Static("What the figures mean", id="help-figures-title")
            yield Static(figures, id="help-figures")
            yield Static(ABOUT, id="help-about", markup=False)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#help-box").border_title = "warmscope keys"

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


def open_screen(app: App[Any], state: AppState) -> None:
    """``?``, from any screen but this one."""
    if not isinstance(app.screen, HelpScreen):
        app.push_screen(HelpScreen())
