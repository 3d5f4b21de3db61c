"""A sweep's plan, parsed once for every front end: fresh processes per setting, the presets
and knob values whose combinations are the cells, and whether rounds stop early.

``warmscope sweep`` / ``run --repeat`` and the TUI's settings form both read their text
through here, so the same input is refused with the same words and the same limits
(``tests/test_one_parser.py`` feeds both the same bad inputs). The cells themselves are built
from a plan by ``sweep.grid``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from warmscope.core.base.safe_text import clean_line
from warmscope.core.child.knobs import KnobError, knob
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.settings import PRESETS
from warmscope.core.data.sweep_schema import MAX_CELLS

MAX_REPEAT = 100
"""The most fresh processes per setting: a hundred already narrow a median's interval to a
few percent; more is a typo more often than a plan."""

NEEDS_TWO = "a sweep needs at least two settings: two presets, or a knob with two values"

Varies = tuple[tuple[str, tuple[str, ...]], ...]
"""``((knob, (value, …)), …)``: each varied knob with its values, in the order given."""


@dataclass(frozen=True)
class SweepPlan:
    """How many fresh processes per setting, and which settings (the cells) to sweep."""

    repeat: int = 1
    presets: tuple[str, ...] = ()
    varies: Varies = ()
    adaptive: bool = False
    """Rounds stop once the answer is decided (``--adaptive``); ``repeat`` is then the cap."""

    @property
    def sweeps(self) -> bool:
        """Several settings (presets or knob values) rather than one setting repeated."""
        return bool(self.presets or self.varies)

    @property
    def many(self) -> bool:
        """Whether the plan runs more than the one process a plain run is."""
        return self.repeat > 1 or self.sweeps

    @property
    def cell_count(self) -> int:
        """How many cells ``grid`` makes of the plan: presets × every combination of values."""
        return max(1, len(self.presets)) * math.prod(len(vs) for _, vs in self.varies)

    def describe(self, cells: int) -> str:
        """``2 settings × 3 processes`` or ``3 processes``."""
        per = f"{self.repeat} process{'es' if self.repeat != 1 else ''}"
        return f"{cells} settings × {per}" if self.sweeps else per


def plan(
    repeat: int, presets: Iterable[str], varies: Iterable[str], *, adaptive: bool = False
) -> SweepPlan:
    """The plan of a repeat count, preset names and ``KNOB=V1,V2`` items, checked whole:
    ``UsageError`` names the first thing wrong."""
    made = SweepPlan(
        check_repeat(repeat), check_presets(presets), check_varies(varies), adaptive=adaptive
    )
    if made.sweeps and made.cell_count < 2:
        raise UsageError(NEEDS_TWO)
    if made.cell_count > MAX_CELLS:
        raise UsageError(f"the sweep has {made.cell_count} settings; at most {MAX_CELLS}")
    return made


def check_repeat(repeat: int) -> int:
    if not 1 <= repeat <= MAX_REPEAT:
        raise UsageError(f"processes per setting: from 1 to {MAX_REPEAT}, got {repeat}")
    return repeat


def parse_repeat(text: str) -> int:
    """The processes per setting as typed (empty: 1)."""
    text = text.strip() or "1"
    if not text.isdigit():
        raise UsageError(f"processes per setting: a whole number, got {clean_line(text)!r}")
    return check_repeat(int(text))


def split_names(text: str) -> list[str]:
    """Names separated by commas or spaces: ``torchscript,frozen`` or ``torchscript frozen``."""
    return [n for n in text.replace(",", " ").split() if n]


def check_presets(names: Iterable[str]) -> tuple[str, ...]:
    chosen = tuple(names)
    for name in chosen:
        if name not in PRESETS:
            raise UsageError(f"unknown preset {clean_line(name)!r}: one of {', '.join(PRESETS)}")
    twice = sorted({n for n in chosen if chosen.count(n) > 1})
    if twice:
        raise UsageError(f"preset {twice[0]} is given twice")
    return chosen


def parse_vary(text: str) -> tuple[str, tuple[str, ...]]:
    """``KNOB=v1,v2``: the knob and its values (each checked as ``--set`` checks it)."""
    key, sep, values = text.partition("=")
    key = key.strip()
    items = tuple(v.strip() for v in values.split(",") if v.strip())
    if not sep or not key or not items:
        raise UsageError(f"vary {clean_line(text)!r}: expected KNOB=VALUE1,VALUE2")
    if not key.startswith("env."):
        try:
            declared = knob(key)
            for item in items:
                declared.parse(item)
        except KnobError as exc:
            raise UsageError(f"vary {clean_line(key)}: {exc}") from None
    if len(set(items)) != len(items):
        raise UsageError(f"vary {clean_line(key)}: a value is given twice")
    return key, items


def check_varies(items: Iterable[str]) -> Varies:
    varies = tuple(parse_vary(item) for item in items)
    keys = [k for k, _ in varies]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise UsageError(f"vary {clean_line(twice[0])}: the knob is varied twice")
    return varies
