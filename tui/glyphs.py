"""The characters charts and sparklines are drawn with: Unicode, or plain ASCII.

A Linux console or a VT100 has no braille, no eighth blocks and few box-drawing characters;
``--ascii`` asks for the same plain set anywhere. The app calls ``set_ascii`` once, before the
first frame; the chart functions read ``current()`` when they draw.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Any

from warmscope.core.base.safe_text import clean_name

# Terminals whose fonts lack the Unicode set (by TERM, or its prefix before a '-').
ASCII_TERMS = frozenset({"linux", "vt100", "vt102", "vt220", "dumb", "ansi"})


@dataclass(frozen=True)
class Glyphs:
    """One set of drawing characters."""

    blocks: str
    """Nine levels of a cell filled from the bottom: empty, 1/8 … 8/8."""
    bar: str
    """Nine levels of a cell filled from the left, for a horizontal bar: empty, 1/8 … 8/8."""
    vline: str
    tick: str
    cross: str
    corner: str
    hline: str
    warm: str
    """The axis under warm-up iterations."""
    p50: str
    """The steady p50 across the plot."""
    event: str
    """The mark of an event that is none of the lettered kinds."""
    braille: bool
    """Overlay curves in braille dots (2x4 per cell); else one glyph per cell."""
    a: str
    b: str
    both: str
    """Overlay glyphs when curves are told apart by shape: run A, run B, several in a cell."""
    more: str
    """Overlay glyphs for runs C, D, E and F."""
    ellipsis: str
    sep: str
    """Between the items of a legend."""

    @property
    def runs(self) -> str:
        """Each overlaid run's glyph, A first."""
        return self.a + self.b + self.more


UNICODE = Glyphs(
    blocks=" ▁▂▃▄▅▆▇█",
    bar=" ▏▎▍▌▋▊▉█",
    vline="│",
    tick="┤",
    cross="┼",
    corner="└",
    hline="─",
    warm="━",
    p50="╌",
    event="•",
    braille=True,
    a="•",
    b="+",
    both="*",
    more="xo#%",
    ellipsis="…",
    sep=" · ",
)
ASCII = Glyphs(
    blocks=" ..::||##",
    bar=" ..::||##",
    vline="|",
    tick="|",
    cross="+",
    corner="+",
    hline="-",
    warm="=",
    p50="-",
    event="*",
    braille=False,
    a="o",
    b="+",
    both="*",
    more="x@#%",
    ellipsis="...",
    sep=", ",
)

_current = UNICODE


def ascii_wanted(term: str | None, flag: bool) -> bool:
    """Whether to draw in ASCII: asked for with ``--ascii``, or a terminal that lacks Unicode."""
    if flag:
        return True
    name = (term or "").lower()
    return name in ASCII_TERMS or name.split("-")[0] in ASCII_TERMS


def set_ascii(on: bool) -> None:
    """Draw every chart and sparkline from now on in ASCII (``on``) or Unicode."""
    global _current
    _current = ASCII if on else UNICODE


def current() -> Glyphs:
    return _current


def dumb_terminal(term: str | None) -> bool:
    """Whether ``TERM`` names no terminal that can draw a screen: ``dumb``, or none at all."""
    return (term or "").strip().lower() in ("", "dumb")


def dumb_terminal_message(settings: Any, records: Any) -> str:
    """What to run instead of the TUI on a dumb terminal: the run, or the records' report."""
    if settings is not None and getattr(settings, "target", None):
        instead = "warmscope run " + shlex.quote(clean_name(settings.target)) + " …"
    elif records:
        first = records[0]
        name = str(first) if isinstance(first, (str, os.PathLike)) else "RECORD"
        instead = "warmscope report " + shlex.quote(clean_name(name))
    else:
        instead = "warmscope run TARGET …"
    return (
        f"the TUI needs a terminal that can draw a screen (TERM is dumb or unset); use `{instead}`"
    )
