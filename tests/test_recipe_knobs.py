"""Every knob given to a warm-up is in the recipe handed over: applied by its ``prepare`` (read
back from torch in a plain process), or named in its header as the server's line (and checked
by ``prepare``); the C++ file sets every knob libtorch has. The whole knob table is walked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.conftest import TARGETS, warmscope
from warmscope.core.child.knobs import KNOBS, MEASURE, SERVER, STATEMENT, STEP, Knob
from warmscope.core.data.record import read_run
from warmscope.core.output.recipe import Recipe, cpp_literal, split_header
from warmscope.core.output.recipe_cpp import CppRecipeError, build_command, emit_cpp
from warmscope.core.output.warmup_verdict import OUTCOMES
from warmscope.core.run import cpp_build

MODELS = TARGETS / "warmup_models.py"
CARRIED = [k for k in KNOBS if k.recipe.carry in (STATEMENT, SERVER)]

READ_BACK = """
import importlib.util, json, os, sys, warnings
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def read(spec):
    how, _, path = spec.partition(":")
    if how == "env":
        return os.environ.get(path)
    head, _, last = path.rpartition(".")
    owner = torch
    for part in head.split(".")[1:]:
        owner = getattr(owner, part)
    if how == "attr":
        return getattr(owner, last)
    if how == "call":
        return getattr(owner, last)()
    setter = getattr(owner, last)  # swap: a setter that returns what it replaces
    old = setter(True if "profiling" in last else [("STATIC", 2)])
    setter(old)
    return old

recipe = load(sys.argv[1], "recipe")
reads = json.loads(sys.argv[3])
if sys.argv[4] == "server":  # as a server does at start, before the model loads
    for name in dir(recipe):
        if name.endswith("_LINE"):
            exec(getattr(recipe, name), {"torch": torch, "os": os})
model = getattr(load(sys.argv[2], "models"), "conv")()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model = recipe.prepare(model)
print(json.dumps({
    "values": {name: read(spec) for name, spec in reads.items()},
    "warnings": [str(w.message) for w in caught if "verified with" in str(w.message)],
    "scripted": isinstance(model, torch.jit.ScriptModule),
}, default=list))
"""


def different_value(k: Knob, fresh: dict[str, Any]) -> Any:
    """A value of ``k`` other than the one a fresh torch has (``fresh``): what the recipe must
    set."""
    if k.name == "fusion_strategy":
        return "STATIC,3;DYNAMIC,5"
    if k.name in ("intra_op_threads", "inter_op_threads"):
        return 1
    if k.name == "num_profiled_runs":
        return 3
    if k.name == "cpu_fusion" and not torch._C._llvm_enabled():
        return False  # on needs LLVM (refused before any process): off, set all the same
    current = fresh[k.name]
    if k.type == "bool":
        return not current
    if k.name == "quantized_engine":
        return next(e for e in torch.backends.quantized.supported_engines if e != current)
    return next(c for c in k.choices if c != current)


def fresh_values() -> dict[str, Any]:
    """What a fresh process reads for each carried knob (one child, so this test's own process
    stays as it is)."""
    reads = {k.name: k.read for k in CARRIED}
    probe = READ_BACK.split("recipe = load")[0] + (
        f"print(json.dumps({{n: read(r) for n, r in {reads!r}.items()}}, default=list))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout)


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=list))


def test_every_knob_says_how_a_recipe_carries_it_and_knobs_lists_it() -> None:
    out = warmscope("knobs")
    assert out.code == 0
    for k in KNOBS:
        assert k.recipe.carry in (STATEMENT, SERVER, STEP, MEASURE), k.name
        if k.recipe.carry in (STATEMENT, SERVER):
            assert k.read, f"{k.name}: no read-back declared"
        if k.recipe.carry == SERVER:
            assert k.recipe.server and k.recipe.server_cpp, k.name
        if k.recipe.carry == STATEMENT:
            assert k.recipe.cpp or k.recipe.cpp_refusal, k.name
        block = out.stdout.split(f"\n  {k.name} ", 1)[1].split("\n  ", 3)[:3]
        assert "recipe:" in block[2], (k.name, block)
        assert ("Python only" in block[2]) == bool(k.recipe.cpp_refusal), (k.name, block)


@pytest.fixture(scope="module")
def every_knob(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real warm-up with every carried knob set away from torch's own value."""
    folder = tmp_path_factory.mktemp("every_knob")
    fresh = fresh_values()
    values = {k.name: different_value(k, fresh) for k in CARRIED}
    sets = [f"{name}={str(v).lower() if isinstance(v, bool) else v}" for name, v in values.items()]
    sets = [s.replace("=true", "=on").replace("=false", "=off") for s in sets]
    emitted = folder / "recipe.py"
    r = warmscope(
        "warmup", f"{MODELS}:conv", "--input", "1x8x16", "--mode", "script",
        *[a for s in sets for a in ("--set", s)],
        "--repeat", "1", "--iters", "6", "--emit", str(emitted), "--record",
        str(folder / "w"), "--quiet", json_path=folder / "warmup.json", timeout=300,
    )  # fmt: skip
    assert r.code in (0, 3), r.stderr
    assert r.doc is not None and r.doc["verdict"] in OUTCOMES
    return {"values": values, "emitted": emitted, "doc": r.doc, "folder": folder}


