"""One classifier of causes: an iteration's label is the short name of the strongest cause its
events show, as ``causes`` names that cause from the same events, so no cause is named two ways."""

from __future__ import annotations

import itertools

from warmscope.core.data import cause_kinds, causes
from warmscope.core.data.labels import label_for
from warmscope.core.data.run import Event, RunData
from warmscope.core.data.settings import RunSettings

EVENTS = (
    ("recompile", "size mismatch at index 0 (f, m.py:1)"),
    ("compile", "compile 0/0"),
    ("compile", "compile 0/0 (dynamo)"),
    ("compile", "compile 0/1 (lazy_backward)"),
    ("compile", "compile 1/0 (cudagraph_recording)"),
    ("compile", "compile 2/0 (triton_autotuning)"),
    ("autotune", "autotuned mm"),
    ("cudagraph", "CUDA graph warm-up (f)"),
    ("cudagraph", "CUDA graph recording (f)"),
    ("cudagraph", "CUDA graph re-recording (f)"),
    ("jit", "Optimized Graph"),
    ("jit", "Profiled Graph"),
    ("jit", "NoOpt Graph"),
    ("warning", "UserWarning: x"),
)
"""Events as the agent titles them (``hooks``), and a few that name no cause."""


def named_from(events: tuple[tuple[str, str], ...]) -> list[str]:
    """The causes ``causes`` names from these events, in a call of their own."""
    data = RunData(settings=RunSettings(target="sample:trivial", iters=2), mode="eager")
    data.add_iterations(0, [30.0, 1.0], [0.0, 30.0])
    for kind, title in events:
        data.add_event(Event(kind, title, iteration=0))
    return [c.name for c in causes.causes_at(data, 0)]


def test_each_label_is_the_strongest_cause_that_causes_names_from_the_same_events() -> None:
    for n in (1, 2, 3):
        for events in itertools.combinations(EVENTS, n):
            named = named_from(events)
            strongest = next((k for k in cause_kinds.EVENT_CAUSES if k.name in named), None)
            expected = strongest.label if strongest is not None else None
            assert label_for(list(events)) == expected, (events, named)


def test_each_cause_an_event_shows_is_declared_once_with_one_label() -> None:
    names = [k.name for k in cause_kinds.EVENT_CAUSES]
    labels = [k.label for k in cause_kinds.EVENT_CAUSES]
    assert len(set(names)) == len(names) and len(set(labels)) == len(labels)
    shown = {cause_kinds.event_cause(kind, title) for kind, title in EVENTS} - {None}
    assert shown == set(names), "every declared cause is shown by some event, and only those"
