"""``HistoryScreen``: every run of this session and every opened record; Enter views one."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from warmscope.core.digest import settings_line
from warmscope.tui import fmt
from warmscope.tui.runs import RunEntry

COLUMNS = ("#", "target", "mode", "settings", "status", "iters", "first", "p50", "record")


SETTINGS_W = 30


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def history_row(entry: RunEntry) -> tuple[str, ...]:
    s = entry.view.summary
    first = entry.view.series.head[0] if entry.view.series.head else None
    target = entry.title.split(" ", 2)[1]
    return (
        str(entry.number),
        target,
        entry.mode,
        _clip(settings_line(entry.data.settings), SETTINGS_W),
        entry.view.status,
        fmt.count(entry.view.count),
        fmt.ms(first),
        fmt.ms(s.p50_ms if s else None),
        entry.record_name + ("" if entry.source == "record" else " (this session)"),
    )


class HistoryScreen(ModalScreen[RunEntry | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,h,q", "dismiss", "Close", id="close-history"),
    ]

    def __init__(self, runs: list[RunEntry], viewed: RunEntry | None) -> None:
        super().__init__()
        self.runs = runs
        self.viewed = viewed

    def compose(self) -> ComposeResult:
        with Vertical(id="history-box"):
            yield Static("Enter views a run as it was recorded", id="history-hint")
            yield DataTable(id="history", cursor_type="row", zebra_stripes=True)
        yield Footer()

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

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
