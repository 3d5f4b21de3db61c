"""One call's input tensors from their specs, a shape's dimensions and a seed.

The one maker of inputs: the agent builds each shape's inputs with it, and a warm-up recipe's
file carries this very function (``output/recipe`` copies its source), so the same seed and
specs give the same tensors in a measured run and in the server that runs the recipe. Torch
is passed in; nothing else is used (the recipe file imports only torch).
"""

from __future__ import annotations

from typing import Any


def build_inputs(
    torch: Any,
    specs: list[dict[str, Any]],
    device: str,
    dtype: str | None,
    dims: dict[str, int] | None = None,
    seed: int = 0,
) -> tuple[list[Any], dict[str, Any]]:
    """One call's tensors. Defaults: integers zeros (valid indices for embeddings), floats a
    seeded normal; ``gen`` chooses (``ones``, ``fill``, ``randint``, ``normal``, ``uniform``)."""
    generator = torch.Generator().manual_seed(seed)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for spec in specs:
        tdtype = getattr(torch, spec["dtype"])
        shape = [d if isinstance(d, int) else (dims or {})[d] for d in spec["shape"]]
        gen = spec.get("gen") or ("normal" if tdtype.is_floating_point else "zeros")
        a = spec.get("args") or []
        if gen == "zeros":
            tensor = torch.zeros(shape, dtype=tdtype)
        elif gen == "ones":
            tensor = torch.ones(shape, dtype=tdtype)
        elif gen == "fill":
            tensor = torch.full(shape, a[0], dtype=tdtype)
        elif gen == "randint":
            tensor = torch.randint(int(a[0]), int(a[1]), shape, generator=generator, dtype=tdtype)
        elif gen == "uniform":
            tensor = torch.empty(shape, dtype=torch.float32).uniform_(
                a[0], a[1], generator=generator
            )
        else:
            tensor = torch.randn(shape, generator=generator, dtype=torch.float32)
        if tensor.dtype != tdtype:
            tensor = tensor.to(tdtype)
        if dtype and tdtype.is_floating_point:
            tensor = tensor.to(getattr(torch, dtype))
        tensor = tensor.to(device)
        if spec.get("name"):
            kwargs[spec["name"]] = tensor
        else:
            args.append(tensor)
    return args, kwargs
