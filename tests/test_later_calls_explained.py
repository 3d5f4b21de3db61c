"""Slow calls after the first are explained the way first calls are (issue 31: a traced BERT's
#2–#7 took 184 ms each against a 5.16 ms p50, with no label): the slowest of the warm-up's
later calls that stand out are profiled against a steady call, in the one extra process
that explains first calls, and only where they stand out."""

from __future__ import annotations

from tests.test_first_call_explained import run_of
from warmscope.core.data import first_call
from warmscope.core.data.run import Event
from warmscope.core.output.text_views import render_summary


def steady(n: int) -> list[float]:
    return [5.0 + 0.05 * (i % 4) for i in range(n)]


BERT = [60.0, 6.0, 184.0, 183.0, 186.0, 184.0, 185.0, 184.0, *steady(40)]
"""A first call explained by its event, then six calls 36× the steady p50 that nothing labels."""


def test_the_slowest_later_calls_that_stand_out_are_held_to_a_steady_call() -> None:
    data = run_of(BERT)
    data.add_event(Event("jit", "Profiled Graph", iteration=0))
    calls = first_call.unexplained(data)
    assert [(c.iteration, c.what) for c in calls] == [(4, "slow call"), (6, "slow call")]
    steady_from = data.summary().steady_from
    assert steady_from is not None
    assert all(c.against >= steady_from and c.p50_ms < 6 for c in calls)
    # One process profiles them all, with any first call beside them.
    settings = first_call.explaining_settings(data.settings, calls)
    assert settings.profile_iters == ",".join(map(str, sorted({4, 6, *(c.against for c in calls)})))


def test_only_calls_that_stand_out_are_profiled() -> None:
    tail = run_of([60.0, 6.0, 8.0, 7.5, *steady(40)])  # under 3× the p50: no extra process
    tail.add_event(Event("jit", "Profiled Graph", iteration=0))
    assert first_call.later(tail) == []
    labelled = run_of(BERT)
    for i in range(8):
        labelled.add_event(Event("jit", "Profiled Graph", iteration=i))
    assert first_call.unexplained(labelled) == []  # its events say why
    failed = run_of(BERT)
    failed.status = "failed"
    assert first_call.later(failed) == []


def test_a_later_calls_profile_labels_it_in_the_summary() -> None:
    data = run_of(BERT)
    data.add_event(Event("jit", "Profiled Graph", iteration=0))
    steady_profile = {
        "iteration": 20,
        "wall_ms": 5.0,
        "ops_ms": 4.8,
        "unaccounted_ms": 0.2,
        "ops": [{"name": "aten::linear", "self_ms": 4.0}],
    }
    slow_profile = {
        "iteration": 4,
        "wall_ms": 184.0,
        "ops_ms": 14.0,
        "unaccounted_ms": 170.0,
        "ops": [{"name": "aten::linear", "self_ms": 4.2}],
        "explains": first_call.SLOW_CALL,
        "against": 20,
        "separate": True,
        "explain_s": 3.2,
    }
    data.profiles = {4: slow_profile, 20: steady_profile}
    [note] = first_call.notes(data)
    assert note["iteration"] == 4 and note["against"] == 20
    assert note["label"].startswith("slow call: ") and "in no operator" in note["label"]
    assert "explained  #4 slow call: " in render_summary(data)


def test_microseconds_of_jitter_on_a_fast_model_do_not_stand_out() -> None:
    fast = run_of([0.5, 0.02, *[0.004 + 0.0001 * (i % 3) for i in range(40)]])
    assert first_call.later(fast) == []
