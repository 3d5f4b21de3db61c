"""Make text from a child process, a model or a record file safe to show on a terminal.

Any such string (stderr lines, event titles and text, targets, knob values, error
messages) may carry terminal control: ``ESC ] 0 ; title BEL`` renames the window,
``ESC [ 2 J`` clears the screen, a DCS string talks to the terminal itself, ``\\x9b``
is an 8-bit CSI, ``\\r`` and backspace rewrite what was printed, and bidi overrides
such as U+202E make text read differently from what it is.  ``clean`` removes all of
it in one regex pass and leaves a visible mark where something was, so a user sees
that the source printed something the screen will not show.

Choices, in one place:

* ``REPLACEMENT`` is U+FFFD, the character decoders already put in place of bytes they
  cannot read (``bytes.decode(errors="replace")``), so it keeps one meaning here:
  "unprintable input was here".  A whole escape sequence (CSI, OSC, DCS, SOS, PM, APC,
  ``ESC x``, in 7-bit or 8-bit form, terminated or running to the end of the text or
  line) becomes one mark, not one per byte; every other control character becomes one
  mark each; a run of Unicode tag characters (invisible "ASCII smuggling") becomes one.
* ``\\n`` is kept; with ``keep_newlines=False`` it becomes a space, because a title or
  status line joined from several lines reads best that way and a newline is not
  dangerous, only out of place.
* ``\\t`` is expanded to the next multiple of 4 columns (``str.expandtabs(4)``): a tab's
  width depends on the terminal, and tab stops keep small tables aligned better than a
  fixed run of spaces.
* ``\\r`` (any run of them) at the start or end of a line, as in CRLF endings, is dropped
  silently.  A ``\\r`` inside a line (tqdm-style progress bars rewriting the line) becomes
  a line break, or a space with ``keep_newlines=False``: every update stays readable and
  none hides the text before it.
* Bidi controls (U+202A-U+202E, U+2066-U+2069, and the marks U+200E, U+200F, U+061C),
  the deprecated format controls U+206A-U+206F, the interlinear annotation characters
  U+FFF9-U+FFFB (they hide text), the line and paragraph separators U+2028/U+2029 and
  lone surrogates (which cannot be encoded for output) each become one mark.
* Kept as they are: every letter, digit, symbol, emoji, private-use character, and the
  format characters that scripts and emoji need and that only hide themselves: zero
  width (non-)joiner, zero width space, word joiner, soft hyphen, BOM.  Tag characters
  are kept only inside an emoji subdivision flag (U+1F3F4, tags, U+E007F).

Names (targets, paths, record names, setting values) go through ``clean_name``: one line,
and the invisible format characters ``clean`` keeps for stderr's sake (zero width space,
(non-)joiner, word joiner, BOM, soft hyphen, invisible operators, Mongolian vowel
separator) each become a ``REPLACEMENT`` too.  In a name they have no use but to make two
different names look the same; in stderr text an emoji needs its joiners, so ``clean``
keeps them there.

``strip_controls`` is the last word before the terminal: it deletes, not marks, what
``clean`` would mark one for one, so a line drawn with its width already counted (control
characters take no cells) keeps that width, and nothing drawn can move the cursor or talk
to the terminal whichever widget drew it.

Text that holds none of these characters is returned as is, found with ``str.isprintable``
and then one precompiled ``search``: ``clean`` runs on every stderr line, possibly 100k
lines a second.  Text that does hold one goes through a single ``re.sub``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = [
    "REPLACEMENT",
    "clean",
    "clean_json",
    "clean_line",
    "clean_name",
    "clean_names",
    "strip_controls",
]

REPLACEMENT = "\ufffd"
"""The visible mark left where an escape sequence or a control character was removed."""

# Single characters that are replaced one for one: C0 controls other than \t \n \r
# (those three have their own rules), DEL, C1 controls that do not start a sequence,
# bidi controls and marks, deprecated format controls, interlinear annotation, line and
# paragraph separators, and lone surrogates.
_CONTROL_CHARS = (
    r"\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f"
    r"\u061c\u200e\u200f\u2028-\u202e\u2066-\u206f\ufff9-\ufffb\ud800-\udfff"
)

# Any character that means the slow path is needed.  \n only counts when newlines go.
_TAGS = r"\U000e0001\U000e0020-\U000e007f"
_STARTS = _CONTROL_CHARS + r"\r" + _TAGS  # where a slow-path match can start
_TRIGGER = _STARTS + r"\t"  # tabs need the slow path only for expandtabs
_UNSAFE_KEEP_NL = re.compile(f"[{_TRIGGER}]")
_UNSAFE_ONE_LINE = re.compile(f"[{_TRIGGER}\\n]")

# The slow pattern opens with a character class, so the regex engine skips in C to the
# next character that can start a match instead of trying every branch at every
# position; a one-character lookbehind then picks what may follow that character.
# Strings (OSC, DCS, SOS, PM, APC) end at BEL or ST, or where a terminal would abort or
# we split lines (ESC, CAN, SUB, newline), or at the end of the text: an unterminated
# one still goes whole.  A CSI takes parameter, intermediate and an optional final byte,
# so a cut-off CSI also goes whole.  The last ESC form covers ESC c, ESC 7, ESC ( B,
# ESC # 8 and a lone ESC.  Runs of \r and of tag characters are one match each; any
# other character of the class is a match on its own (the empty last branch).
_STRING = r"[^\x07\x1b\x9c\n\x18\x1a]*(?:\x07|\x1b\\|\x9c)?"
_CSI = r"[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
_FOLLOW = (
    f"(?<=\\x1b)(?:[\\]PX^_]{_STRING}|\\[{_CSI}|[\\x20-\\x2f]*[\\x30-\\x7e]?)"
    f"|(?<=[\\x90\\x98\\x9d\\x9e\\x9f]){_STRING}"
    f"|(?<=\\x9b){_CSI}"
    r"|(?<=\r)\r*"
    f"|(?<=[{_TAGS}])[{_TAGS}]*"
    r"|"
)


@functools.cache
def _slow(keep_newlines: bool) -> re.Pattern[str]:
    """The slow pattern, compiled when text first needs it: most text never does, and
    compiling it cost every start several milliseconds."""
    starts = _STARTS if keep_newlines else _STARTS + "\\n"
    return re.compile(f"[{starts}](?:{_FOLLOW})")


_FLAG = "\U0001f3f4"
_FLAG_TAGS = re.compile(r"[\U000e0020-\U000e007e]+\U000e007f")


def _replace(match: re.Match[str], line_break: str) -> str:
    """What one match of a slow pattern becomes; ``line_break`` stands for a mid-line \\r."""
    found = match.group()
    first = found[0]
    if first == "\r":
        # A run of \r at a line's edge (CRLF, a leading \r) goes silently; inside a
        # line it is a progress-bar rewrite, shown as a break so no update is hidden.
        start, end = match.span()
        text = match.string
        if start == 0 or end == len(text) or text[start - 1] == "\n" or text[end] == "\n":
            return ""
        return line_break
    if first == "\n":  # only matched when newlines go
        return " "
    if first >= "\U000e0000":
        # Tags are kept only as an emoji subdivision flag: U+1F3F4, tags, cancel tag.
        start = match.start()
        if start > 0 and match.string[start - 1] == _FLAG and _FLAG_TAGS.fullmatch(found):
            return found
    return REPLACEMENT


def _replace_keep_nl(match: re.Match[str]) -> str:
    return _replace(match, "\n")


def _replace_one_line(match: re.Match[str]) -> str:
    return _replace(match, " ")


def clean(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with escape sequences and control characters replaced; safe to print.

    Each escape sequence or control character becomes one ``REPLACEMENT``; ``\\n`` is
    kept (a space if ``keep_newlines`` is false); tabs expand to 4-column stops; ``\\r``
    at a line's edge is dropped and inside a line becomes a line break (or a space).
    Text with nothing to clean is returned unchanged, and ``clean`` is idempotent.
    """
    # str.isprintable is about twice as fast as the search and is false for every
    # character either pattern looks for (Cc, Cf, Cs, Zl, Zp), so it only skips work.
    if text.isprintable():
        return text
    if keep_newlines:
        if _UNSAFE_KEEP_NL.search(text) is None:
            return text
        out = _slow(True).sub(_replace_keep_nl, text)
    else:
        if _UNSAFE_ONE_LINE.search(text) is None:
            return text
        out = _slow(False).sub(_replace_one_line, text)
    # After the pass: escape sequences take no columns, so stops count what is shown.
    return out.expandtabs(4) if "\t" in out else out