def replay(recipe: Path, server: bool) -> dict[str, Any]:
    reads = {k.name: k.read for k in CARRIED}
    env = {k: v for k, v in os.environ.items() if k != "CUDA_MODULE_LOADING"}
    proc = subprocess.run(
        [sys.executable, "-I", "-c", READ_BACK, str(recipe), str(MODELS), json.dumps(reads),
         "server" if server else "plain"],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_emitted_recipe_applies_every_knob_the_warm_up_ran_with(every_knob: dict) -> None:
    values = every_knob["values"]
    got = replay(every_knob["emitted"], server=True)
    for k in CARRIED:
        assert got["values"][k.name] == as_json(k.torch_value(values[k.name])), k.name
    assert got["scripted"]  # the step: scripted, as the runs were
    assert got["warnings"] == []  # the server set what the header names


def test_what_only_the_server_can_set_is_named_in_the_header_and_checked(
    every_knob: dict,
) -> None:
    header, _ = split_header(every_knob["emitted"].read_text())
    server = [k for k in CARRIED if k.recipe.carry == SERVER]
    assert server
    lines = {
        k.name: k.recipe.server.format(value=repr(k.torch_value(every_knob["values"][k.name])))
        for k in server
    }
    for name, line in lines.items():
        assert line in header, (name, header)
    got = replay(every_knob["emitted"], server=False)  # a server that did not set them
    assert sorted(got["warnings"]) == sorted(
        f"verified with {ln} at start" for ln in lines.values()
    )


def test_the_verified_processes_left_every_carried_knob_to_the_recipe(every_knob: dict) -> None:
    """What was verified is the file: its processes were not given the knobs it sets."""
    doc = every_knob["doc"]
    records = [p["record"] for c in doc["candidates"] for p in c.get("processes", [])]
    assert records
    for record in records:
        knobs = read_run(Path(record)).settings.knobs
        for k in CARRIED:
            if k.recipe.carry == STATEMENT:
                assert knobs.get(k.name) is None, (k.name, record)
            else:  # the server's: set for the process, as a server sets it
                assert knobs.get(k.name) == every_knob["values"][k.name], (k.name, record)


def test_the_cpp_recipe_sets_every_knob_libtorch_has_and_refuses_the_rest(
    every_knob: dict,
) -> None:
    chosen = next(c for c in every_knob["doc"]["candidates"])
    recipe = Recipe.from_json(chosen["recipe"])
    python_only = [k for k in CARRIED if k.recipe.carry == STATEMENT and not k.recipe.cpp]
    for k in python_only:
        with pytest.raises(CppRecipeError, match=k.name):
            emit_cpp(recipe.to_json())
        del recipe.settings[k.name]
    text = emit_cpp(recipe.to_json(), "m.pt")
    for k in CARRIED:
        if k.name not in recipe.settings:
            continue
        if k.recipe.carry == STATEMENT:
            stmt = k.recipe.cpp.format(value=cpp_literal(k, recipe.settings[k.name]))
            assert f"  {stmt}  // {k.name}" in text, k.name
        else:
            assert k.recipe.server_cpp.split("(")[0] in text, k.name
    assert "torch::jit::setGraphExecutorOptimize(" in text  # the guard the first user needed


def test_the_cpp_recipe_with_every_knob_libtorch_has_compiles(every_knob: dict) -> None:
    """Each knob's C++ statement, as declared, is C++ that libtorch takes (g++, syntax only:
    the whole file, every statement and the server's lines in its main)."""
    try:
        cxx = cpp_build.compiler()
    except cpp_build.BuildError as exc:
        pytest.skip(str(exc))
    recipe = Recipe.from_json(next(iter(every_knob["doc"]["candidates"]))["recipe"])
    for k in CARRIED:
        if k.recipe.carry == STATEMENT and not k.recipe.cpp:
            del recipe.settings[k.name]
    assert len(recipe.settings) >= 9
    source = every_knob["folder"] / "every_knob.cpp"
    source.write_text(emit_cpp(recipe.to_json(), "m.pt"))
    torch_found = cpp_build.locate_torch(None)
    line = build_command(str(source), "/dev/null", str(torch_found.root), cxx11_abi=True)
    line = [cxx if part == "g++" else part for part in line] + ["-fsyntax-only"]
    done = subprocess.run(line, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_cpp_agent_applies_every_knob_libtorch_has_and_no_other() -> None:
    """A knob with a C++ statement is applied by the C++ agent too (its ``apply`` line in
    ``cpp_agent.cpp``); without one, the C++ runtime would take ``--set`` and ignore it."""
    import re

    from warmscope.core.child import knobs as knobs_module

    source = (Path(knobs_module.__file__).parent / "cpp_agent.cpp").read_text()
    applied = set(re.findall(r'^\s*apply\("(\w+)"', source, flags=re.MULTILINE))
    # A knob set in the environment (``env:``) is the process's before it starts, either runtime.
    libtorch = {
        k.name
        for k in KNOBS
        if (k.recipe.cpp or k.recipe.server_cpp) and not k.apply.startswith("env:")
    }
    assert libtorch - applied == set(), "knobs the C++ agent does not apply"
    assert applied - {k.name for k in KNOBS} == set(), "applied names that are no knob"
