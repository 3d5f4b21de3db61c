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

CPP_DTYPES = {
    "float32": "torch::kFloat32",
    "float64": "torch::kFloat64",
    "float16": "torch::kFloat16",
    "bfloat16": "torch::kBFloat16",
    "int64": "torch::kInt64",
    "int32": "torch::kInt32",
    "int16": "torch::kInt16",
    "int8": "torch::kInt8",
    "uint8": "torch::kUInt8",
    "bool": "torch::kBool",
}


class CppRecipeError(ValueError):
    """A recipe that has no libtorch form (compile, keyword inputs, no input specs)."""


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _tensor(spec: dict[str, Any], dims: dict[str, int], dtype_override: str | None) -> str:
    dtype = spec["dtype"]
    shape = [d if isinstance(d, int) else dims[d] for d in spec["shape"]]
    size = "{" + ", ".join(str(s) for s in shape) + "}"
    floating = dtype in ("float32", "float64", "float16", "bfloat16")
    opts = f"torch::TensorOptions().dtype({CPP_DTYPES[dtype]})"
    gen = spec.get("gen") or ("normal" if floating else "zeros")
    args = spec.get("args") or []
    # Drawn from one generator seeded per call's inputs, in order: the values the runs used.
    if gen == "zeros":
        expr = f"torch::zeros({size}, {opts})"
    elif gen == "ones":
        expr = f"torch::ones({size}, {opts})"
    elif gen == "fill":
        expr = f"torch::full({size}, {args[0]}, {opts})"
    elif gen == "randint":
        expr = f"at::randint({int(args[0])}, {int(args[1])}, {size}, gen, {opts})"
    elif gen == "uniform":
        expr = f"torch::empty({size}).uniform_({args[0]}, {args[1]}, gen).to({CPP_DTYPES[dtype]})"
    else:
        expr = f"at::randn({size}, gen).to({CPP_DTYPES[dtype]})"
    if dtype_override and floating:
        expr = f"{expr}.to({CPP_DTYPES[dtype_override]})"
    return expr


def emit_cpp(recipe: dict[str, Any], target: str = "") -> str:
    """The recipe (``Recipe.to_json()``) as a C++ file; ``CppRecipeError`` where it has none."""
    if recipe["mode"] == "compile":
        raise CppRecipeError("a torch.compile recipe has no libtorch form")
    specs = recipe["specs"]
    if not specs:
        raise CppRecipeError("libtorch needs the input specs (--input) to make warm-up inputs")
    if any(s.get("name") for s in specs):
        raise CppRecipeError("libtorch's forward takes positional inputs only (no NAME=)")
    shapes = recipe["shapes"] or [{}]
    return "\n".join(
        [
            *_head(recipe, target),
            *_make_inputs(recipe, specs, shapes),
            *_prepare(recipe, shapes),
            *_main(recipe),
        ]
    )


def _grad_guard(recipe: dict[str, Any]) -> str | None:
    """The guard a recipe's calls run under (none where grad mode is enabled)."""
    if recipe.get("grad_mode") == "enabled":
        return None
    if recipe.get("grad_mode") == "inference_mode":
        return "c10::InferenceMode guard;"
    return "torch::NoGradGuard guard;"


def _head(recipe: dict[str, Any], target: str) -> list[str]:
    """What the file is, and its includes."""
    out: list[str] = []
    add = out.append
    add(f"// Warm-up recipe for libtorch: {recipe['label']}.")
    if target:
        add(f"// Derived and verified by warmscope for {target}.")
    for note in recipe.get("notes") or []:
        add(f"// Without it: {note}")
    add("#include <ATen/CPUGeneratorImpl.h>")
    add("#include <ATen/Parallel.h>")
    add("#include <torch/csrc/jit/runtime/graph_executor.h>")
    add("#include <torch/script.h>")
    add("")
    add("#include <chrono>")
    add("#include <cstdio>")
    add("#include <string>")
    add("#include <vector>")
    add("")
    return out


def _make_inputs(
    recipe: dict[str, Any], specs: list[dict[str, Any]], shapes: list[dict[str, int]]
) -> list[str]:
    """``make_inputs(shape)``: one call's inputs for each shape, as the measured runs made them."""
    dtype = recipe.get("dtype")
    out: list[str] = []
    add = out.append
    add("// One call's inputs for each declared shape, as the measured runs made them.")
    add("static std::vector<torch::jit::IValue> make_inputs(int shape) {")
    add(f"  auto gen = at::detail::createCPUGenerator({int(recipe.get('seed') or 0)});")
    add("  std::vector<torch::jit::IValue> inputs;")
    add("  switch (shape) {")
    for n, dims in enumerate(shapes):
        label = ",".join(f"{k}={v}" for k, v in dims.items()) or "the input"
        add(f"    case {n}:  // {label}")
        for spec in specs:
            add(f"      inputs.push_back({_tensor(spec, dims, dtype)});")
        add("      break;")
    add("  }")
    add("  return inputs;")
    add("}")
    add("")
    add(f"static const int kShapes = {len(shapes)};")
    names = ", ".join(
        _c_string(",".join(f"{k}={v}" for k, v in d.items()) or "input") for d in shapes
    )
    add(f"static const char* kShapeNames[] = {{{names}}};")
    add("")
    return out


def _prepare(recipe: dict[str, Any], shapes: list[dict[str, int]]) -> list[str]:
    """``prepare(module)``: the settings, then the warm-up calls."""
    out: list[str] = []
    add = out.append
    add("torch::jit::Module prepare(torch::jit::Module module) {")
    if recipe.get("threads"):
        add(f"  at::set_num_threads({int(recipe['threads'])});  // as measured")
    if recipe.get("profiling_executor") is False:
        add("  // The profiling executor's profiling and optimizing runs are the slow first calls:")
        add("  // the legacy executor runs instead (Python: torch._C._jit_set_profiling_executor).")
        add("  torch::jit::getExecutorMode() = false;")
    if recipe.get("num_profiled_runs") is not None:
        add(f"  torch::jit::getNumProfiledRuns() = {int(recipe['num_profiled_runs'])};")
    if recipe.get("fusion_strategy"):
        add("  torch::jit::FusionStrategy strategy = {")
        for part in recipe["fusion_strategy"].split(";"):
            kind, _, depth = part.partition(",")
            add(f"      {{torch::jit::FusionBehavior::{kind.strip().upper()}, {int(depth)}}},")
        add("  };")
        add("  torch::jit::setFusionStrategy(strategy);")
    add("  module.eval();")
    if recipe.get("freeze"):
        add("  module = torch::jit::freeze(module);")
    if (guard := _grad_guard(recipe)) is not None:
        add(f"  {guard}")
    for call in recipe["calls"]:
        index = shapes.index(call["dims"]) if call["dims"] in shapes else 0
        why = f": {call['why']}" if call.get("why") else ""
        add(f"  // {shape_name(shapes, index)}{why}")
        add(
            f"  for (int i = 0; i < {int(call['count'])}; ++i) module.forward(make_inputs({index}));"
        )
    add("  return module;")
    add("}")
    add("")
    return out


def _main(recipe: dict[str, Any]) -> list[str]:
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
