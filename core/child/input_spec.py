"""How a call's input tensors are made from their specs: the one rule every maker follows.

The makers: the Python agent's (``inputs.build_inputs``, which a Python recipe carries whole,
with ``TABLE`` beside it), the C++ agent's (``cpp_agent.cpp``: its table is generated from
this one, ``output/inputs_cpp``), a C++ recipe's (``output/recipe_cpp``), and the inputs an
AOTInductor package's input checks describe (``pt2.checked_inputs`` and its C++ twin), made
from specs by the same makers. The same seed and specs give the same tensors, bit for bit,
in each of them (``tests/test_one_input_maker.py``).

The rule:

- A spec's ``dtype`` is one of ``DTYPES`` (or an alias of one, ``ALIASES``); a floating one
  is filled by ``normal`` unless the spec says otherwise, any other (integers, bool) by
  ``zeros`` (valid indices for an embedding; all false).
- A fill (``FILLS``) draws its values in its ``drawn_as`` dtype (``normal`` and ``uniform``
  in float32, whatever the spec's, then converted) or in the spec's own; ``randint(lo,hi)``
  draws integers in [lo, hi).
- The seed: one CPU generator (``torch.Generator().manual_seed(seed)``,
  ``at::detail::createCPUGenerator(seed)``) for each call's inputs, made anew for every call
  (every shape), drawn by the specs in their declared order, positional and keyword alike; a
  fill that draws nothing leaves it where it was. The tensors are made on the CPU, then moved
  to the run's device.
- ``--set dtype=D`` converts the floating inputs (and only those) to D, after they are made.

Standard library only (child side): the parent reads it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dtype:
    """An input dtype."""

    name: str
    """torch's name for it (``torch.float32``), as ``--input`` writes it."""
    scalar_type: str
    """Its ``c10::ScalarType`` (``Float``: ``at::kFloat``, ``torch::kFloat``)."""
    floating: bool
    """Filled by ``normal`` by default, and converted by ``--set dtype``."""


DTYPES: tuple[Dtype, ...] = (
    Dtype("float32", "Float", True),
    Dtype("float64", "Double", True),
    Dtype("float16", "Half", True),
    Dtype("bfloat16", "BFloat16", True),
    Dtype("int64", "Long", False),
    Dtype("int32", "Int", False),
    Dtype("int16", "Short", False),
    Dtype("int8", "Char", False),
    Dtype("uint8", "Byte", False),
    Dtype("bool", "Bool", False),
)
DTYPE_BY_NAME = {d.name: d for d in DTYPES}
ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
}
"""Other names torch gives the same dtypes (``torch.float``, an AOTInductor check's ``long``)."""


@dataclass(frozen=True)
class Fill:
    """How a spec's values are made (``--input SPEC:GEN``)."""

    name: str
    args: int
    """How many numbers it takes: ``fill(v)`` one, ``randint(lo,hi)`` and ``uniform(lo,hi)`` two."""
    draws: bool
    """It takes values from the call's generator (and so moves it on for the specs after)."""
    drawn_as: str | None
    """The dtype its values are made in, then converted to the spec's; ``None``: the spec's."""
    floating_only: bool
    """Only a floating dtype may ask for it."""


FILLS: tuple[Fill, ...] = (
    Fill("zeros", 0, draws=False, drawn_as=None, floating_only=False),
    Fill("ones", 0, draws=False, drawn_as=None, floating_only=False),
    Fill("fill", 1, draws=False, drawn_as=None, floating_only=False),
    Fill("randint", 2, draws=True, drawn_as=None, floating_only=False),
    Fill("normal", 0, draws=True, drawn_as="float32", floating_only=True),
    Fill("uniform", 2, draws=True, drawn_as="float32", floating_only=True),
)
FILL_BY_NAME = {f.name: f for f in FILLS}
DEFAULT_FILL = {True: "normal", False: "zeros"}
"""A spec's fill where it names none, by whether its dtype is floating."""
DEFAULT_SEED = 0
"""The seed where the run names none, and of the inputs a package's checks describe."""


def dtype_of(name: str) -> Dtype:
    """The dtype a name or alias means; ``KeyError`` for one outside the table."""
    return DTYPE_BY_NAME[ALIASES.get(name, name)]


def fill_of(spec: dict[str, Any]) -> Fill:
    """The fill a spec asks for, or its dtype's default."""
    return FILL_BY_NAME[spec.get("gen") or DEFAULT_FILL[dtype_of(spec["dtype"]).floating]]


TABLE: dict[str, Any] = {
    "floating": [d.name for d in DTYPES if d.floating],
    "default_fill": {"floating": DEFAULT_FILL[True], "other": DEFAULT_FILL[False]},
    "drawn_as": {f.name: f.drawn_as for f in FILLS if f.drawn_as is not None},
}
"""What the Python maker reads of the rule, as plain data (its specs name dtypes by their
names, never an alias): a Python recipe carries it as a literal beside the maker's own source
(``output/recipe``)."""
