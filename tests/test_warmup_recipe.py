"""The recipe model and its Python file: pure, no child process."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from warmscope.core.output.recipe import (
    LEGACY_FIELDS,
    Call,
    Recipe,
    artifact_path_for,
    emit_python,
    split_header,
    takes,
)
from warmscope.core.output.recipe_cpp import CppRecipeError, emit_cpp

SPEECH_SPEC = {"dtype": "float32", "shape": [1, "T", 40], "name": None, "gen": None, "args": []}


def speech_recipe(**changes: object) -> Recipe:
    recipe = Recipe(
        label="warm-up calls",
        mode="script",
        specs=[SPEECH_SPEC],
        shapes=[{"T": 20}, {"T": 30}],
        calls=[
            Call({"T": 20}, 3, "first call 41 ms, 11× its steady p50 (the profiling run)"),
            Call({"T": 30}, 2),
        ],
    )
    for key, value in changes.items():
        if key in LEGACY_FIELDS:  # a process-wide knob: carried by its declaration
            recipe.settings[LEGACY_FIELDS[key]] = value
        else:
            assert hasattr(recipe, key), key
            setattr(recipe, key, value)
    return recipe


def imports_of(text: str) -> set[str]:
    tree = ast.parse(text)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    return names


def test_emitted_file_imports_only_torch_and_the_standard_library() -> None:
    for recipe in (
        speech_recipe(),
        speech_recipe(profiling_executor=False, num_profiled_runs=1, freeze=True),
        speech_recipe(
            mode="compile",
            compile_options={"backend": "inductor", "dynamic": True},
            cache_artifact=True,
            guard_recompile=True,
            mark_dynamic=[{"input": 0, "axis": 1, "min": 20, "max": 30}],
        ),
        speech_recipe(specs=[], shapes=[], calls=[Call({}, 2)]),
        speech_recipe(device="cuda", cudnn_benchmark=False, cuda_module_loading="LAZY"),
        speech_recipe(mode="trace", trace_strict=False, freeze=True, dtype="bfloat16"),
        speech_recipe(mode="trace", specs=[], shapes=[], calls=[Call({}, 2)]),
    ):
        text = emit_python(recipe, target="sample:speech")
        compile(text, "recipe.py", "exec")  # valid Python
        assert imports_of(text) <= {"torch", "contextlib", "os", "warnings", "typing", "__future__"}
        assert "warmscope" not in split_header(text)[1]  # the header alone names it
        assert "def prepare(model, example_inputs=None):" in text
        formatted = subprocess.run(
            [sys.executable, "-m", "ruff", "format", "--check", "-"],
            input=text, capture_output=True, text=True,
        )  # fmt: skip
        assert formatted.returncode == 0, formatted.stdout + formatted.stderr


def test_settings_and_calls_are_in_the_file_with_their_reasons() -> None:
    text = emit_python(
        speech_recipe(profiling_executor=False, fusion_strategy="STATIC,2;DYNAMIC,10")
    )
    assert "torch._C._jit_set_profiling_executor(False)" in text
    assert 'torch.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])' in text
    assert "# T=20: first call 41 ms, 11× its steady p50 (the profiling run)" in text
    assert "for _ in range(3):" in text and "for _ in range(2):" in text
    assert text.index('(("T", 20),)') < text.index('(("T", 30),)')  # the order given
    plain = emit_python(speech_recipe())
    assert "_jit_set_profiling_executor" not in plain


def test_compile_recipe_saves_and_loads_its_artifact_beside_itself() -> None:
    recipe = speech_recipe(mode="compile", compile_options={"dynamic": True}, cache_artifact=True)
    text = emit_python(recipe)
    assert "torch.compile(model, dynamic=True)" in text
    assert "load_cache_artifacts" in text and "save_cache_artifacts" in text
    # Named after the file itself, so a copy of the file finds its own artifact.
    assert 'os.path.splitext(os.path.abspath(__file__))[0] + ".cache.bin"' in text
    assert artifact_path_for("/x/mine.py") == "/x/mine.cache.bin"


def test_summary_and_json_round_trip() -> None:
    recipe = speech_recipe(profiling_executor=False)
    assert recipe.summary() == "profiling executor off; T=20×3 T=30×2"
    assert Recipe.from_json(recipe.to_json()) == recipe
    assert recipe.warmup_calls == 5


def test_cpp_recipe_sets_the_executor_and_makes_the_declared_shapes() -> None:
    recipe = speech_recipe(profiling_executor=False, num_profiled_runs=1, freeze=True)
    text = emit_cpp(recipe.to_json(), "model.pt")
    assert "torch::jit::getExecutorMode() = false;" in text  # _jit_set_profiling_executor
    assert "torch::jit::getNumProfiledRuns() = 1;" in text
    assert "module = torch::jit::freeze(module);" in text
    normal = "gen, torch::TensorOptions().dtype(torch::kFloat))"  # drawn in float32
    assert (
        f"at::randn({{1, 20, 40}}, {normal}" in text
        and f"at::randn({{1, 30, 40}}, {normal}" in text
    )
    assert "for (int i = 0; i < 3; ++i) module.forward(make_inputs(0));" in text
    with pytest.raises(CppRecipeError, match=r"torch\.compile"):
        emit_cpp(speech_recipe(mode="compile").to_json())
    with pytest.raises(CppRecipeError, match="input specs"):
        emit_cpp(speech_recipe(specs=[]).to_json())


def test_mark_dynamic_covers_the_declared_range_and_leaves_size_one_alone() -> None:
    from warmscope.core.output.recipe import dynamic_marks

    specs = [
        {"dtype": "int64", "shape": [1, "L"], "name": "mask"},
        {"dtype": "int64", "shape": ["B", "L"]},
    ]
    shapes = [{"B": 1, "L": 8}, {"B": 2, "L": 32}]
    # The positional input comes first, as the call takes it; B starts at 1: no mark.
    assert dynamic_marks(specs, shapes) == [
        {"input": 0, "axis": 1, "min": 8, "max": 32},
        {"input": 1, "axis": 1, "min": 8, "max": 32},
    ]


def test_a_gpu_recipe_sets_cudnn_autotuning_and_names_module_loading_as_the_servers() -> None:
    text = emit_python(
        speech_recipe(device="cuda", cudnn_benchmark=True, cuda_module_loading="EAGER")
    )
    assert "torch.backends.cudnn.benchmark = True" in text
    assert text.index("cudnn.benchmark") < text.index("for _ in range(3):")  # before the calls
    header, body = split_header(text)
    # Read by CUDA as it starts: the server's to set, named in the header, checked in prepare.
    assert "os.environ['CUDA_MODULE_LOADING'] = 'EAGER'" in header
    assert 'os.environ.get("CUDA_MODULE_LOADING") != CUDA_MODULE_LOADING' in body
    assert "warnings.warn(" in body
    assert "torch.cuda.synchronize()" in text
    cpu = emit_python(speech_recipe())
    assert "cudnn" not in cpu and "CUDA_MODULE_LOADING" not in cpu


def test_a_verified_candidate_that_slows_every_call_is_not_chosen_over_one_that_does_not() -> None:
    from warmscope.core.output.warmup_verdict import choose

    # What the H100 warm-up of sample:cnn (cudnn_benchmark on, three shapes) found.
    def candidate(label: str, startup_ms: float, break_even: str) -> dict[str, object]:
        return {
            "label": label,
            "verdict": "verified",
            "startup_ms": {"median": startup_ms},
            "break_even": break_even,
            "worst": {"key": "S=96", "ratio": 1.0},
        }

    calls = candidate("warm-up calls", 872.0, "")
    off = candidate(
        "cuDNN autotuning off",
        354.0,
        "steady p50 183 µs above the baseline's: past ~3,526 calls the slowdown costs more "
        "than the baseline's warm-up (646 ms)",
    )
    assert choose([calls, off]) is calls
    off_only = choose([off, {**calls, "verdict": "not verified"}])
    assert off_only is off  # the only verified one, its cost said in its break-even


@pytest.mark.parametrize(
    ("mode", "given", "says", "does", "never"),
    [
        ("trace", "module", "this recipe traces it", "torch.jit.trace(", "torch.jit.script"),
        ("script", "module", "this recipe scripts it", "torch.jit.script(", "torch.jit.trace"),
        ("compile", "module", "this recipe compiles it", "torch.compile(", "torch.jit."),
        ("eager", "module", "the eager module", "model.eval()", "torch.jit."),
        ("script", "archive", "torch.jit.load(PATH)", "torch.jit.script(", "torch.jit.trace"),
        ("eager", "export", "torch.export.load(PATH).module()", "model.eval()", "torch.jit."),
    ],
)
def test_a_recipe_follows_the_mode_it_was_derived_in_and_says_what_prepare_takes(
    mode: str, given: str, says: str, does: str, never: str
) -> None:
    recipe = speech_recipe(mode=mode, given=given, trace_strict=False)
    text = emit_python(recipe, target="m.py:f")
    header = " ".join(text.split('"""')[1].split())
    assert says in takes(recipe) and f"model: {takes(recipe)}." in header
    assert does in text and never not in text
    if mode == "trace":  # with the first warm-up inputs, under the runs' grad mode
        body = text[text.index("def prepare") :]
        assert body.index("make_inputs(dims)") < body.index("torch.jit.trace(")
        assert '(("T", 20),)' in body[body.index("if not isinstance") :][:200]
        assert "strict=False" in body and "check_trace=False" in body
