"""One rule for input tensors (``core/child/input_spec.py``), every maker held to it: the same
specs and seed give the same tensors, byte for byte and dtype for dtype, from the Python
maker, the Python agent, a Python recipe, the C++ agent and a C++ recipe, and from the
makers of the inputs an AOTInductor package's checks describe.

The agents' and recipes' tensors are read back from a TorchScript archive that prints every
input it is given (its dtype, shape and bytes): real children of both runtimes, the C++ one
the suite's one build of the agent (``cpp_agent``); the C++ recipe is built once, here."""

from __future__ import annotations

import ast
import importlib.util
import re
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.targets import input_dump
from tests.test_aoti_inputs import check_input
from warmscope.core.child import input_spec
from warmscope.core.child.inputs import build_inputs
from warmscope.core.child.pt2 import checked_inputs
from warmscope.core.data import targets
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.output import inputs_cpp
from warmscope.core.output.recipe import Call, Recipe, emit_python
from warmscope.core.output.recipe_cpp import emit_cpp
from warmscope.core.run.session import RunSession

INPUTS = [
    "float32[2,T]",
    "float16[T]:uniform(-2,2)",
    "bfloat16[3,T]",
    "int64[2,T]:randint(0,1000)",
    "bool[T]:randint(0,2)",
    "int64[4]",
    "bool[2,2]",
    "float64[T,2]",
    "int32[3]:fill(7)",
    "uint8[5]:randint(0,256)",
]
"""Every dtype class and fill: defaults (normal, zeros), draws before and after fills that
draw nothing, a fill in float32 converted to half, integers and bool from ``randint``."""
SPECS = [targets.parse_input(text).to_json() for text in INPUTS]
DIMS = ["T=3,5"]
SHAPES = [{"T": 3}, {"T": 5}]
SEEDS = (7, 2**62 + 12345)
"""Two seeds; the second past 2^53, where a seed read as a double would lose its last digits."""
PRINTED = re.compile(r"ws-input (\d+) (\d+) (\w+) \[([\d, ]*)\] \[([-\d, ]*)\] \[([-\d, ]*)\]")

Described = list[tuple[str, list[int], list[int], list[int]]]


def described(tensors: list[Any]) -> Described:
    """Each tensor as the archive prints it: dtype, shape, exact values (``input_dump.codes``)."""
    return [(input_dump.dtype_name(t), list(t.shape), *input_dump.codes(t)) for t in tensors]


def expected(seed: int, dims: dict[str, int]) -> Described:
    args, kwargs = build_inputs(torch, SPECS, "cpu", None, dims, seed)
    assert not kwargs
    return described(args)


def calls_printed(data: RunData) -> dict[int, Described]:
    """What the archive printed, by its call count (warm-up calls first, then the loop's)."""
    calls: dict[int, Described] = {}
    for event in data.events:
        for line in (event.title + "\n" + event.text).splitlines():
            m = PRINTED.search(line)
            if m is None:
                continue
            call, k, dtype, *lists = m.groups()
            shape, values, exponents = (ast.literal_eval(f"[{x}]") for x in lists)
            entry = (dtype, shape, values, exponents)
            got = calls.setdefault(int(call), [])
            if len(got) == int(k):
                got.append(entry)
    return calls


@pytest.fixture(scope="module")
def dump_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("maker") / "dump.pt"
    input_dump.save(str(path))
    return path


def recipe_for(seed: int) -> Recipe:
    return Recipe(
        label="warm-up calls",
        mode="script",
        specs=SPECS,
        shapes=SHAPES,
        calls=[Call(dims, 1) for dims in SHAPES],
        seed=seed,
        given="archive",
    )


def run(target: Path, tmp_path: Path, runtime: str, seed: int, recipe: Path | None) -> RunData:
    settings = RunSettings(
        target=str(target),
        inputs=list(INPUTS),
        dims=list(DIMS),
        seed=seed,
        iters=len(SHAPES),
        jit_log="",
        recipe=str(recipe) if recipe else None,
    )
    for knob in (f"runtime={runtime}", "intra_op_threads=1", "mode=script"):
        settings.set(knob)
    session = RunSession(settings, record_path=tmp_path / f"{runtime}-{time.time_ns()}.jsonl")
    session.start()
    assert session.wait(300)
    assert session.data.status == "ok", session.data.status_detail
    return session.data


