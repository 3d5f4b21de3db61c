"""The inputs an AOTInductor package records in its compiled wrapper's input checks, read
back: every size fixed gives a tensor; a dynamic size (bounded or not) gives none.

The C++ is what torch 2.13's ``cpp_wrapper_cpu`` writes for each input (its templates)."""

from __future__ import annotations

import torch

from warmscope.core.child.pt2 import checked_inputs


def check_input(idx: int, dtype: str, sizes: list[int | str], strides: list[int | str]) -> str:
    name = f"arg{idx}_1"
    lines = [
        f"AOTI_NOINLINE static void check_input_{idx}(",
        "    AtenTensorHandle* input_handles",
        ") {",
        f"    int32_t {name}_expected_dtype = aoti_torch_dtype_{dtype}();",
        f"    auto {name}_size = {name}.sizes();",
    ]
    for at, d in enumerate(sizes):
        if isinstance(d, int):
            lines += [
                f"    if ({d} != {name}_size[{at}]) {{",
                f'        ss << "input_handles[{idx}]: unmatched dim value at {at}, "',
                f'           << "expected: {d}, " << "but got: " << {name}_size[{at}]',
                "    }",
            ]
        elif d == "bounded":
            lines += [
                f'        ss << "input_handles[{idx}]: dim value is too small at {at}, "',
                '           << "expected it to be >= 2, " << "but got: "',
            ]
    for at, s in enumerate(strides):
        if isinstance(s, int):
            lines.append(f'        ss << "input_handles[{idx}]: unmatched stride value at {at}, "')
    return "\n".join([*lines, "}", ""])


def test_fixed_sizes_give_the_tensors_the_package_checks_for() -> None:
    code = check_input(0, "float32", [2, 8], [8, 1]) + check_input(1, "int64", [2], [1])
    tensors = checked_inputs(torch, code)
    assert tensors is not None
    assert [(t.dtype, list(t.shape)) for t in tensors] == [
        (torch.float32, [2, 8]),
        (torch.int64, [2]),
    ]


def test_a_dynamic_size_gives_no_inputs_checked_or_not() -> None:
    bounded = check_input(0, "float32", [2, "bounded", 8], ["s", 8, 1])
    assert checked_inputs(torch, bounded) is None
    unchecked = check_input(0, "float32", [2, "free", 8], ["s", 8, 1])
    assert checked_inputs(torch, unchecked) is None  # the rank is still known from strides
    assert checked_inputs(torch, "no checks here") is None
