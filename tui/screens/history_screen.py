"""``HistoryScreen``: every run of this session and every opened record; Enter views one,
space marks runs and ``c`` compares the marked ones."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from warmscope.tui import fmt
from warmscope.tui.messages import ViewRun
from warmscope.tui.run_view import RunEntry
from warmscope.tui.widgets.keys_footer import KeysFooter

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState

COLUMNS = ("", "#", "status", "iters", "first", "p50", "mode", "settings", "target", "record")
"""The figures first, the long names last: at 80 columns it is the names that are cut."""

SETTINGS_W = 30
MARK = "*"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def history_row(entry: RunEntry) -> tuple[str, ...]:
    s = entry.view.summary
    first = entry.view.series.head[0] if entry.view.series.head else None
    target = entry.short_target
    return (
        "",
        str(entry.number),
        entry.view.status,
        fmt.count(entry.view.count),
        fmt.ms(first),
        fmt.ms(s.p50_ms if s else None),
        entry.mode,
        _clip(entry.how_it_ran, SETTINGS_W),
        target,
        entry.record_name + ("" if entry.source == "record" else " (this session)"),
    )


class HistoryScreen(ModalScreen[RunEntry | list[RunEntry] | None]):
    """Dismissed with the run to view, the marked runs to compare, or ``None``."""

    CSS_PATH = "history_screen.tcss"  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,h,q", "dismiss", "Close", id="close-history"),
        Binding("space", "mark", "Mark", id="history-mark", tooltip="Mark a run to compare"),
        Binding("c", "compare", "Compare", id="history-compare", tooltip="The marked runs"),
    ]

    def __init__(self, runs: list[RunEntry], viewed: RunEntry | None) -> None:
        super().__init__()
        self.runs = runs
        self.viewed = viewed
        self.marked: list[RunEntry] = []
        """In the order marked: the first is the comparison's baseline."""

    def compose(self) -> ComposeResult:
        with Vertical(id="history-box"):
            yield Static(
                "Enter views a run · space marks runs, c compares them (the first is A)",
                id="history-hint",
            )
            yield DataTable(id="history", cursor_type="row", zebra_stripes=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#history-box").border_title = f"history: {len(self.runs)} run(s)"
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        for entry in self.runs:
            # Text, not str: a DataTable reads a str cell as markup, and these come from runs.
            table.add_row(*map(Text, history_row(entry)), key=str(entry.number))
        if self.viewed in self.runs:
            table.move_cursor(row=self.runs.index(self.viewed))
        table.focus()

    @on(DataTable.RowSelected)
    def selected(self, event: DataTable.RowSelected) -> None:
        number = int(str(event.row_key.value))
        self.dismiss(next((e for e in self.runs if e.number == number), None))

    def action_mark(self) -> None:
        table = self.query_one(DataTable)
        if not self.runs:
            return
        row = table.cursor_row
        entry = self.runs[row]
        if entry in self.marked:
            self.marked.remove(entry)
        else:
            self.marked.append(entry)
        table.update_cell_at(Coordinate(row, 0), Text(MARK if entry in self.marked else ""))
        table.move_cursor(row=min(row + 1, len(self.runs) - 1))

    def action_compare(self) -> None:
        if len(self.marked) < 2:
            self.notify("mark two runs or more with space, then c", timeout=3)
            return
        self.dismiss(list(self.marked))

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


def open_screen(app: App[Any], state: AppState) -> None:
    """``h``: every run; the one picked is shown (``ViewRun``), the marked ones compared."""

    def done(chosen: RunEntry | list[RunEntry] | None) -> None:
        if isinstance(chosen, list):
            from warmscope.tui.screens.compare_screen import compare  # a screen not yet opened

            compare(app, state, chosen)
        elif chosen is not None:
            app.post_message(ViewRun(chosen))

    app.push_screen(HistoryScreen(state.runs, state.viewed), done)
