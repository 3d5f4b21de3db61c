"""Which iteration each line the child printed on fd 2 belongs to: ``Attribution`` alone, fed
the lines a pipe would carry (the markers as the agent writes them), with no child at all.

``tests/test_markers.py`` checks the same on real children, real torch, real pipes.
"""

from __future__ import annotations

import string

import pytest

from warmscope.core.child import protocol
from warmscope.core.data.run import Event
from warmscope.core.run.attribution import (
    MAX_PENDING_CHARS,
    MAX_STDERR_EVENTS,
    Attribution,
    BadMarker,
)

SIDE = "run.stderr.txt"
SECRET = protocol.MARKER + b"k3y "
"""A marker prefix that carries a per-run secret."""


def mark(kind: str, value: object, prefix: bytes = protocol.MARKER) -> bytes:
    return prefix + f"{kind} {value}".encode()


LOOP = mark("loop", "start")


def summary(item: Event | BadMarker) -> tuple[object, ...]:
    """(kind, text, iteration, phase, approximate), or ("bad", reason) for a bad marker."""
    if isinstance(item, BadMarker):
        return ("bad", item.reason)
    approx = bool(item.data.get("approx_iteration"))
    return (item.kind, item.text, item.iteration, item.phase, approx)


def attribute(
    lines: list[bytes],
    *,
    markers: bool = True,
    running: int = 0,
    completed: int = 0,
    prefix: bytes = protocol.MARKER,
) -> list[tuple[object, ...]]:
    """Everything the lines give, fed in one batch, then the end of the run."""
    attribution = Attribution(markers=markers, side_file=SIDE, marker=prefix)
    out = attribution.feed(lines, running).out
    return [summary(e) for e in [*out, *attribution.end(completed)]]


CASES = [
    pytest.param(
        [b"importing"],
        {},
        [("stderr", "importing", None, "start", False)],
        id="a line before any marker is the start's",
    ),
    pytest.param(
        [mark("phase", "load"), b"loading", mark("phase", "warm up"), b"warm"],
        {},
        [
            ("stderr", "loading", None, "load", False),
            ("stderr", "warm", None, "warm up", False),
        ],
        id="lines after a phase marker are the phase's",
    ),
    pytest.param(
        [LOOP, b"a", mark("done", 0), b"b", b"c", mark("done", 1)],
        {"running": 5},
        [
            ("stderr", "a", 0, None, False),
            ("stderr", "b\nc", 1, None, False),
        ],
        id="lines between markers are the iteration the next marker names",
    ),
    pytest.param(
        [LOOP, mark("done", 0), b"Fatal Python error: Segmentation fault"],
        {"running": 1, "completed": 1},
        [("stderr", "Fatal Python error: Segmentation fault", 1, None, False)],
        id="a line after the last marker at the exit is the unfinished iteration's",
    ),
    pytest.param(
        [LOOP, b"before", mark("it", 3), b"print 3", mark("phase", "end"), b"after"],
        {},
        [
            ("stderr", "before", 3, None, False),
            ("stderr", "print 3", 3, None, False),
            ("stderr", "after", None, "end", False),
        ],
        id="a print's marker names its iteration for what waited and what follows",
    ),
    pytest.param(
        [LOOP, b"another thread", mark("phase", "end")],
        {"running": 7},
        [("stderr", "another thread", 7, None, True)],
        id="what waits when a phase begins goes to the running iteration, approximate",
    ),
    pytest.param(
        [LOOP, b"c++ warning", mark("done", 2)],
        {"markers": False, "running": 4},
        [("stderr", "c++ warning", 4, None, True)],
        id="no markers: the running iteration, approximate",
    ),
    pytest.param(
        [LOOP, b"x", mark("done", "x"), mark("it", "-1"), mark("done", "٣")],
        {},
        [
            ("bad", f"a marker with a bad iteration: {mark('done', 'x')!r}"),
            ("bad", f"a marker with a bad iteration: {mark('it', '-1')!r}"),
            ("bad", f"a marker with a bad iteration: {mark('done', '٣')!r}"),
            ("stderr", "x", 0, None, False),
        ],
        id="a marker with no iteration is a fault, not a line",
    ),
    pytest.param(
        [mark("loop", "start", SECRET), b"mine", mark("done", 9), mark("done", 0, SECRET)],
        {"prefix": SECRET},
        [("stderr", f"mine\n{mark('done', 9).decode()}", 0, None, False)],
        id="a marker without the secret is the model's own line",
    ),
    pytest.param(
        [
            mark("loop", "start", SECRET),
            b"mine",
            mark("done", 9, protocol.MARKER + b"guess "),
            mark("done", 0, SECRET),
        ],
        {"prefix": SECRET},
        [
            (
                "stderr",
                f"mine\n{mark('done', 9, protocol.MARKER + b'guess ').decode()}",
                0,
                None,
                False,
            )
        ],
        id="a marker with a wrong secret is the model's own line",
    ),
    pytest.param(
        [LOOP, b"step 0", mark("done", 0), b"step 1", mark("done", 1), b"step 2", mark("done", 2)],
        {},
        [
            ("stderr", "step 0", 0, None, False),
            (
                "stderr",
                "… the output above repeated 2 more times, through iteration 2; the last time:\n"
                f"step 2\n(every line is in {SIDE})",
                2,
                None,
                False,
            ),
        ],
        id="a block repeated but for its numbers is counted once",
    ),
    pytest.param(
        [b"retry 1", mark("phase", "load"), b"retry 2", mark("phase", "run"), b"other"],
        {},
        [
            ("stderr", "retry 1", None, "start", False),
            (
                "stderr",
                "… the output above repeated 1 more times, in load; the last time:\n"
                f"retry 2\n(every line is in {SIDE})",
                None,
                "load",
                False,
            ),
            ("stderr", "other", None, "run", False),
        ],
        id="a repeat ends where other output comes",
    ),
]


