"""The input maker's rule (``core/child/input_spec.py``) in C++: the C++ agent's table of it,
and the expression a C++ recipe makes each input with.

Both are built from the rule's declarations; every name in them is a string literal
``c_string`` escaped, every dtype a ``c10::ScalarType`` named from the table. The agent's
table lives in ``cpp_agent.cpp`` itself, between ``BEGIN``/``END`` lines (one file to build and
to ship to a remote host): ``python -m warmscope.core.output.inputs_cpp`` writes it there, and
a test holds the file to what this module makes.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from warmscope.core.base.code_text import c_string
from warmscope.core.base.files import atomic_write
from warmscope.core.child import input_spec
from warmscope.core.child.cpp_make import SOURCE

BEGIN = "// BEGIN input_spec (generated: python -m warmscope.core.output.inputs_cpp)"
END = "// END input_spec"
_BEGIN_AT = "// BEGIN input_spec"


class NoCppForm(ValueError):
    """An input the rule makes that has no libtorch form here (a fill C++ does not know)."""


def scalar_type(name: str) -> str:
    """A dtype's ``c10::ScalarType`` as libtorch's C++ API names it (``torch::kFloat``)."""
    return f"torch::k{input_spec.DTYPE_BY_NAME[name].scalar_type}"


def agent_table() -> list[str]:
    """The rule as the C++ agent reads it: its dtypes (name, type, floating), their aliases,
    the default fills, and the dtype each drawing fill makes its values in."""
    out = [BEGIN]
    add = out.append
    add("struct InputDtype {")
    add("  const char* name;")
    add("  c10::ScalarType type;")
    add("  bool floating;")
    add("};")
    add("static const InputDtype kInputDtypes[] = {")
    for d in input_spec.DTYPES:
        floating = "true" if d.floating else "false"
        add(f"    {{{c_string(d.name)}, {scalar_type(d.name)}, {floating}}},")
    add("};")
    add("static const std::pair<const char*, const char*> kInputAliases[] = {")
    for alias, name in input_spec.ALIASES.items():
        add(f"    {{{c_string(alias)}, {c_string(name)}}},")
    add("};")
    add(
        f"static const char* const kDefaultFillFloating = {c_string(input_spec.DEFAULT_FILL[True])};"
    )
    add(f"static const char* const kDefaultFillOther = {c_string(input_spec.DEFAULT_FILL[False])};")
    add("// The fills that make their values in another dtype than the input's, and that dtype.")
    add("static const std::pair<const char*, c10::ScalarType> kDrawnAs[] = {")
    for f in input_spec.FILLS:
        if f.drawn_as is not None:
            add(f"    {{{c_string(f.name)}, {scalar_type(f.drawn_as)}}},")
    add("};")
    add(f"static const uint64_t kDefaultSeed = {int(input_spec.DEFAULT_SEED)}ULL;")
    add(END)
    return out


def with_agent_table(source: str) -> str:
    """``source`` (the C++ agent's) with its table replaced by ``agent_table()``."""
    start = source.index(_BEGIN_AT)
    end = source.index(END, start) + len(END)
    return source[:start] + "\n".join(agent_table()) + source[end:]


def number(value: Any) -> str:
    """A fill's argument as a C++ number (a record's text never becomes code)."""
    x = float(value)
    if not math.isfinite(x):
        if x != x:
            return 'std::nan("")'
        return f"{'-' if x < 0 else ''}std::numeric_limits<double>::infinity()"
    return repr(x)


def recipe_tensor(
    spec: dict[str, Any], dims: dict[str, int], dtype_override: str | None, device: str
) -> str:
    """One input of a C++ recipe, made as the rule says: its fill drawn from the call's one
    generator (``gen``) in its ``drawn_as`` dtype, then converted, cast where floating, and
    moved to the device."""
    dtype = input_spec.dtype_of(spec["dtype"])
    fill = input_spec.fill_of(spec)
    shape = [d if isinstance(d, int) else dims[d] for d in spec["shape"]]
    size = "{" + ", ".join(str(int(s)) for s in shape) + "}"
    made = scalar_type(fill.drawn_as or dtype.name)
    opts = f"torch::TensorOptions().dtype({made})"
    args = spec.get("args") or []
    if fill.name == "zeros":
        expr = f"torch::zeros({size}, {opts})"
    elif fill.name == "ones":
        expr = f"torch::ones({size}, {opts})"
    elif fill.name == "fill":
        expr = f"torch::full({size}, {number(args[0])}, {opts})"
    elif fill.name == "randint":
        expr = f"at::randint({int(args[0])}, {int(args[1])}, {size}, gen, {opts})"
    elif fill.name == "uniform":
        expr = f"torch::empty({size}, {opts}).uniform_({number(args[0])}, {number(args[1])}, gen)"
    elif fill.name == "normal":
        expr = f"at::randn({size}, gen, {opts})"
    else:
        raise NoCppForm(f"no libtorch form for the input fill {fill.name!r}")
    if made != scalar_type(dtype.name):
        expr = f"{expr}.to({scalar_type(dtype.name)})"
    if dtype_override and dtype.floating:
        expr = f"{expr}.to({scalar_type(dtype_override)})"
    if device != "cpu":
        expr = f"{expr}.to(torch::Device({c_string(device)}))"
    return expr


def recipe_generator(seed: int) -> str:
    """The statement that makes a call's one generator, seeded as the rule says."""
    return f"auto gen = at::detail::createCPUGenerator({int(seed)}ULL);"


def main() -> int:
    """Write the table into the C++ agent's source (``--check``: say whether it is there)."""
    text = SOURCE.read_text()
    fresh = with_agent_table(text)
    if "--check" in sys.argv[1:]:
        if fresh != text:
            print(f"{SOURCE}: the input table is not the rule's; run {__spec__.name}")
            return 1
        return 0
    if fresh != text:
        atomic_write(Path(SOURCE), fresh, parents=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
