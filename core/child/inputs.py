"""One call's input tensors from their specs, a shape's dimensions and a seed.

The Python maker of inputs, following ``input_spec`` (its rule, read here as ``INPUT_TABLE``):
the agent builds each shape's inputs with it, and a warm-up recipe's file carries this very
function and the table (``output/recipe`` copies them), so the same seed and specs give the
same tensors in a measured run and in the server that runs the recipe. Torch is passed in;
nothing else is used (the recipe file imports only torch).
"""

from __future__ import annotations

from typing import Any

from .input_spec import TABLE as INPUT_TABLE


def build_inputs(
    torch: Any,
    specs: list[dict[str, Any]],
    device: str,
    dtype: str | None,
    dims: dict[str, int] | None = None,
    seed: int = 0,
) -> tuple[list[Any], dict[str, Any]]:
    """One call's tensors, made as ``INPUT_TABLE`` says: floats a seeded normal and anything
    else zeros unless ``gen`` chooses (``ones``, ``fill``, ``randint``, ``normal``,
    ``uniform``); one CPU generator seeded once for the call, drawn in the specs' order."""
    generator = torch.Generator().manual_seed(seed)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for spec in specs:
        name = spec["dtype"]
        tdtype = getattr(torch, name)
        floating = name in INPUT_TABLE["floating"]
        shape = [d if isinstance(d, int) else (dims or {})[d] for d in spec["shape"]]
        gen = spec.get("gen") or INPUT_TABLE["default_fill"]["floating" if floating else "other"]
        made = getattr(torch, INPUT_TABLE["drawn_as"].get(gen) or name)
        a = spec.get("args") or []
        if gen == "zeros":
            tensor = torch.zeros(shape, dtype=made)
        elif gen == "ones":
            tensor = torch.ones(shape, dtype=made)
        elif gen == "fill":
            tensor = torch.full(shape, a[0], dtype=made)
        elif gen == "randint":
            tensor = torch.randint(int(a[0]), int(a[1]), shape, generator=generator, dtype=made)
        elif gen == "uniform":
            tensor = torch.empty(shape, dtype=made).uniform_(a[0], a[1], generator=generator)
        elif gen == "normal":
            tensor = torch.randn(shape, generator=generator, dtype=made)
        else:
            raise ValueError(f"unknown input fill {gen!r}")
        if tensor.dtype != tdtype:
            tensor = tensor.to(tdtype)
        if dtype and floating:
            tensor = tensor.to(getattr(torch, dtype))
        tensor = tensor.to(device)
        if spec.get("name"):
            kwargs[spec["name"]] = tensor
        else:
            args.append(tensor)
    return args, kwargs
