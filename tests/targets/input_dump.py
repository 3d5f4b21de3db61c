"""An archive that prints every input it is given: its dtype, shape and exact values, with the
count of its calls (``tests/test_one_input_maker.py`` reads them back from either runtime).

Exact values: TorchScript has no view as bytes and prints floats rounded, so a float is
printed as the integers ``frexp`` splits it into (its mantissa times 2^53, its exponent), and
anything else as an integer."""

from __future__ import annotations

import torch


def dtype_name(t: torch.Tensor) -> str:
    dtype = t.dtype
    if dtype == torch.float32:
        return "float32"
    if dtype == torch.float64:
        return "float64"
    if dtype == torch.float16:
        return "float16"
    if dtype == torch.bfloat16:
        return "bfloat16"
    if dtype == torch.int64:
        return "int64"
    if dtype == torch.int32:
        return "int32"
    if dtype == torch.int16:
        return "int16"
    if dtype == torch.int8:
        return "int8"
    if dtype == torch.uint8:
        return "uint8"
    if dtype == torch.bool:
        return "bool"
    return "other"


def codes(t: torch.Tensor) -> tuple[list[int], list[int]]:
    """``t``'s values as integers: a float's mantissa times 2^53 and its exponent (exact for
    every float dtype up to float64), any other value as it is."""
    flat = t.contiguous().reshape(-1)
    if t.is_floating_point():
        mantissa, exponent = torch.frexp(flat.to(torch.float64))
        whole = (mantissa * 9007199254740992.0).to(torch.int64)
        return (
            torch.jit.annotate(list[int], whole.tolist()),
            torch.jit.annotate(list[int], exponent.to(torch.int64).tolist()),
        )
    return torch.jit.annotate(list[int], flat.to(torch.int64).tolist()), []


class Dump(torch.nn.Module):
    """Ten positional inputs, each printed as ``ws-input CALL K DTYPE SHAPE VALUES EXPONENTS``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(
        self,
        a: torch.Tensor,
        b: torch.Tensor,
        c: torch.Tensor,
        d: torch.Tensor,
        e: torch.Tensor,
        f: torch.Tensor,
        g: torch.Tensor,
        h: torch.Tensor,
        i: torch.Tensor,
        j: torch.Tensor,
    ) -> torch.Tensor:
        for k, t in enumerate([a, b, c, d, e, f, g, h, i, j]):
            values, exponents = codes(t)
            print("ws-input", self.calls, k, dtype_name(t), t.shape, values, exponents)
        self.calls += 1
        return a


def save(path: str) -> None:
    torch.jit.save(torch.jit.script(Dump()), path)
