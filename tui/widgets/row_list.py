"""``RowList``: a bounded list drawn line by line, with a fixed header and a cursor.

The rows live in a ``deque`` owned by a ``RunView``; the list only draws the visible ones, so
thousands of new rows a second cost one refresh per tick, and that refresh sends only the cells
that changed (cells of one style go as one run). It follows its newest row unless the user
moved the cursor or scrolled up (``End`` follows again).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip

from warmscope.tui.widgets.text_lines import changed_regions


def _marks_blanks(style: Style) -> bool:
    """Whether ``style`` shows on spaces (a background, reverse, a line), not just on text."""
    return bool(style.bgcolor or style.reverse or style.underline or style.strike or style.overline)


def _thumb(
    size: int, window_virtual_size: float, window_size: float, position: float
) -> tuple[int, int] | None:
    """Where a vertical scrollbar of ``size`` cells draws its thumb, in its own eighths of a
    cell (Textual's ``ScrollBarRender.render_bar`` arithmetic): the same, the same bar."""
    if not (window_size and size and window_virtual_size and size != window_virtual_size):
        return None
    if window_virtual_size == window_size:
        return None
    eighths = len(ScrollBarRender.VERTICAL_BARS)
    thumb = max(1, window_size / (window_virtual_size / size))
    start = int((size - thumb) * (position / (window_virtual_size - window_size)) * eighths)
    return start, start + math.ceil(thumb * eighths)


class RowList(ScrollView, can_focus=True):
    """Subclasses give ``header_text`` and ``row_text``."""

    empty_text = ""
    """Shown in place of the rows while there are none."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Arrows, and vim's j/k as in htop, k9s and lazygit; G for the newest, as in less.
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home", "home", "First", show=False),
        Binding("end,G", "end", "Newest (follow)", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "row-list--header",
        "row-list--cursor",
        "row-list--dim",
        "row-list--accent",
        "row-list--warn",
        "row-list--error",
        "row-list--match",
    }

    class Selected(Message):
        """The user opened a row (``Enter`` or a click on the cursor row)."""

        def __init__(self, row_list: RowList, row: Any) -> None:
            super().__init__()
            self.row_list = row_list
            self.row = row

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.rows: Sequence[Any] = ()
        self.dropped = 0
        self.cursor = -1
        self.following = True
        self._styles: dict[tuple[str, bool, bool, bool], Style] = {}
        self._holding_bar = False
        """Within ``sync``: the scrollbar is repainted once, at its end, if its thumb moved."""
        self._drawn: dict[int, Strip] = {}
        """The strip last drawn on each line of the pane: a change refreshes only what differs."""

    # -- data -----------------------------------------------------------------------------

    def show_rows(self, rows: Sequence[Any], dropped: int = 0, *, follow: bool = True) -> None:
        """Draw another sequence (another run's): from its newest row, or from its first."""
        self.rows = rows
        self.dropped = dropped
        self.following = follow
        self.cursor = len(rows) - 1 if follow else 0
        self.scroll_to(y=0, animate=False, immediate=True)
        self.sync(dropped)

    def sync(self, dropped: int | None = None) -> None:
        """The rows changed: keep the cursor on its row, or on the newest when following."""
        if dropped is not None:
            shift = dropped - self.dropped
            self.dropped = dropped
        else:
            shift = 0
        n = len(self.rows)
        shown = self._holding_bar = self.show_vertical_scrollbar
        before = self._bar_thumb() if shown else None
        try:
            self._move(n, shift)
        finally:
            self._holding_bar = False
        if shown and self.show_vertical_scrollbar and self._bar_thumb() != before:
            self.vertical_scrollbar.refresh()
        self._repaint()

    def _move(self, n: int, shift: int) -> None:
        """The new length, and where the list is scrolled to."""
        self._grow(Size(0, n + 1))
        top = int(self.scroll_offset.y)
        if self.following:
            self.cursor = n - 1
            bottom = max(0, n + 1 - self.size.height)
            if bottom != top:  # a full list that follows stays put: no scroll, no region math
                self.scroll_to(y=bottom, animate=False, immediate=True)
        else:
            self.cursor = max(0, min(n - 1, self.cursor - shift))
            if shift:
                self.scroll_to(y=max(0, top - shift), animate=False, immediate=True)

    def _grow(self, size: Size) -> None:
        """Take a new virtual size without laying the screen out again (``virtual_size`` is a
        layout reactive: a screen-wide layout on every tick of a growing list was the costliest
        thing the live view did). Only the scrollbar is updated; a layout still follows when
        the scrollbar appears or goes (``show_vertical_scrollbar`` is a layout reactive)."""
        if size == self.virtual_size:
            return
        if not self.size:  # not laid out yet: the first layout takes it
            self.virtual_size = size
            return
        grows = size.height >= self.virtual_size.height
        self.set_reactive(RowList.virtual_size, size)
        if grows and self.show_vertical_scrollbar:  # it stays shown
            self._set_bar("window_virtual_size", size.height)
        else:
            self._scroll_update(size)

    def _bar_thumb(self) -> tuple[int, int] | None:
        bar = self.vertical_scrollbar
        return _thumb(bar.size.height, bar.window_virtual_size, bar.window_size, bar.position)

    def _set_bar(self, name: str, value: float) -> None:
        """Set the vertical scrollbar's ``window_virtual_size`` or ``position``, repainting it
        only where its thumb moves (within ``sync``, once, at its end): a list that follows
        its newest row keeps the thumb at the bottom, and a bar repainted each tick was a
        tenth of the bytes."""
        bar = self.vertical_scrollbar
        before = self._bar_thumb()
        bar.set_reactive(getattr(ScrollBar, name), value)
        if not self._holding_bar and self._bar_thumb() != before:
            bar.refresh()

    def current_row(self) -> Any | None:
        """The row under the cursor, if any."""
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def place(self, rows: Sequence[Any], cursor: int, following: bool) -> None:
        """Other rows (a filtered or sorted list) and where the cursor goes in them; ``sync``
        draws them."""
        self.rows = rows
        self.cursor = cursor
        self.following = following

    # -- drawing ------------------------------------------------------------------------

    def header_text(self) -> Text:
        return Text()

    def row_cells(self, row: Any) -> list[tuple[str, str]]:
        """The row as ``(text, part)`` cells; ``part`` names a ``row-list--`` style or is ""."""
        return [(str(row), "")]

    def part_style(self, name: str) -> Style:
        return self.get_component_rich_style(f"row-list--{name}", partial=True)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def _style_for(self, part: str, cursor: bool, *, blank: bool = False) -> Style:
        """The base style with a part (and the cursor) on top, built once per combination.
        ``blank``: for spaces, where a part that only colours text is the base style."""
        key = (part, cursor, self.has_focus, blank)
        style = self._styles.get(key)
        if style is None:
            style = self.rich_style
            if part and blank and not _marks_blanks(self.part_style(part)):
                part = ""
            if part:
                style = style + self.part_style(part)
            if cursor:
                # Only the cursor's background, blended over ours: a partial style would drop
                # its transparency and paint a solid bar the colour of the warm-up text.
                blended = self.get_component_rich_style("row-list--cursor", partial=False)
                style = style + Style(bgcolor=blended.bgcolor, bold=True)
            self._styles[key] = style
        return style

    def _text_line(self, line: Text, part: str, width: int) -> Strip:
        line.stylize(self.part_style(part))
        line.truncate(width, overflow="ellipsis", pad=True)
        base = self._style_for("", False)
        return Strip(list(line.render(self.app.console, end="")), width).apply_style(base)

    def render_line(self, y: int) -> Strip:
        strip = self._line(y)
        self._drawn[y] = strip
        return strip

    def _line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._text_line(self.header_text(), "header", width)
        index = int(self.scroll_offset.y) + y - 1
        if not self.rows and y == 1 and self.empty_text:  # an empty pane says why
            return self._text_line(Text(" " + self.empty_text), "dim", width)
        if index >= len(self.rows) or index < 0:
            return Strip.blank(width, self._style_for("", False))
        cursor = index == self.cursor and self.has_focus
        segments = []
        used = 0
        for text, part in self.row_cells(self.rows[index]):
            if used + len(text) > width:
                text = text[: max(0, width - used - 1)] + "…"
            segments.append(Segment(text, self._style_for(part, cursor, blank=not text.strip())))
            used += len(text)
            if used >= width:
                break
        if used < width:
            segments.append(Segment(" " * (width - used), self._style_for("", cursor)))
        # Cells of one style in one segment: one style sequence on the wire, not one a cell.
        return Strip(Segment.simplify(segments), width)

    def _repaint(self) -> None:
        """Refresh only the lines that changed since drawn, each from its first changed cell to
        its last: a list that follows a run sends the cells that moved, not the whole pane."""
        width, height = self.scrollable_content_region.size  # not the scrollbar's cells
        if not self._drawn or not width:
            self.refresh()
            return
        regions = []
        for y in range(height):
            old = self._drawn.get(y)
            new = self._line(y)
            if old is None:
                regions.append(Region(0, y, width, 1))
            else:
                for r in changed_regions([old], [new], width):
                    regions.append(r.translate((0, y)).intersection(Region(0, y, width, 1)))
        if regions := [r for r in regions if r]:
            self.refresh(*regions)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        if self.show_vertical_scrollbar:
            self._set_bar("position", new_value)
        if round(old_value) != round(new_value):
            self._repaint()  # not the whole pane (ScrollView's way): most lines only shift

    # -- moving -------------------------------------------------------------------------

    def _visible_rows(self) -> int:
        return max(1, self.size.height - 1)

    def _show_cursor(self) -> None:
        top = int(self.scroll_offset.y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + self._visible_rows():
            self.scroll_to(y=self.cursor - self._visible_rows() + 1, animate=False, immediate=True)
        self._repaint()

    def move_to(self, index: int) -> None:
        """Put the cursor on row ``index`` (clamped) and bring it into view."""
        n = len(self.rows)
        if not n:
            return
        self.cursor = max(0, min(n - 1, index))
        self.following = self.cursor == n - 1
        self._show_cursor()

    def action_move(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(1, self._visible_rows() - 1))

    def action_home(self) -> None:
        self.move_to(0)

    def action_end(self) -> None:
        self.move_to(len(self.rows) - 1)

    def action_select(self) -> None:
        if 0 <= self.cursor < len(self.rows):
            self.post_message(self.Selected(self, self.rows[self.cursor]))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.following = False

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        if self.scroll_offset.y >= self.max_scroll_y - 1:
            self.following = True

    def on_click(self, event: events.Click) -> None:
        if event.y < 1:
            return
        index = int(self.scroll_offset.y) + event.y - 1
        if 0 <= index < len(self.rows):
            again = index == self.cursor and self.has_focus
            self.move_to(index)
            if again or event.chain > 1:
                self.action_select()
