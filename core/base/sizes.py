"""Sizes as people write them: ``--memory-limit 512M``."""

from __future__ import annotations


def parse_size(text: str) -> int:
    """``512M``, ``3G``, ``1.5G``, ``2048`` (bytes) as bytes; ``ValueError`` names the form."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    raw = text.strip().upper().removesuffix("B").removesuffix("I")
    number, unit = raw, ""
    if raw and raw[-1] in units:
        number, unit = raw[:-1], raw[-1]
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"{text!r}: a size such as 512M, 3G or 2048 (bytes)") from None
    size = int(value * units[unit])
    if size < 16 << 20:
        raise ValueError(f"{text!r}: at least 16M (torch alone needs more than that)")
    return size
