"""A warm-up recipe for libtorch: the same settings and warm-up calls, as a C++ file.

Pure: text only. For TorchScript archives (``torch::jit::load``). The file defines
``prepare(module)`` and, unless ``WARMUP_NO_MAIN`` is defined, a ``main`` that loads the archive
named on its command line, prepares it, then serves every declared shape in reverse order and
prints each first call's time: the recipe and a check of it in one program.

Build against the libtorch a torch wheel ships (``build_command`` gives the line).
``warmscope warmup --runtime cpp`` verifies this very file: built without its ``main`` into a
library whose ``prepare`` the C++ agent runs as the ``recipe`` phase (``cpp_build``).
"""

from __future__ import annotations

from typing import Any

from warmscope.core.base.code_text import c_string, cpp_comment_text
from warmscope.core.child.input_spec import DEFAULT_SEED
from warmscope.core.child.knobs import KNOBS, STATEMENT
from warmscope.core.output.inputs_cpp import recipe_generator, recipe_tensor
from warmscope.core.output.recipe import Provenance, Recipe, cpp_literal, header_lines, server_lines


class CppRecipeError(ValueError):
    """A recipe that has no libtorch form (compile, keyword inputs, no input specs)."""


def emit_cpp(recipe: dict[str, Any], target: str = "", provenance: Provenance | None = None) -> str:
    """The recipe (``Recipe.to_json()``) as a C++ file; ``CppRecipeError`` where it has none.
    Every value from a path, record, model or warning is an escaped string literal
    (``c_string``) or escaped text in a comment (``comment_text``)."""
    if recipe["mode"] == "compile":
        raise CppRecipeError("a torch.compile recipe has no libtorch form")
    specs = recipe["specs"]
    if not specs:
        raise CppRecipeError("libtorch needs the input specs (--input) to make warm-up inputs")
    if any(s.get("name") for s in specs):
        raise CppRecipeError("libtorch's forward takes positional inputs only (no NAME=)")
    if recipe.get("trace_strict") is not None and recipe["mode"] == "trace":
        raise CppRecipeError("torch.jit.trace's strict is set from Python only")
    model = Recipe.from_json(recipe)
    for k in KNOBS:
        carried = model.settings.get(k.name) is not None and k.recipe.carry == STATEMENT
        if carried and k.recipe.cpp is None:
            raise CppRecipeError(f"{k.name} is {k.recipe.cpp_refusal}'s, set from Python only")
    shapes = model.shapes or [{}]
    return "\n".join(
        [
            *_head(model, target, provenance),
            *_make_inputs(recipe, specs, shapes),
            *_prepare(model, recipe, shapes),
            *_main(recipe, server_lines(model, cpp=True)),
        ]
    )


def _grad_guard(recipe: dict[str, Any]) -> str | None:
    """The guard a recipe's calls run under (none where grad mode is enabled)."""
    if recipe.get("grad_mode") == "enabled":
        return None
    if recipe.get("grad_mode") == "inference_mode":
        return "c10::InferenceMode guard;"
    return "torch::NoGradGuard guard;"


def _head(recipe: Recipe, target: str, provenance: Provenance | None) -> list[str]:
    """What the file is (the Python file's header as ``//`` lines), and its includes."""
    # Each line escaped already (``comment_text``); ``??`` too, for C++.
    out = [
        f"// {line}".rstrip().replace("??", "?\\x3f")
        for line in header_lines(recipe, provenance, target)
    ]
    out[0] = out[0].replace("// Warm-up recipe:", "// Warm-up recipe for libtorch:", 1)
    server = server_lines(recipe, cpp=True)
    if server:
        out.append("// In C++, at the start of main:")
        out.extend(f"//     {cpp_comment_text(line)}" for line in server)
    out.extend(
        [
            "#include <ATen/CPUGeneratorImpl.h>",
            "#include <ATen/Context.h>",
            "#include <ATen/Parallel.h>",
            "#include <torch/csrc/jit/codegen/fuser/interface.h>",
            "#include <torch/csrc/jit/passes/tensorexpr_fuser.h>",
            "#include <torch/csrc/jit/python/update_graph_executor_opt.h>",
            "#include <torch/csrc/jit/runtime/graph_executor.h>",
            "#include <torch/script.h>",
            "",
            "#include <chrono>",
            "#include <cmath>",
            "#include <cstdio>",
            "#include <cstdlib>",
            "#include <limits>",
            "#include <string>",
            "#include <vector>",
            "",
        ]
    )
    return out


