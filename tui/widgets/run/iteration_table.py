"""``IterationTable``: index, latency, shape (when it varies), label and event count of every
iteration of a run, by number or slowest first (``o``)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any, overload

from rich.text import Text

from warmscope.tui import fmt
from warmscope.tui.fmt import shared_head
from warmscope.tui.run_view import RunView
from warmscope.tui.widgets.row_list import RowList

LABEL_W = 14
FIRST = "first call"
"""The label of a shape's first call that no event labels."""
SHAPE_W = 9
RESORT_AT = 64
"""More new iterations than this in one batch: sort again rather than insert one by one."""


class SlowestRows(Sequence[tuple[int, float]]):
    """Every iteration of a view, slowest first (ties by number), as ``(index, ms)`` rows: an
    order of indexes over the run's own latencies, read in place; ``update`` takes new ones."""

    def __init__(self, view: RunView) -> None:
        self._view = view
        latency = view.latencies.__getitem__
        self.order = sorted(range(view.count), key=latency, reverse=True)

    def _key(self, i: int) -> float:
        return -self._view.latencies[i]

    def update(self) -> bool:
        """Take the iterations the view was given since; False when there were none."""
        n, count = len(self.order), self._view.count
        if count <= n:
            return False
        if count - n > RESORT_AT:
            self.order.extend(range(n, count))
            self.order.sort(key=self._key)  # stable: ties stay by number
        else:
            for i in range(n, count):
                bisect.insort(self.order, i, key=self._key)
        return True

    def position(self, iteration: int) -> int:
        """Where ``iteration`` is in the order."""
        at = bisect.bisect_left(self.order, self._key(iteration), key=self._key)
        while at < len(self.order) and self.order[at] != iteration:
            at += 1
        return at

    def __len__(self) -> int:
        return len(self.order)

    @overload
    def __getitem__(self, index: int) -> tuple[int, float]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[int, float]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self.order)))]
        i = self.order[index]
        return (i, self._view.latencies[i])


class IterationTable(RowList):
    """Rows are ``(iteration, ms)`` from a ``RunView``; labels and counts come from its events."""

    TITLE = "iterations"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view: RunView | None = None
        self.slowest_first = False

    def show_view(self, view: RunView) -> None:
        self.view = view
        if self.slowest_first:
            self.show_rows(SlowestRows(view), follow=False)
        else:
            self.show_rows(view.rows, follow=not view.finished)

    def sync(self, dropped: int | None = None) -> None:
        rows = self.rows
        if isinstance(rows, SlowestRows):
            current = self.current_row()
            if rows.update() and current is not None:
                # The same iteration stays under the cursor.
                self.place(rows, rows.position(current[0]), False)
        super().sync(dropped)

    def toggle_order(self) -> None:
        """Slowest first over the whole run, or back by number, the cursor's iteration kept."""
        view = self.view
        if view is None:
            return
        row = self.current_row()
        self.slowest_first = not self.slowest_first
        self.border_title = f"{self.TITLE} · slowest first" if self.slowest_first else self.TITLE
        if self.slowest_first:
            self.show_rows(SlowestRows(view), follow=False)  # from the slowest
        else:
            self.show_rows(view.rows, follow=False)
            if row is not None:
                self.move_to(row[0])

    def show_iteration(self, iteration: int) -> None:
        """Put the cursor on ``iteration``, whatever the order."""
        rows = self.rows
        self.move_to(rows.position(iteration) if isinstance(rows, SlowestRows) else iteration)

    def header_text(self) -> Text:
        shape = f" {'shape':<{self._shape_w()}}" if self._shape_w() else ""
        return Text(f"{'#':>7} {'latency':>9}{shape}  {'label':<{LABEL_W}} {'ev':>3}")

    def _shape_w(self) -> int:
        """The shape column's width: the longest key, at most ``SHAPE_W``; 0 without shapes."""
        keys = self.view.shape_keys if self.view is not None else []
        cut = shared_head(keys)
        return min(SHAPE_W, max(5, *(len(k) - cut for k in keys))) if keys else 0

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
            key = view.shape_of(i)[shared_head(view.shape_keys) :]
            cells.append((f" {key[:width]:<{width}}", "dim"))
        if label is None and view is not None and view.first_of_shape(i):
            cells.append((f"  {FIRST:<{LABEL_W}}", "dim"))  # a new shape: its first call
        else:
            cells.append((f"  {(label or ''):<{LABEL_W}}", "accent"))
        return [
            *cells,
            (f" {n:>3}" if n else "    ", "dim"),
        ]
