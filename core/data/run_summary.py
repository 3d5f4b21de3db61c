"""A run's ``summary``, as the ``--json`` document and the record's end line give it: its
statistics (``RunData.summary_dict``), what the profiles of its slow first calls say and how
long its threads waited for a core."""

from __future__ import annotations

from typing import Any

from warmscope.core.data import contention, first_call
from warmscope.core.data.run import RunData


def run_summary(data: RunData) -> dict[str, Any]:
    out = data.summary_dict()
    explained = first_call.notes(data) if data.profiles else []
    if explained:
        out["first_calls"] = explained
    waited = contention.summary(data)
    if waited is not None:
        out["contention"] = waited
    return out
