"""A run's ``summary``, as the ``--json`` document and the record's end line give it: its
statistics with the rows of its shapes, its idle probe and its device time (``summary_dict``),
what the profiles of its slow first calls say and how long its threads waited for a core."""

from __future__ import annotations

from typing import Any

from warmscope.core.data import contention, first_call
from warmscope.core.data.run import RunData
from warmscope.core.data.summary_rows import device_summary, idle_probe_rows, shape_rows


def run_summary(data: RunData) -> dict[str, Any]:
    out = summary_dict(data)
    explained = first_call.notes(data) if data.profiles else []
    if explained:
        out["first_calls"] = explained
    waited = contention.summary(data)
    if waited is not None:
        out["contention"] = waited
    return out


def summary_dict(run: RunData) -> dict[str, Any]:
    """The statistics, and the per-shape rows, idle probe, device time and peak memory
    where the run has them: the ``summary`` of ``--json`` and of the record's end line,
    with what its first calls' profiles say (``run_summary``)."""
    out: dict[str, Any] = dict(run.summary().to_dict())
    if run.shape_keys:
        # The percentiles, mean and CV above mix the shapes; each shape's own are its row's.
        out["pooled_over_shapes"] = len(run.shape_keys)
        out["shapes"] = shape_rows(run)
    if run.idle_probe:
        out["idle_probe"] = idle_probe_rows(run)
    device = device_summary(run)
    if device is not None:
        out["device"] = device
    out.update(run.memory)
    return out