@pytest.mark.parametrize(("lines", "kw", "expected"), CASES)
def test_lines_are_attributed(
    lines: list[bytes], kw: dict[str, object], expected: list[tuple[object, ...]]
) -> None:
    assert attribute(lines, **kw) == expected  # type: ignore[arg-type]


def test_a_repeat_names_where_it_began() -> None:
    a = Attribution(markers=True, side_file=SIDE)
    lines = [LOOP]
    for i in range(5):
        lines += [f"loss {i}".encode(), mark("done", i)]
    a.feed(lines, 0)
    closing = a.end(5)[-1]
    assert closing.data == {"repeats": 4, "first_iteration": 0} and closing.iteration == 4


def test_markers_are_counted_and_never_kept_as_output() -> None:
    a = Attribution(markers=True, side_file=SIDE)
    fed = a.feed([LOOP, b"a", mark("done", 0), mark("it", 1), b"b", mark("done", 1)], 0)
    assert a.iteration_markers == 3
    assert fed.plain == [b"a", b"b"], "the side file gets the lines, not the markers"


def test_a_line_waits_until_the_counter_proves_its_iteration() -> None:
    a = Attribution(markers=True, side_file=SIDE)
    assert a.feed([LOOP, b"compiling"], 5).out == []
    assert a.pending
    assert a.settle(count0=5, completed=6) == [], "a later iteration began: not proven"
    assert a.pending
    settled = a.settle(count0=6, completed=6) + a.idle()  # the block closes when the pipe idles
    assert [summary(e) for e in settled] == [("stderr", "compiling", 6, None, False)]
    assert not a.pending and a.end(9) == []


def test_an_idle_pipe_ends_the_open_block() -> None:
    a = Attribution(markers=True, side_file=SIDE)
    dump = "[DUMP graph_executor.cpp:1] "
    lines = [mark("it", 2), (dump + "Optimized Graph:").encode(), (dump + "graph():").encode()]
    assert a.feed(lines, 2).out == [], "a dump may go on"
    (event,) = a.idle()
    assert (event.kind, event.title, event.text, event.iteration) == (
        "jit",
        "Optimized Graph",
        "graph():",
        2,
    )


def test_a_flood_waiting_for_its_marker_goes_on_approximately() -> None:
    a = Attribution(markers=True, side_file=SIDE)
    line = b"x" * 1000
    n = MAX_PENDING_CHARS // len(line) + 1
    out = [*a.feed([LOOP, *[line] * n], 3).out, *a.idle()]
    assert not a.pending, "memory stays bounded"
    assert [(e.iteration, e.data.get("approx_iteration")) for e in out] == [(3, True)]
    (block,) = out
    assert isinstance(block, Event) and block.data["lines"] == n


def test_a_flood_of_distinct_blocks_keeps_only_the_first_ones() -> None:
    def word(i: int) -> str:  # distinct even with its digits masked
        letters = string.ascii_lowercase
        return "".join(letters[(i // 26**k) % 26] for k in range(3))

    extra = 25
    a = Attribution(markers=True, side_file=SIDE)
    lines = [LOOP]
    for i in range(MAX_STDERR_EVENTS + extra):
        lines += [f"block {word(i)}".encode(), mark("done", i)]
    fed = a.feed(lines, 0)
    assert len(fed.out) == MAX_STDERR_EVENTS and len(fed.plain) == MAX_STDERR_EVENTS + extra
    (info,) = a.end(MAX_STDERR_EVENTS + extra)
    assert (
        info.kind == "info"
        and info.title == f"{extra} more blocks of the child's output are only in {SIDE}"
    )


def test_a_marker_in_a_later_batch_names_what_waited() -> None:
    """Batches follow one another: what waits in one is resolved by a marker in the next."""
    a = Attribution(markers=True, side_file=SIDE)
    assert a.feed([LOOP, b"first half"], 0).out == []
    assert [summary(e) for e in a.feed([mark("done", 4)], 4).out] == [
        ("stderr", "first half", 4, None, False)
    ]
