"""The parent's checks of what a child says (``core/integrity``): pure, numbers in."""

from __future__ import annotations

from typing import Any

from warmscope.core.run.integrity import (
    CLOCK_SLACK_NS,
    DONE_EXIT_S,
    Witness,
    check_done,
    check_ring_count,
    check_timings,
)

S = 1_000_000_000


def test_timings_a_clock_gives_pass() -> None:
    assert check_timings([5, 7, 6], [0, 10, 20], 3 * S, 0) is None
    assert check_timings([], [], 0, 0) is None


def test_timings_no_clock_gives_are_named() -> None:
    assert "negative" in str(check_timings([5, -1], [0, 10], S, 0))
    assert "in a run 1 s long" in str(check_timings([3600 * S], [0], S, 0))
    assert "out of order" in str(check_timings([1, 1, 1], [0, 20, 10], S, 0))
    assert "before the one before it" in str(check_timings([1], [5], S, 10))
    late = S + CLOCK_SLACK_NS
    assert "ending" in str(check_timings([1], [late], S, 0))


def test_the_ring_count_is_never_behind_nor_beyond_a_ring_ahead() -> None:
    assert check_ring_count(12, 10, 64) is None
    assert check_ring_count(9, 10, 64) is None, "a stop between a batch and the count: one behind"
    assert "were sent" in str(check_ring_count(8, 10, 64))
    assert "were sent" in str(check_ring_count(3, 10, 64))
    assert "beyond its 64 slots" in str(check_ring_count(100, 10, 64))


def done_check(done: dict[str, Any], **kw: Any) -> str | None:
    asked: dict[str, Any] = {
        "count": 100,
        "iters": 100,
        "duration": None,
        "bounded_by_shapes": False,
        "last_end_ns": 2 * S,
        "stop_requested": False,
    }
    return check_done(done, **{**asked, **kw})


def test_a_done_that_agrees_with_what_was_asked_and_seen_passes() -> None:
    assert done_check({"status": "ok", "iterations": 100}) is None
    assert done_check({"status": "ok", "iterations": 7}, count=7, stop_requested=True) is None
    assert done_check({"status": "stopped", "iterations": 7}, count=7, stop_requested=True) is None
    assert done_check({"status": "ok", "iterations": 4}, count=4, bounded_by_shapes=True) is None
    profiled = {"count": 101, "extra": 1}
    assert done_check({"status": "ok", "iterations": 101}, **profiled) is None
    timed = {"count": 50, "duration": 2.0, "last_end_ns": 2 * S}
    assert done_check({"status": "ok", "iterations": 50}, **timed) is None


def test_a_done_that_disagrees_is_named() -> None:
    assert "of --iters 100, unasked" in str(done_check({"status": "ok", "iterations": 9}, count=9))
    assert "9 iterations, 100 arrived" in str(done_check({"status": "ok", "iterations": 9}))
    assert "beyond --iters 100" in str(done_check({"status": "ok", "iterations": 101}, count=101))
    assert "nobody stopped it" in str(done_check({"status": "stopped", "iterations": 100}))
    short = {"count": 9, "duration": 6.0, "last_end_ns": S // 10}
    assert "of --duration 6, unasked" in str(done_check({"status": "ok", "iterations": 9}, **short))


def test_the_witness_names_a_second_done_and_a_child_that_lingers_after_it() -> None:
    witness = Witness()
    assert witness.lingering(100.0) is None, "no done yet"
    assert witness.said_done({"status": "ok", "iterations": 3}, 50.0) is None
    assert witness.lingering(50.0 + DONE_EXIT_S / 2) is None
    assert "still running 11 s after its done" in str(witness.lingering(61.0))
    assert witness.said_done({"status": "ok", "iterations": 3}, 52.0) == "a second done"
    assert (
        witness.batch(
            [5],
            [10],
            S,
        )
        is None
        and witness.last_end_ns == 15
    )
    assert "before the one before it" in str(witness.batch([5], [3], S))