def clean_line(text: str) -> str:
    """``text`` as one safe line, for a status line or a title: newlines become spaces."""
    return clean(text, keep_newlines=False)


# Invisible in a name: zero width space, ZWNJ, ZWJ, word joiner, invisible operators,
# BOM, soft hyphen, Mongolian vowel separator, Hangul fillers (blank, and letters).
_INVISIBLE = "\u200b\u200c\u200d\u2060-\u2064\ufeff\u00ad\u180e\u115f\u1160\u3164\uffa0"
_INVISIBLE_RE = re.compile(f"[{_INVISIBLE}]")


def clean_name(text: str) -> str:
    """A name (a target, a path, a setting's value) as one safe line, its invisible
    characters marked: what ``clean_line`` does, and zero width characters become a mark."""
    line = clean_line(text)
    if line.isascii():
        return line
    return _INVISIBLE_RE.sub(REPLACEMENT, line)


def clean_names(text: str) -> str:
    """Each line of ``text`` made safe as ``clean_name`` makes a name: a message naming files."""
    return "\n".join(clean_name(line) for line in text.split("\n"))


_DRAWN_CONTROLS = re.compile(f"[{_CONTROL_CHARS}\r\n\t\x1b]")


def strip_controls(text: str) -> str:
    """``text`` without any control character, bidi control or lone surrogate: for a line
    already laid out (such characters take no cells), so its width stays the same."""
    if text.isprintable():
        return text
    return _DRAWN_CONTROLS.sub("", text)


