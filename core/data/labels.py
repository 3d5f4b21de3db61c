"""An iteration's label: the short name of the strongest cause its events show.

Shared by the run data, its views and the TUI's iteration list. The causes, their labels and
their precedence are declared once, in ``cause_kinds``; the full causes, timed and with their
evidence, are ``causes``.
"""

from __future__ import annotations

from warmscope.core.data.cause_kinds import EVENT_CAUSES, event_cause

__all__ = ["label_for"]


def label_for(kinds_and_titles: list[tuple[str, str]]) -> str | None:
    """The known cause of an iteration's cost, from its events' kinds and titles: the label of
    the first of ``cause_kinds.EVENT_CAUSES`` (recompile > compile > CUDA graph recording >
    Triton autotuning > CUDA graph warm-up > optimization > profiling run) an event shows."""
    shown = {event_cause(kind, title) for kind, title in kinds_and_titles}
    return next((c.label for c in EVENT_CAUSES if c.name in shown), None)
