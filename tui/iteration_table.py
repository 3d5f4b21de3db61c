"""``IterationTable``: index, latency, shape (when it varies), label and event count of every
iteration of a run."""

from __future__ import annotations

from rich.text import Text

from warmscope.tui import fmt
from warmscope.tui.row_list import RowList
from warmscope.tui.runs import RunView

LABEL_W = 14
SHAPE_W = 9


class IterationTable(RowList):
    """Rows are ``(iteration, ms)`` from a ``RunView``; labels and counts come from its events."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view: RunView | None = None

    def show_view(self, view: RunView) -> None:
        self.view = view
        self.show_rows(view.rows, follow=not view.finished)

    def header_text(self) -> Text:
        shape = f" {'shape':<{self._shape_w()}}" if self._shape_w() else ""
        return Text(f"{'#':>7} {'latency':>9}{shape}  {'label':<{LABEL_W}} {'ev':>3}")

    def _shape_w(self) -> int:
        """The shape column's width: the longest key, at most ``SHAPE_W``; 0 without shapes."""
        keys = self.view.shape_keys if self.view is not None else []
        return min(SHAPE_W, max(5, *(len(k) for k in keys))) if keys else 0

    def row_cells(self, row: tuple[int, float]) -> list[tuple[str, str]]:
        i, ms = row
        view = self.view
        label = view.label(i) if view else None
        n = view.event_count(i) if view else 0
        summary = view.summary if view else None
        warm = summary is not None and summary.steady_from is not None and i < summary.steady_from
        cells = [
            (f"{i:>7} ", ""),
            (f"{fmt.ms(ms):>9}", "warn" if warm else ""),
        ]
        width = self._shape_w()
        if view is not None and width:
            cells.append((f" {view.shape_of(i)[:width]:<{width}}", "dim"))
        return [
            *cells,
            (f"  {(label or ''):<{LABEL_W}}", "accent"),
            (f" {n:>3}" if n else "    ", "dim"),
        ]
