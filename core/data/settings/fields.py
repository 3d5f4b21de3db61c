"""The run settings, declared once: ``RunFields``, each field with its ``Setting``.

A field's declaration is the whole of a run setting: its type and default, its options and
help, how the reproduce line writes it, whether a comparison names it and whether a file may
choose it. ``settings.RunSettings`` is these fields with what is done with them; the
command line, the diff and the trust check walk ``FIELDS``.

The fields come in five groups, each declared in its own module: what runs and for how long
(``workload_fields``), how the model runs (``executor_fields``), the process around it
(``process_fields``) and what the run captures (``capture_fields``). Where a field reads,
writes or asks for itself otherwise than by its one option: ``field_forms``.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, fields, replace
from typing import Any

from warmscope.core.data.settings.capture_fields import WhatIsCaptured
from warmscope.core.data.settings.executor_fields import HowItRuns
from warmscope.core.data.settings.process_fields import WhereAndWhat
from warmscope.core.data.settings.setting import SETTING, Setting
from warmscope.core.data.settings.workload_fields import HowLong, WhatRuns


@dataclass
class RunFields(WhatIsCaptured, WhereAndWhat, HowLong, HowItRuns, WhatRuns):
    """Every run setting: the groups' fields, in their order (a dataclass takes its bases'
    fields from the last base to the first)."""


def _made(f: Field[Any]) -> Setting:
    make = f.default_factory if f.default is MISSING else (lambda d=f.default: d)
    return replace(f.metadata[SETTING], name=f.name, make_default=make)


FIELDS: tuple[Setting, ...] = tuple(_made(f) for f in fields(RunFields))
"""Every run setting's ``Setting``, in the order ``--help`` lists their options."""

BY_NAME = {s.name: s for s in FIELDS}


def default_of(name: str) -> Any:
    """A run setting's default: a new list or map where it is one."""
    return BY_NAME[name].default()
