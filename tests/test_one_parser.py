"""One parser for each input: the command line and the TUI's settings form read the same text
the same way, so the same bad input is refused by both with the same words.

Each case is a bad value typed once after its option (``warmscope run|sweep … --opt VALUE``)
and once into the form's field; the words expected are in both refusals. The form is the real
one, in a real app, as a user fills it in.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.cli_in_process import main_here
from tests.tui_support import SharedApp, fill
from warmscope.core.data.settings import RunSettings, SettingsError
from warmscope.core.data.sweep_plan import MAX_REPEAT, NEEDS_TWO
from warmscope.tui.app import build_app

TARGET = "sample:trivial"

CASES = [
    # (command, its options, the form's fields, the words both say)
    ("run", ["--iters", "0"], {"iters": "0"}, "--iters must be at least 1, got 0"),
    ("run", ["--iters", "x"], {"iters": "x"}, "argument --iters: invalid int value: 'x'"),
    ("run", ["--duration", "0"], {"duration": "0"}, "--duration must be a positive number"),
    ("run", ["--seed", "-1"], {"seed": "-1"}, "--seed must be a non-negative integer, got -1"),
    ("run", ["--gap", "-1"], {"gap": "-1"}, "--gap must be a number of seconds, got -1.0"),
    ("run", ["--schedule", "sideways"], {"schedule": "sideways"}, "invalid choice: 'sideways'"),
    ("run", ["--dim", "T"], {"dims": "T"}, "bad --dim 'T'"),
    ("run", ["--input", "zz["], {"inputs": "zz["}, "bad --input 'zz['"),
    ("run", ["--idle-probe", "a"], {"idle_probe": "a"}, "bad --idle-probe item 'a'"),
    (
        "sweep",
        ["--preset", "nonesuch,frozen"],
        {"sweep_presets": "nonesuch frozen"},
        "unknown preset 'nonesuch'",
    ),
    ("sweep", ["--preset", "frozen,frozen"], {"sweep_presets": "frozen frozen"}, "given twice"),
    (
        "sweep",
        ["--vary", "grad_mode=sideways"],
        {"vary": "grad_mode=sideways"},
        "vary grad_mode: ",
    ),
    (
        "sweep",
        ["--vary", "grad_mode=no_grad,enabled", "--vary", "grad_mode=inference_mode"],
        {"vary": "grad_mode=no_grad,enabled grad_mode=inference_mode"},
        "vary grad_mode: the knob is varied twice",
    ),
    (
        "sweep",
        ["--preset", "eager,frozen", "--repeat", str(MAX_REPEAT + 1)],
        {"sweep_presets": "eager frozen", "processes": str(MAX_REPEAT + 1)},
        f"processes per setting: from 1 to {MAX_REPEAT}, got {MAX_REPEAT + 1}",
    ),
    ("sweep", ["--preset", "frozen"], {"sweep_presets": "frozen", "processes": "2"}, NEEDS_TWO),
]


@pytest.fixture(autouse=True)
def records_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))


@pytest.fixture(scope="module")
def form_app() -> Iterator[SharedApp]:
    app = build_app()
    app.state.next_settings = RunSettings(target=TARGET, iters=5)
    with SharedApp(app, (100, 30)) as shared:
        yield shared


@pytest.mark.parametrize(("command", "options", "fields", "words"), CASES)
def test_the_command_line_and_the_form_refuse_an_input_with_the_same_words(
    capsys: pytest.CaptureFixture[str],
    form_app: SharedApp,
    command: str,
    options: list[str],
    fields: dict[str, str],
    words: str,
) -> None:
    said = main_here(capsys, command, TARGET, *options)
    assert said.code == 2, said.stderr
    assert words in said.stderr
    refused: list[str] = []

    async def scenario(pilot: Pilot) -> None:
        screen = await fill(pilot, **fields)
        with pytest.raises(SettingsError) as exc:
            screen.build()
        refused.append(str(exc.value))
        await pilot.press("escape")

    form_app.run(scenario)
    assert words in refused[0]
