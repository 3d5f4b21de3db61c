"""The ``iters`` message on the wire, and what a live view takes of a run: exact, and no more."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warmscope.core.child import protocol
from warmscope.core.data.fold import apply_line, iterations_line
from warmscope.core.data.run import Cursor, RunData

INT64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 2**40),
    st.lists(INT64, max_size=50),
    st.lists(INT64, max_size=50),
    st.none() | st.lists(st.integers(-1, 2**15 - 1), max_size=50),
)
def test_an_iters_message_carries_its_columns_exactly(
    first: int, ns: list[int], starts: list[int], shapes: list[int] | None
) -> None:
    line = protocol.encode_iters(first, ns, starts, shapes)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    message = protocol.decode(line)
    assert message["t"] == "iters" and message["i0"] == first
    got_ns, got_st, got_sh = protocol.iteration_columns(message)
    assert list(got_ns) == ns and list(got_st) == starts
    assert (None if got_sh is None else list(got_sh)) == shapes


def test_a_protocol_1_message_of_plain_lists_still_reads() -> None:
    message = {"t": "iters", "i0": 0, "ns": [5, 6], "st": [0, 10], "sh": [0, 1]}
    assert protocol.iteration_columns(message) == ([5, 6], [0, 10], [0, 1])


@pytest.mark.parametrize("column", ["%%%%", "AAAA AAA=", "AAAA", 5.5])
def test_a_broken_column_is_refused(column: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        got = protocol.iteration_columns({"t": "iters", "i0": 0, "ns": column, "st": "AAAA"})
        array("q", got[0])


def test_the_version_says_the_columns_changed() -> None:
    assert protocol.VERSION == 2


def run_of(n: int) -> RunData:
    data = RunData()
    apply_line(
        data,
        iterations_line(
            0, [1_000_000 + k for k in range(n)], list(range(0, n * 2_000_000, 2_000_000))
        ),
    )
    return data


def test_since_leaves_the_starts_out_unless_asked() -> None:
    data = run_of(5)
    without = data.since(Cursor(), starts=False)
    assert len(without.ms) == 5 and len(without.start_ms) == 0
    asked = data.since(Cursor())
    assert list(asked.start_ms) == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert list(asked.ms) == [1.0, 1.000001, 1.000002, 1.000003, 1.000004]


def test_since_hands_out_copies_that_later_batches_leave_alone() -> None:
    data = run_of(3)
    cursor = Cursor()
    update = data.since(cursor, starts=False)
    apply_line(data, iterations_line(3, [7_000_000], [9_000_000]))
    assert list(update.ms) == [1.0, 1.000001, 1.000002]
    later = data.since(cursor, starts=False)
    assert later.first == 3 and list(later.ms) == [7.0]
