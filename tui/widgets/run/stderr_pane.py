"""``StderrPane``: the child's stderr lines (a ``Log``), saying so while there are none."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.strip import Strip
from textual.widgets import Log


class StderrPane(Log):
    """An empty pane looked like a broken one: it says what would land here."""

    empty_text = "no output on stderr: the child's prints, logs and tracebacks land here"
    COMPONENT_CLASSES: ClassVar[set[str]] = {"stderr-pane--empty"}

    def render_line(self, y: int) -> Strip:
        if y == 0 and not self.lines:
            style = self.get_component_rich_style("stderr-pane--empty", partial=True)
            text = Text(" " + self.empty_text, style=style)
            text.truncate(self.size.width, overflow="ellipsis")
            strip = Strip(list(text.render(self.app.console, end="")))
            return strip.crop_extend(0, self.size.width, self.rich_style).apply_style(
                self.rich_style
            )
        return super().render_line(y)
