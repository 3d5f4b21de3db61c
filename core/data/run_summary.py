"""A run's ``summary``, as the ``--json`` document and the record's end line give it: its
statistics (``RunData.summary_dict``) and what the profiles of its slow first calls say."""

from __future__ import annotations

from typing import Any

from warmscope.core.data import first_call
from warmscope.core.data.run import RunData


def run_summary(data: RunData) -> dict[str, Any]:
    out = data.summary_dict()
    explained = first_call.notes(data) if data.profiles else []
    if explained:
        out["first_calls"] = explained
    return out
