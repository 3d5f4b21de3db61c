"""Which characters the screen may use: Unicode, or ASCII for terminals that lack the rest."""

from __future__ import annotations

ASCII_TERMS = frozenset({"linux", "vt100", "vt102", "vt220"})
"""Terminals whose fonts lack braille, box drawing or emoji (the Linux console, serial lines)."""

_ascii = False


def ascii_wanted(term: str | None, flag: bool) -> bool:
    """``--ascii``, or a ``TERM`` that names a terminal without those characters."""
    return flag or (term or "") in ASCII_TERMS


def set_ascii(on: bool) -> None:
    """Draw with ASCII only (``on``) or with Unicode, from the next repaint."""
    global _ascii
    _ascii = on
