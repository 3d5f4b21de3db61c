"""Terminals as people have them: NO_COLOR, plain ASCII ones (the Linux console, a VT100)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_tui_wire import _tui_output
from warmscope.tui import glyphs

RECORDS = [
    str(Path(__file__).parent / "data" / n)
    for n in ("speech-script.jsonl", "speech-no-profiling.jsonl")
]
SGR = re.compile(rb"\x1b\[([0-9;:]*)m")
ESCAPES = re.compile(
    rb"\x1b(\[[0-9;:?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-B]|[=>78DEHMc])"
)


def colour_codes(out: bytes) -> list[bytes]:
    """The SGR sequences that set a colour (a foreground or background, any palette)."""
    found = []
    for m in SGR.finditer(out):
        params = [int(p) if p.isdigit() else -1 for p in re.split(rb"[;:]", m.group(1)) if p]
        if any(p in (38, 48) or 30 <= p <= 37 or 40 <= p <= 47 or 90 <= p <= 107 for p in params):
            found.append(m.group(0))
    return found


@pytest.fixture(scope="module")
def in_ascii() -> bytes:
    """What ``warmscope open RECORDS --ascii`` writes to a real terminal: ASCII, in colour."""
    out, _ = _tui_output("open", *RECORDS, "--ascii")
    return out


def test_no_color_means_no_colour_codes_at_all(in_ascii: bytes) -> None:
    # Without NO_COLOR there are colours, --ascii or not, and the check finds them.
    assert colour_codes(in_ascii), "the check finds colours where there are some"
    plain, _ = _tui_output("open", *RECORDS, NO_COLOR="1")
    assert len(plain) > 5000, "the app drew its screen"
    assert b"\x1b[" in plain and not colour_codes(plain), colour_codes(plain)[:5]


def test_ascii_draws_nothing_but_ascii(in_ascii: bytes) -> None:
    text = ESCAPES.sub(b"", in_ascii)
    assert len(text) > 1000 and b"+--" in text, "the app drew its boxes"
    assert text.decode("ascii", errors="replace").isascii() and text.isascii(), sorted(
        {c for c in text.decode("utf-8", errors="replace") if not c.isascii()}
    )


def test_the_linux_console_and_a_vt100_get_ascii_by_themselves() -> None:
    assert glyphs.ascii_wanted("linux", False) and glyphs.ascii_wanted("vt100", False)
    assert not glyphs.ascii_wanted("xterm-256color", False) and not glyphs.ascii_wanted(None, False)
    assert glyphs.ascii_wanted("xterm-256color", True)
    out, _ = _tui_output("open", *RECORDS, TERM="linux")
    assert ESCAPES.sub(b"", out).isascii()


def test_without_colour_the_cursor_is_in_reverse_video(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from textual.widgets import DataTable

    from tests.tui_support import run
    from warmscope.tui.app import build_app
    from warmscope.tui.widgets.row_list import RowList

    monkeypatch.setenv("NO_COLOR", "1")
    app = build_app(records=[Path(r) for r in RECORDS])

    async def scenario(pilot) -> None:  # type: ignore[no-untyped-def]
        rows = app.main.query(RowList).first()
        assert rows.get_component_rich_style("row-list--cursor").reverse
        await pilot.press("h")
        table = app.screen.query_one(DataTable)
        assert table.get_component_rich_style("datatable--cursor").reverse

    run(app, scenario, (80, 24))
