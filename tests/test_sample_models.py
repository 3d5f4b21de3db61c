"""The bundled sample models: every catalog entry has a factory, and every model runs.

The catalog checks parse the model files with ``ast`` and need no torch; only
``test_every_sample_runs_eager_and_scripted`` imports it (and is skipped without it).
"""

from __future__ import annotations

import ast
import importlib.util
from types import ModuleType
from typing import Any

import pytest

from warmscope.sample_models import SAMPLES, SampleModel


def _top_level_functions(sample: SampleModel) -> set[str]:
    tree = ast.parse(sample.path.read_text(encoding="utf-8"), filename=str(sample.path))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_module_exists_and_defines_factory(name: str) -> None:
    sample = SAMPLES[name]
    assert sample.name == name
    assert sample.path.is_file(), f"{name}: missing {sample.path}"
    assert sample.factory in _top_level_functions(sample), (
        f"{name}: {sample.path.name} defines no top-level {sample.factory}()"
    )
    assert sample.inputs, f"{name}: no input specs"


def _load(sample: SampleModel) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_sample_{sample.module}", sample.path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _make_input(torch: Any, spec: str) -> Any:
    """``1x300x40`` -> float32 randn of that shape; ``int64[1,64]`` -> int64 zeros."""
    if spec.startswith("int64[") and spec.endswith("]"):
        shape = [int(dim) for dim in spec[len("int64[") : -1].split(",")]
        return torch.zeros(shape, dtype=torch.int64)
    return torch.randn([int(dim) for dim in spec.split("x")])


def _assert_finite_tensors(torch: Any, output: Any, what: str) -> None:
    outputs = output if isinstance(output, tuple) else (output,)
    assert outputs, f"{what}: empty output"
    for tensor in outputs:
        assert isinstance(tensor, torch.Tensor), f"{what}: got {type(tensor).__name__}"
        assert torch.isfinite(tensor).all(), f"{what}: non-finite values"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_every_sample_runs_eager_and_scripted() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    for name, sample in SAMPLES.items():
        model = getattr(_load(sample), sample.factory)()
        assert isinstance(model, torch.nn.Module), name
        assert not model.training, f"{name}: make_model() must return an eval() model"
        inputs = [_make_input(torch, spec) for spec in sample.inputs]
        with torch.no_grad():
            _assert_finite_tensors(torch, model(*inputs), f"{name} eager")
            scripted = torch.jit.script(model)
            _assert_finite_tensors(torch, scripted(*inputs), f"{name} script")
