"""``EventsPane``: JIT and compiler events and warnings, each with its iteration."""

from __future__ import annotations

from rich.text import Text

from warmscope.core.run import Event
from warmscope.tui.row_list import RowList
from warmscope.tui.runs import RunView

KIND_W = 9
KIND_STYLE = {"warning": "warn", "recompile": "error", "compile": "accent", "knob": "warn"}


def where(ev: Event) -> str:
    """``#12`` for an iteration, the phase name (shortened) otherwise."""
    if ev.iteration is not None:
        return f"#{ev.iteration}"
    return (ev.phase or "setup")[:7]


class EventsPane(RowList):
    """Rows are ``Event`` objects (not stderr ones: those go to the stderr pane)."""

    empty_text = "no events: JIT logs, compiles, recompiles, graph breaks and warnings land here"

    def show_view(self, view: RunView) -> None:
        self.show_rows(view.events, view.events_total - len(view.events), follow=not view.finished)

    def header_text(self) -> Text:
        return Text(f"{'where':>7} {'kind':<{KIND_W}} title")

    def row_cells(self, ev: Event) -> list[tuple[str, str]]:
        return [
            (f"{where(ev):>7} ", ""),
            (f"{ev.kind:<{KIND_W}}", KIND_STYLE.get(ev.kind, "dim")),
            (" " + ev.title.replace("\n", " "), ""),
        ]