def _make_inputs(
    recipe: dict[str, Any], specs: list[dict[str, Any]], shapes: list[dict[str, int]]
) -> list[str]:
    """``make_inputs(shape)``: one call's inputs for each shape, as the measured runs made them."""
    dtype = recipe.get("dtype")
    device = recipe.get("device") or "cpu"
    out: list[str] = []
    add = out.append
    add("// One call's inputs for each declared shape, as the measured runs made them.")
    add("static std::vector<torch::jit::IValue> make_inputs(int shape) {")
    add(f"  {recipe_generator(int(recipe.get('seed') or DEFAULT_SEED))}")
    add("  std::vector<torch::jit::IValue> inputs;")
    add("  switch (shape) {")
    for n, dims in enumerate(shapes):
        label = ",".join(f"{k}={v}" for k, v in dims.items()) or "the input"
        add(f"    case {n}:  // {cpp_comment_text(label)}")
        for spec in specs:
            add(f"      inputs.push_back({recipe_tensor(spec, dims, dtype, device)});")
        add("      break;")
    add("  }")
    add("  return inputs;")
    add("}")
    add("")
    add(f"static const int kShapes = {len(shapes)};")
    names = ", ".join(
        c_string(",".join(f"{k}={v}" for k, v in d.items()) or "input") for d in shapes
    )
    add(f"static const char* kShapeNames[] = {{{names}}};")
    add("")
    return out


def _prepare(model: Recipe, recipe: dict[str, Any], shapes: list[dict[str, int]]) -> list[str]:
    """``prepare(module)``: the settings (each as its knob declares it in C++), the server's
    settings read back, then the warm-up calls."""
    out: list[str] = []
    add = out.append
    add("torch::jit::Module prepare(torch::jit::Module module) {")
    for k in KNOBS:
        value = model.settings.get(k.name)
        if value is None or k.recipe.carry != STATEMENT or k.recipe.cpp is None:
            continue
        add(f"  {k.recipe.cpp.format(value=cpp_literal(k, value))}  // {k.name}")
    if model.eval:
        add("  module.eval();")
    if model.freeze:
        add("  module = torch::jit::freeze(module);")
    if model.optimize_for_inference:
        add("  module = torch::jit::optimize_for_inference(module);")
    if (guard := _grad_guard(recipe)) is not None:
        add(f"  {guard}")
    for call in model.calls:
        index = shapes.index(call.dims) if call.dims in shapes else 0
        why = f": {cpp_comment_text(call.why)}" if call.why else ""
        add(f"  // {cpp_comment_text(shape_name(shapes, index))}{why}")
        add(f"  for (int i = 0; i < {int(call.count)}; ++i) module.forward(make_inputs({index}));")
    add("  return module;")
    add("}")
    add("")
    return out


def _main(recipe: dict[str, Any], server: list[str]) -> list[str]:
    """A ``main`` that prepares a model and serves each shape twice (``WARMUP_NO_MAIN`` leaves it
    out where the file is built into a library)."""
    out: list[str] = []
    add = out.append
    add("#ifndef WARMUP_NO_MAIN")
    add("int main(int argc, char** argv) {")
    add("  if (argc < 2) {")
    add('    std::fprintf(stderr, "usage: %s MODEL.pt\\n", argv[0]);')
    add("    return 2;")
    add("  }")
    for line in server:  # before anything starts the thread pools
        add(f"  {line}")
    add("  auto started = std::chrono::steady_clock::now();")
    add("  torch::jit::Module module = prepare(torch::jit::load(argv[1]));")
    add("  auto ms = [](auto a, auto b) {")
    add("    return std::chrono::duration<double, std::milli>(b - a).count();")
    add("  };")
    add('  std::printf("prepared in %.1f ms\\n", ms(started, std::chrono::steady_clock::now()));')
    if (guard := _grad_guard(recipe)) is not None:
        add(f"  {guard}")
    add("  // Serve every shape in reverse order: the first call of each, then a second one.")
    add("  for (int k = kShapes - 1; k >= 0; --k) {")
    add("    auto inputs = make_inputs(k);")
    add("    auto t0 = std::chrono::steady_clock::now();")
    add("    module.forward(inputs);")
    add("    auto t1 = std::chrono::steady_clock::now();")
    add("    module.forward(inputs);")
    add("    auto t2 = std::chrono::steady_clock::now();")
    add('    std::printf("served %s first %.3f ms second %.3f ms\\n", kShapeNames[k],')
    add("                ms(t0, t1), ms(t1, t2));")
    add("  }")
    add("  return 0;")
    add("}")
    add("#endif")
    add("")
    return out


def shape_name(shapes: list[dict[str, int]], index: int) -> str:
    return ",".join(f"{k}={v}" for k, v in shapes[index].items()) or "the input"


def build_command(source: str, binary: str, torch_dir: str, cxx11_abi: bool) -> list[str]:
    """The g++ line that builds ``source`` against the libtorch inside a torch wheel."""
    return [
        "g++",
        "-std=c++20",
        "-O1",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(cxx11_abi)}",
        f"-I{torch_dir}/include",
        f"-I{torch_dir}/include/torch/csrc/api/include",
        source,
        "-o",
        binary,
        f"-L{torch_dir}/lib",
        f"-Wl,-rpath,{torch_dir}/lib",
        "-ltorch",
        "-ltorch_cpu",
        "-lc10",
    ]