def clean_json(value: Any) -> Any:
    """A copy of a JSON-like ``value`` with every string in it, keys too, ``clean``-ed.

    Dicts, lists and tuples are copied (tuples stay tuples); other values are kept.
    Two keys that clean to the same string collide, and the later one wins, as in a
    dict literal.  The walk uses its own stack, so nesting as deep as a record file can
    hold cannot raise ``RecursionError``; a container met twice is copied once, so
    shared or cyclic structures keep their shape.
    """
    root: list[Any] = [None]
    todo: list[tuple[Any, Any]] = []  # (source container, its new empty copy)
    copies: dict[int, Any] = {}  # id of a source dict or list -> its copy
    # Tuples are filled as lists, then frozen children first: (parent, slot, list).
    tuples: list[tuple[Any, Any, list[Any]]] = []

    def place(item: Any, parent: Any, slot: Any) -> None:
        if isinstance(item, str):
            parent[slot] = clean(item)
        elif isinstance(item, (dict, list)):
            new = copies.get(id(item))
            if new is None:
                new = copies[id(item)] = {} if isinstance(item, dict) else []
                todo.append((item, new))
            parent[slot] = new
        elif isinstance(item, tuple):
            filling: list[Any] = []
            todo.append((item, filling))
            tuples.append((parent, slot, filling))
            parent[slot] = filling
        else:
            parent[slot] = item

    place(value, root, 0)
    while todo:
        source, new = todo.pop()
        if isinstance(source, dict):
            for key, item in source.items():
                place(item, new, clean(key) if isinstance(key, str) else key)
        else:
            new.extend([None] * len(source))
            for index, item in enumerate(source):
                place(item, new, index)
    for parent, slot, filling in reversed(tuples):
        # A later colliding key may have replaced the placeholder; leave that one.
        if parent[slot] is filling:
            parent[slot] = tuple(filling)
    return root[0]
