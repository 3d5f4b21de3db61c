"""A first call's cost is labelled from the profile's own names: guard evaluation (Dynamo's
cache lookup), compiling, the compiled graph's first run, weight packing, allocation, kernel
selection, lazy initialisation; no label from the way a row differs alone where its name says
more."""

from __future__ import annotations

import pytest

from warmscope.core.data.breakdown import OpDelta, cause_of, first_call_label


def row(name: str, kind: str = "slower") -> OpDelta:
    return OpDelta(name, 5.0, 0.5 if kind == "slower" else 0.0, 1, 1, kind)


@pytest.mark.parametrize(
    ("name", "kind", "cause"),
    [
        ("TorchDynamo Cache Lookup", "slower", "guard evaluation (Dynamo's cache lookup)"),
        ("Torch-Compiled Region: 0/0", "slower", "the compiled graph's first run"),
        ("## Call CompiledFxGraph f5xq ##", "only here", "the compiled graph's first run"),
        ("_compile.compile_inner (dynamo_timed)", "only here", "compiling (Dynamo's and Inductor's own phases)"),
        ("quantized::linear_prepack", "only here", "weight packing"),
        ("aten::empty_strided", "slower", "allocation"),
        ("aten::addmm", "slower", "kernel selection (its first call at this shape)"),
        ("aten::_convolution", "slower", "kernel selection (its first call at this shape)"),
        ("aten::copy_", "slower", "lazy initialisation"),
        ("aten::sin", "only here", "work only the first call does"),
    ],
)  # fmt: skip
def test_the_profiles_own_name_says_the_cause(name: str, kind: str, cause: str) -> None:
    assert cause_of(row(name, kind)) == cause


def test_a_compiled_calls_guard_evaluation_is_not_called_kernel_selection() -> None:
    # A torch.compile call profiled against a steady one: the cache lookup leads.
    slow = {
        "wall_ms": 9.0,
        "unaccounted_ms": 0.2,
        "ops": [{"name": "TorchDynamo Cache Lookup", "self_ms": 6.0}],
    }
    steady = {
        "wall_ms": 1.0,
        "unaccounted_ms": 0.2,
        "ops": [{"name": "TorchDynamo Cache Lookup", "self_ms": 0.05}],
    }
    label = str(first_call_label(slow, steady))
    assert label.endswith("— guard evaluation (Dynamo's cache lookup)"), label
    assert "kernel selection" not in label