def test_the_python_maker_follows_the_rule() -> None:
    """The rule's table, read: floating dtypes a float32 normal converted, others zeros; one
    generator for the call, drawn in the specs' order (a spec that draws nothing between two
    that do leaves it where it was)."""
    specs = [
        {"dtype": "bfloat16", "shape": [4]},
        {"dtype": "int64", "shape": [3]},
        {"dtype": "float64", "shape": [2]},
    ]
    args, _ = build_inputs(torch, specs, "cpu", None, None, 5)
    generator = torch.Generator().manual_seed(5)
    first = torch.randn([4], generator=generator, dtype=torch.float32).to(torch.bfloat16)
    second = torch.randn([2], generator=generator, dtype=torch.float32).to(torch.float64)
    assert torch.equal(args[0], first) and args[0].dtype == torch.bfloat16
    assert torch.equal(args[1], torch.zeros(3, dtype=torch.int64))
    assert torch.equal(args[2], second) and args[2].dtype == torch.float64
    assert {d.name for d in input_spec.DTYPES} == set(targets.DTYPES)
    assert {f.name: f.args for f in input_spec.FILLS} == targets.GENERATORS
    assert {f.name for f in input_spec.FILLS if f.floating_only} == set(targets.FLOAT_ONLY)


def test_a_packages_checked_inputs_are_the_makers() -> None:
    """An AOTInductor package's checks (dtype and sizes of each input) give the tensors specs
    of those dtypes and sizes give, from the rule's default seed: one generator for the call,
    not one per tensor (two float inputs of one shape were equal)."""
    code = (
        check_input(0, "float32", [2, 8], [8, 1])
        + check_input(1, "float32", [2, 8], [8, 1])
        + check_input(2, "int64", [2], [1])
        + check_input(3, "bfloat16", [3], [1])
    )
    tensors = checked_inputs(torch, code)
    assert tensors is not None
    specs = [
        {"dtype": "float32", "shape": [2, 8]},
        {"dtype": "float32", "shape": [2, 8]},
        {"dtype": "int64", "shape": [2]},
        {"dtype": "bfloat16", "shape": [3]},
    ]
    want, _ = build_inputs(torch, specs, "cpu", None, None, input_spec.DEFAULT_SEED)
    assert described(tensors) == described(want)
    assert not torch.equal(tensors[0], tensors[1])


def test_the_python_recipe_makes_the_makers_tensors(tmp_path: Path) -> None:
    """The Python recipe file carries the maker and the rule's table: in this process, under
    another default dtype, its ``make_inputs`` gives the maker's tensors for each seed."""
    for seed in SEEDS:
        path = tmp_path / f"recipe{seed}.py"
        path.write_text(emit_python(recipe_for(seed)))
        spec = importlib.util.spec_from_file_location(f"recipe{seed}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        was = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            for dims in SHAPES:
                args, _ = module.make_inputs(dims)
                assert described(args) == expected(seed, dims), (seed, dims)
        finally:
            torch.set_default_dtype(was)


def test_the_c_agents_table_is_the_rules() -> None:
    """The C++ agent's copy of the rule is the one ``inputs_cpp`` generates from it."""
    source = inputs_cpp.SOURCE.read_text()
    assert inputs_cpp.with_agent_table(source) == source, (
        "cpp_agent.cpp's input table is stale: python -m warmscope.core.output.inputs_cpp"
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_the_python_agent_and_its_recipe_make_the_makers_tensors(
    seed: int, dump_archive: Path, tmp_path: Path
) -> None:
    """A Python child's inputs for each shape, and its Python recipe's warm-up inputs."""
    recipe = tmp_path / "recipe.py"
    recipe.write_text(emit_python(recipe_for(seed)))
    calls = calls_printed(run(dump_archive, tmp_path, "python", seed, recipe))
    # The recipe's warm-up calls (one per shape, in order), then the loop's (one per shape).
    for call, dims in enumerate(SHAPES + SHAPES):
        assert calls.get(call) == expected(seed, dims), (seed, call, dims)


def test_the_c_agent_and_a_c_recipe_make_the_makers_tensors(
    cpp_agent: Path, dump_archive: Path, tmp_path: Path
) -> None:
    """The C++ child's inputs for each shape and seed; and, for the larger seed, a C++
    recipe's warm-up inputs (the recipe built once, into the library the agent runs)."""
    for seed in SEEDS:
        recipe = None
        if seed == SEEDS[-1]:
            recipe = tmp_path / "recipe.cpp"
            recipe.write_text(emit_cpp(recipe_for(seed).to_json()))
        calls = calls_printed(run(dump_archive, tmp_path, "cpp", seed, recipe))
        served = SHAPES + SHAPES if recipe else SHAPES
        for call, dims in enumerate(served):
            assert calls.get(call) == expected(seed, dims), (seed, call, dims)
