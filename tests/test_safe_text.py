"""Terminal-safe text: escape sequences and control characters never reach the screen."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warmscope.core.base import safe_text
from warmscope.core.base.safe_text import REPLACEMENT, clean, clean_json, clean_line

FAST = settings(derandomize=True, deadline=None, database=None, max_examples=300)
R = REPLACEMENT

BIDI = {chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]}


def unsafe_chars(text: str, *, newline_ok: bool) -> list[str]:
    """The characters in ``text`` that must never reach a terminal."""
    bad = []
    for ch in text:
        code = ord(ch)
        if ch == "\n" and newline_ok:
            continue
        if (
            code < 0x20  # C0, ESC, \r, \t (tabs are expanded)
            or 0x7F <= code <= 0x9F  # DEL and C1, 8-bit CSI/OSC/DCS/ST included
            or ch in BIDI
            or ch in "\u2028\u2029"
            or 0xD800 <= code <= 0xDFFF
        ):
            bad.append(ch)
    return bad


# -- concrete cases ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        # OSC: set the window title, ended by BEL, by ST, or by 8-bit ST
        ("\x1b]0;pwned\x07after", R + "after"),
        ("\x1b]2;pwned\x1b\\after", R + "after"),
        ("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", R + "link" + R),
        ("\x9d0;pwned\x9cafter", R + "after"),
        # CSI: clear the screen, move home, colours, private modes
        ("\x1b[2J\x1b[Hx", R + R + "x"),
        ("\x1b[31;1mred\x1b[0m", R + "red" + R),
        ("\x1b[?25lhidden cursor", R + "hidden cursor"),
        ("\x1b[>0;1 q", R),
        ("\x9b31mred", R + "red"),
        # DCS, SOS, PM, APC strings, 7-bit and 8-bit
        ("\x1bPq#0;2;0;0;0#0!7~\x1b\\after", R + "after"),
        ("\x1bP+q544e\x1b\\", R),
        ("\x90$qm\x9cafter", R + "after"),
        ("\x1bXsos\x1b\\a", R + "a"),
        ("\x1b^pm\x1b\\a", R + "a"),
        ("\x1b_apc\x1b\\a", R + "a"),
        ("\x9fapc\x9ca", R + "a"),
        # two-character escapes and charset designation
        ("\x1bcreset", R + "reset"),
        ("\x1b7saved\x1b8", R + "saved" + R),
        ("\x1b(Bx", R + "x"),
        ("\x1b#8x", R + "x"),
        # unterminated sequences run to the end of the text
        ("before\x1b]0;no end", "before" + R),
        ("before\x1bPq#0;2", "before" + R),
        ("before\x1b[12;3", "before" + R),
        ("before\x9b12", "before" + R),
        ("before\x1b", "before" + R),
        ("\x1b]", R),
        # a string aborted by a new ESC: the ESC starts the next sequence
        ("\x1b]0;a\x1b[2Jx", R + R + "x"),
        # a CSI cut off by a non-sequence character keeps that character
        ("\x1b[12µs", R + "µs"),
        # stray controls: NUL, backspace, bell, DEL, vertical tab, form feed, C1
        ("a\x00b", "a" + R + "b"),
        ("secret\x08\x08\x08\x08\x08\x08public", "secret" + R * 6 + "public"),
        ("ding\x07", "ding" + R),
        ("a\x7fb", "a" + R + "b"),
        ("a\x0bb\x0cc", "a" + R + "b" + R + "c"),
        ("a\x85b\x9cc", "a" + R + "b" + R + "c"),
        # bidi overrides, isolates and marks; separators; lone surrogates
        ("file\u202egnp.exe", "file" + R + "gnp.exe"),
        ("\u2066x\u2069", R + "x" + R),
        ("a\u200fb\u061cc", "a" + R + "b" + R + "c"),
        ("a\u2028b\u2029c", "a" + R + "b" + R + "c"),
        ("bad\udcffbyte", "bad" + R + "byte"),
        # tag characters hiding ASCII are one mark
        ("hi\U000e0069\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065!", "hi" + R + "!"),
    ],
)
def test_clean_cases(raw: str, want: str) -> None:
    assert clean(raw) == want
    assert clean_line(raw) == want  # none of these has a newline


@pytest.mark.parametrize(
    ("raw", "want", "want_line"),
    [
        # CRLF and a trailing or leading \r are dropped silently
        ("line\r\n", "line\n", "line "),
        ("line\r", "line", "line"),
        ("a\r\nb\r\n", "a\nb\n", "a b "),
        ("\rstart", "start", "start"),
        # tqdm: every rewrite of the line stays readable
        (
            "\r  0%|     | 0/9\r 50%|##   | 4/9\r100%|#####| 9/9\r\n",
            "  0%|     | 0/9\n 50%|##   | 4/9\n100%|#####| 9/9\n",
            "  0%|     | 0/9  50%|##   | 4/9 100%|#####| 9/9 ",
        ),
        ("a\r\r\rb", "a\nb", "a b"),
        # a progress bar erasing the line with CSI before rewriting it
        ("old\x1b[2K\rnew", "old" + R + "\nnew", "old" + R + " new"),
        # newlines
        ("one\ntwo\n\nthree", "one\ntwo\n\nthree", "one two  three"),
        # tabs expand to 4-column stops, counting what is shown
        ("a\tbc\tdef\tg", "a   bc  def g", "a   bc  def g"),
        ("\x1b[1m\tx", R + "   x", R + "   x"),
        ("1\n\t2", "1\n    2", "1   2"),
    ],
)
def test_clean_line_breaks(raw: str, want: str, want_line: str) -> None:
    assert clean(raw) == want
    assert clean(raw, keep_newlines=False) == want_line
    assert clean_line(raw) == want_line


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain ASCII: forward took 12.3 ms [ok] {x: 1} ~!@#$%^&*()",
        "latency 25.1 µs, ±3 %, 10 °C, naïve café, Ærøskøbing, ß",
        "中文 日本語 한국어 Ελληνικά русский עברית العربية हिन्दी",
        "emoji 🔥🚀 family 👨‍👩‍👧‍👦 skin 👍🏽 flag 🇫🇷 keycap 1️⃣ ❤️",
        "England \U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f flag",
        "zero width: a\u200bb, joiner: \u0915\u094d\u200d\u0937, non-joiner: \u0645\u200c\u06cc",
        "soft\u00adhyphen, \ufeffBOM, word\u2060joiner, private \ue000\uf8ff, mark \ufffd",
        "torch._dynamo.exc.Unsupported: call_function BuiltinVariable(print) [] {}",
    ],
)
def test_ordinary_text_passes_unchanged(text: str) -> None:
    assert clean(text) == text
    assert clean_line(text) == text
    assert clean_json(text) == text


def test_multiline_text_is_unchanged_only_when_newlines_are_kept() -> None:
    text = "Traceback (most recent call last):\n  File 'x.py', line 3\nValueError: µ"
    assert clean(text) is text
    assert clean_line(text) == text.replace("\n", " ")


def test_long_input_is_linear() -> None:
    # Long unterminated strings and \r runs must not backtrack into quadratic time.
    n = 200_000
    assert clean("\x1b]0;" + "x" * n) == R
    assert clean("\x1bP" + ";" * n) == R
    assert clean("\x1b[" + "1;" * n) == R
    assert clean("a" + "\r" * n + "b") == "a\nb"
    assert clean("\x00" * n) == R * n


# -- clean_json -------------------------------------------------------------------------------


def test_clean_json_cleans_keys_and_values_and_keeps_shape() -> None:
    doc: dict[str, Any] = {
        "title\x1b]0;x\x07": "err\x1b[31m!",
        "nested": {"list": ["ok", "\x9b2J", 3, 1.5, True, None], "tuple": ("a\x00", ("b\r\n",))},
        "plain": "µs 中文",
        7: "int key\x07",
    }
    out = clean_json(doc)
    assert out == {
        "title" + R: "err" + R + "!",
        "nested": {"list": ["ok", R, 3, 1.5, True, None], "tuple": ("a" + R, ("b\n",))},
        "plain": "µs 中文",
        7: "int key" + R,
    }
    assert isinstance(out["nested"]["tuple"], tuple)
    assert isinstance(out["nested"]["tuple"][1], tuple)
    # a new structure: the input is left alone
    assert doc["nested"]["list"][1] == "\x9b2J"
    assert out is not doc and out["nested"] is not doc["nested"]


def test_clean_json_scalars() -> None:
    assert clean_json("a\x1bcb") == "a" + R + "b"
    assert clean_json(None) is None
    assert clean_json(3) == 3
    assert clean_json([]) == []
    assert clean_json(()) == ()
    assert clean_json({}) == {}


def test_clean_json_colliding_keys_later_wins() -> None:
    out = clean_json({"k\x01": ("first",), "k\x02": "second"})
    assert out == {"k" + R: "second"}


def test_clean_json_deep_nesting_and_cycles() -> None:
    deep: Any = "x\x07"
    for _ in range(100_000):
        deep = [deep]
    out = clean_json(deep)
    for _ in range(100_000):
        out = out[0]
    assert out == "x" + R

    cyclic: list[Any] = ["a\x00"]
    cyclic.append(cyclic)
    copied = clean_json(cyclic)
    assert copied[0] == "a" + R and copied[1] is copied


# -- properties -------------------------------------------------------------------------------

# Pieces that build escape sequences and controls, mixed with arbitrary characters, so
# the generated text often holds whole, partial and nested sequences.
FRAGMENTS = [
    "\x1b",
    "\x1b[",
    "\x1b]",
    "\x1bP",
    "\x1b\\",
    "\x9b",
    "\x9c",
    "\x9d",
    "\x90",
    "\x07",
    "\x18",
    "\r",
    "\n",
    "\t",
    "\r\n",
    "\x00",
    "\x7f",
    "\x08",
    "[",
    "]",
    "\\",
    "0;",
    "2J",
    "m",
    "?25l",
    "\u202e",
    "\u2066",
    "\u200f",
    "\u2028",
    "\U000e0041",
    "\U0001f3f4",
    "\U000e007f",
    "µ",
    "中",
    "🔥",
]
hostile_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.characters()), max_size=40).map(
    "".join
)
any_text = st.one_of(st.text(max_size=60), hostile_text)
printable_text = st.text(
    st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp")), max_size=60
)


@FAST
@given(any_text)
def test_output_has_no_control_characters(text: str) -> None:
    assert unsafe_chars(clean(text), newline_ok=True) == []
    line = clean_line(text)
    assert unsafe_chars(line, newline_ok=False) == []
    assert "\n" not in line


@FAST
@given(any_text)
def test_clean_is_idempotent(text: str) -> None:
    once = clean(text)
    assert clean(once) == once
    line = clean_line(text)
    assert clean_line(line) == line


@FAST
@given(printable_text)
def test_printable_text_is_unchanged(text: str) -> None:
    assert clean(text) is text
    assert clean_line(text) is text


@FAST
@given(st.lists(printable_text, max_size=5).map("\n".join))
def test_printable_lines_keep_their_newlines(text: str) -> None:
    assert clean(text) is text
    assert clean_line(text) == text.replace("\n", " ")


csi = st.builds(
    lambda params, final: "\x1b[" + params + final,
    st.text("0123456789;:<=>?", max_size=8),
    st.sampled_from("@ABCDHJKLMPSTXZ`abcdfhlmnqrsu~"),
)
osc = st.builds(
    lambda body, end: "\x1b]" + body + end,
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12),
    st.sampled_from(["\x07", "\x1b\\", "\x9c"]),
)
dcs = st.builds(
    lambda intro, body: intro + body + "\x1b\\",
    st.sampled_from(["\x1bP", "\x1bX", "\x1b^", "\x1b_", "\x90", "\x9e"]),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12),
)
sequences = st.one_of(csi, osc, dcs, st.sampled_from(["\x1bc", "\x1b7", "\x1b(B", "\x9b2J"]))


@FAST
@given(printable_text, sequences, printable_text)
def test_each_sequence_becomes_one_mark(before: str, seq: str, after: str) -> None:
    assert clean(before + seq + after) == before + R + after


@FAST
@given(printable_text, st.sampled_from(["\r\n", "\n"]))
def test_line_endings(text: str, ending: str) -> None:
    assert clean(text + ending) == text + "\n"


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), any_text),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(any_text, children, max_size=4)
    ),
    max_leaves=20,
)


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [*strings_in(k), *strings_in(v)]]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in strings_in(item)]
    return []


@FAST
@given(json_values)
def test_clean_json_leaves_no_unsafe_string(value: Any) -> None:
    out = clean_json(value)
    for text in strings_in(out):
        assert unsafe_chars(text, newline_ok=True) == []
    assert clean_json(out) == out
    # still JSON: it dumps and reads back to the same structure
    assert json.loads(json.dumps(out)) == out


def test_unsafe_chars_helper_sees_every_category() -> None:
    # The property tests are only as good as this checker: it flags all of Cc but \n.
    controls = [chr(c) for c in range(0x10000) if unicodedata.category(chr(c)) == "Cc"]
    assert unsafe_chars("".join(controls), newline_ok=True) == [c for c in controls if c != "\n"]


def test_every_code_point() -> None:
    everything = "".join(map(chr, range(0x110000)))
    assert unsafe_chars(clean(everything), newline_ok=True) == []
    assert unsafe_chars(clean_line(everything), newline_ok=False) == []
    # the isprintable shortcut may only skip text the patterns would leave alone
    printable = "".join(ch for ch in everything if ch.isprintable())
    assert safe_text._UNSAFE_ONE_LINE.search(printable) is None
