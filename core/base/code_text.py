"""Text from a path, record, model or warning, as it may enter a file of generated code.

A recipe is code a user runs on a server; a C++ recipe is compiled and loaded by the agent.
Whatever text comes from outside (a target's path, a warning, a shape's name, a setting's value)
enters such a file in one of three forms, never pasted:

* ``py_literal``: a Python literal the standard library wrote (``repr`` of the value).
* ``c_string``: a C++ string literal whose every byte outside printable ASCII, and every ``\\``,
  ``"`` and ``?``, is an escape; a hex escape is closed by splitting the literal (``"\\x41" "B"``)
  so a following hex digit cannot join it.
* ``comment_text``: the text of a comment or docstring: printable characters only
  (``str.isprintable``: no control, format, separator or unassigned character), with every
  other character, and ``\\`` and ``"``, as a Python escape (``\\x5c``, ``\\u202e``). It holds no
  newline (a comment cannot end early), no triple quote (a docstring cannot close), no backslash at
  its end (a C++ ``//`` comment cannot continue onto the next line) and no bidi or zero-width
  character (what a reader sees is what the file holds).
"""

from __future__ import annotations

import math
from typing import Any


def comment_text(text: str) -> str:
    """``text`` with only printable characters: every other one, and ``\\`` and ``"``, escaped."""
    out = []
    for ch in str(text):
        code = ord(ch)
        if ch.isprintable() and ch not in '\\"':
            out.append(ch)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def cpp_comment_text(text: str) -> str:
    """``comment_text`` for a C++ comment: ``??`` written ``?\\x3f`` as well, so no trigraph
    can form (``??/`` is a backslash where a compiler still reads them)."""
    return comment_text(text).replace("??", "?\\x3f")


def py_literal(value: Any) -> str:
    """A Python literal for a JSON-like value (str, int, float, bool, None, list, tuple, dict):
    ``repr`` for scalars (``float("inf")`` where repr would write a name), in the style a
    formatter leaves alone (double quotes where the text allows)."""
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f'float("{value!r}")'
    if isinstance(value, str):
        text = repr(value)
        if text.startswith("'") and '"' not in value:
            text = '"' + text[1:-1] + '"'
        return text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(py_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    raise TypeError(f"no Python literal for {type(value).__name__}")


def c_string(text: str) -> str:
    """A C++ string literal holding ``text`` (as UTF-8) exactly."""
    parts = ['"']
    hex_open = False
    for byte in str(text).encode("utf-8", "surrogatepass"):
        ch = chr(byte)
        if 0x20 <= byte <= 0x7E and ch not in '\\"?':
            if hex_open and ch in "0123456789abcdefABCDEF":
                parts.append('" "')  # a hex escape would take this digit in
            parts.append(ch)
            hex_open = False
        else:
            parts.append(f"\\x{byte:02x}")
            hex_open = True
    parts.append('"')
    return "".join(parts)
