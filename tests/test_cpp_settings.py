"""``--runtime``, a run setting like any other (the flag, the record, the reproduce line, the
comparison, ``sweep --vary``, the TUI's form), and what the C++ runtime refuses, in one line
with exit 2, before anything is built or run (no compiler needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.conftest import TARGETS, warmscope
from tests.tui_support import run
from warmscope.cli import make_parser
from warmscope.cli.options import build_settings
from warmscope.core.data import cpp_runtime
from warmscope.core.data.settings import RunSettings, SettingsError
from warmscope.core.data.sweep_plan import parse_vary
from warmscope.core.data.targets import Target
from warmscope.core.output.settings_diff import settings_diff
from warmscope.tui.app import build_app
from warmscope.tui.screens.settings_screen import SettingsScreen
from warmscope.tui.widgets.choice_field import ChoiceField

SCRIPT = Path(__file__).parent / "data" / "speech-script.jsonl"
ARCHIVE = Target("model.pt", "archive", "/m/model.pt", default_mode="script")
PACKAGE = Target("model.pt2", "aoti", "/m/model.pt2")


def cpp(**kw: object) -> RunSettings:
    settings = RunSettings(target="model.pt", **kw)  # type: ignore[arg-type]
    settings.set("runtime=cpp")
    return settings


def test_the_runtime_is_declared_once_and_read_everywhere() -> None:
    args = make_parser("run").parse_args(["m.pt", "--runtime", "cpp"])
    settings = build_settings(args)
    assert settings.knobs["runtime"] == "cpp"
    line = settings.command_line()
    again = build_settings(make_parser("run").parse_args(line[2:]))
    assert again.knobs["runtime"] == "cpp"
    assert RunSettings.from_json(settings.to_json()).knobs["runtime"] == "cpp"
    assert RunSettings.from_json({}).knobs["runtime"] == "python"  # older records
    rows = settings_diff(RunSettings(target="m.pt"), settings)
    assert [(r.name, r.a, r.b) for r in rows] == [("runtime", "python", "cpp")]
    assert parse_vary("runtime=python,cpp") == ("runtime", ("python", "cpp"))
    with pytest.raises(Exception, match="runtime"):
        parse_vary("runtime=python,java")


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        ("sample", ["sample model's factory", "torch.jit.save", "aoti_compile_and_package"]),
        ("file", ["Python factory", "torch.jit.save", "aoti_compile_and_package"]),
        ("module", ["Python factory", "torch.jit.save"]),
        ("export", ["exported program", "aoti_compile_and_package"]),
        ("pickle", ["pickled module", "torch.jit.save"]),
    ],
)
def test_targets_that_need_python_are_refused_naming_what_would_run_them(
    kind: str, names: list[str]
) -> None:
    why = cpp_runtime.refusal(cpp(), Target("t", kind, "/t"))
    assert why is not None and "\n" not in why
    for name in names:
        assert name in why


@pytest.mark.parametrize(
    ("change", "word"),
    [
        (lambda s: s.set("dynamo.cache_size_limit=4"), "dynamo"),
        (lambda s: s.set("compile_mode=max-autotune"), "torch.compile"),
        (lambda s: s.set("trace_strict=off"), "torch.jit.trace"),
        (lambda s: s.set("onednn_fusion=on"), "onednn"),
        (lambda s: setattr(s, "recipe", "r.py"), "--emit-cpp"),
        (
            lambda s: (setattr(s, "recipe", "r.cpp"), setattr(s, "profile_iters", "0")),
            "without --recipe",
        ),
        (lambda s: s.imports.append("m"), "--import"),
        (lambda s: setattr(s, "torch_logs", "+dynamo"), "TORCH_LOGS"),
        (
            lambda s: (setattr(s, "profile_iters", "0"), setattr(s, "profile_in_run", True)),
            "Python process",
        ),
    ],
)
def test_python_only_settings_are_refused(change: object, word: str) -> None:
    settings = cpp()
    change(settings)  # type: ignore[operator]
    why = cpp_runtime.refusal(settings, ARCHIVE)
    assert why is not None and word in why and "\n" not in why


def test_what_libtorch_has_is_accepted() -> None:
    settings = cpp(inputs=["1xTx40"], dims=["T=1,2"], seed=3, gap=0.1, fresh_inputs=True)
    for knob in (
        "profiling_executor=off",
        "num_profiled_runs=2",
        "graph_optimizer=off",
        "fusion_strategy=STATIC,2;DYNAMIC,10",
        "texpr_fuser=off",
        "intra_op_threads=2",
        "grad_mode=inference_mode",
        "freeze=on",
        "optimize_for_inference=on",
        "dtype=bfloat16",
        "cudnn_benchmark=on",
    ):
        settings.set(knob)
    assert cpp_runtime.refusal(settings, ARCHIVE) is None
    settings.profile_iters = "0,1"  # taken by a Python process, the difference stated
    assert cpp_runtime.refusal(settings, ARCHIVE) is None
    assert cpp_runtime.refusal(cpp(inputs=["x=2x8"]), PACKAGE) is not None
    assert cpp_runtime.refusal(cpp(inputs=["x=2x8"]), ARCHIVE) is None


def test_a_factory_is_refused_in_one_line_with_exit_2(tmp_path: Path) -> None:
    r = warmscope("run", "sample:speech", "--runtime", "cpp", "--iters", "2")
    assert r.code == 2
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "torch.jit.save" in r.stderr and "aoti_compile_and_package" in r.stderr
    r = warmscope("run", f"{TARGETS / 'factories.py'}:tiny", "--runtime", "cpp")
    assert r.code == 2 and "Python factory" in r.stderr


def test_settings_refuse_before_resolving_a_missing_compiler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The refusal comes from the settings: a factory is refused even where no compiler is."""
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CXX", raising=False)
    settings = RunSettings(target="sample:speech")
    settings.set("runtime=cpp")
    with pytest.raises(SettingsError, match="needs Python"):
        settings.resolve()


def test_the_tui_form_has_the_runtime() -> None:
    """The settings screen builds its knob rows from the declarations: the runtime is one, a
    choice of python and cpp; on this record's target (a sample's factory) cpp is refused with
    the line the command line gives."""
    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, SettingsScreen)
        field = form.query_one("#knob-runtime", ChoiceField)
        assert field.value == "python" and field.options == ["python", "cpp"]
        assert form.build().knobs["runtime"] == "python"
        field.value = "cpp"
        await pilot.pause()
        with pytest.raises(SettingsError, match=r"torch\.jit\.save"):
            form.build()
        await pilot.press("escape")

    run(app, scenario)
