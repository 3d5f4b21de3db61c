"""Line filters, the last word on what reaches the terminal, whoever drew it (the app's widgets
or Textual's own): ``ControlFilter`` lets no control character through, ``AsciiFilter`` turns
any character a plain terminal lacks (``--ascii``) into an ASCII one of the same width."""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from rich.cells import cell_len
from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from warmscope.core.base.safe_text import strip_controls

SAME = {
    "·": ".", "•": "*", "…": "~", "–": "-", "—": "-", "×": "x", "≈": "~", "µ": "u",
    "±": "+", "→": ">", "←": "<", "↑": "^", "↓": "v", "▲": "^", "▼": "v", "▶": ">", "◀": "<",
    "✓": "+", "✗": "x", "●": "*", "■": "#", "◌": "o", "▏": "|", "▕": "|", "▎": "|", "▊": "|",
    "╸": "-", "╺": "-", "━": "=", "▔": "-", "▁": "_", "⏎": "<", "≥": ">", "≤": "<",
    "°": "o",
}  # fmt: skip
"""Characters with a close ASCII look-alike; others go by their Unicode block."""


@lru_cache(4096)
def ascii_char(ch: str) -> str:
    """One character as ASCII of the same width on screen."""
    if ch.isascii():
        return ch
    if ch in SAME:
        return SAME[ch]
    code = ord(ch)
    if 0x2500 <= code <= 0x257F:  # box drawing: by the strokes its name gives
        name = unicodedata.name(ch, "")
        across, down = "HORIZONTAL" in name, "VERTICAL" in name
        if across and not down:
            return "-"
        if down and not across:
            return "|"
        return "+"
    if 0x2580 <= code <= 0x259F:  # block elements: a cell mostly full
        return "#"
    if 0x2800 <= code <= 0x28FF:  # braille: some dots
        return "." if code != 0x2800 else " "
    return "?" * max(1, cell_len(ch))


@lru_cache(1024)
def ascii_text(text: str) -> str:
    return "".join(map(ascii_char, text))


class AsciiFilter(LineFilter):
    """Replace every non-ASCII character of a line by an ASCII one of the same width."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [
            seg if seg.text.isascii() else Segment(ascii_text(seg.text), seg.style, seg.control)
            for seg in segments
        ]


class ControlFilter(LineFilter):
    """Delete escape and other control characters a widget let through: text meant for the
    screen must not talk to the terminal. They take no cells, so every line keeps its width;
    names and child output are marked visibly where they are made (``core/base/safe_text.py``)."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [
            seg
            if seg.control or seg.text.isprintable()
            else Segment(strip_controls(seg.text), seg.style, seg.control)
            for seg in segments
        ]
