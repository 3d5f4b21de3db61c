"""The recipe's inputs and the agent's come from one maker (``core/child/inputs.py``): the same
seed and specs give identical tensors in the measured run and in the emitted file, whatever
torch's default dtype, for half, bfloat16 and integer inputs alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from warmscope.core.output.recipe import Call, Recipe, emit_python

SPECS = [
    {"dtype": "float32", "shape": [2, "T", 3]},
    {"dtype": "float16", "shape": [2, "T"], "gen": "uniform", "args": [-1.0, 1.0]},
    {"dtype": "bfloat16", "shape": ["T"], "name": "scale"},
    {"dtype": "int64", "shape": [2, "T"], "gen": "randint", "args": [0, 1000], "name": "ids"},
    {"dtype": "int64", "shape": [2, "T"], "name": "mask"},
]

CHECK = r"""
import importlib.util, sys, torch
from warmscope.core.child.inputs import build_inputs

torch.set_default_dtype(torch.float64)  # not torch's default: the maker must not depend on it
spec = importlib.util.spec_from_file_location("recipe", sys.argv[1])
recipe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recipe)
for dims in recipe.SHAPES:
    theirs = recipe.make_inputs(dims)
    ours = build_inputs(torch, recipe.SPECS, "cpu", None, dims, recipe.SEED)
    tensors = list(theirs[0]) + list(theirs[1].values())
    assert [t.dtype for t in tensors] == [
        torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int64
    ], [t.dtype for t in tensors]
    assert len(theirs[0]) == len(ours[0]) and theirs[1].keys() == ours[1].keys()
    for a, b in zip(list(theirs[0]) + list(theirs[1].values()), list(ours[0]) + list(ours[1].values())):
        assert a.dtype == b.dtype and torch.equal(a, b), (a, b)
    assert theirs[0][0].abs().sum() > 0 and theirs[1]["ids"].max() > 0  # seeded values, not zeros
print("same")
"""


def test_the_recipe_file_makes_the_agents_tensors(tmp_path: Path) -> None:
    recipe = Recipe(
        label="warm-up calls",
        mode="eager",
        specs=SPECS,
        shapes=[{"T": 5}, {"T": 7}],
        calls=[Call({"T": 5}, 1), Call({"T": 7}, 1)],
        seed=3,
    )
    path = tmp_path / "recipe.py"
    path.write_text(emit_python(recipe))
    out = subprocess.run(
        [sys.executable, "-c", CHECK, str(path)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and out.stdout.strip() == "same", out.stderr[-2000:]
