"""A watched process's stream folded into a run (``exec_fold.ProcessRun``), fed the bytes the
observer's own encoder writes (``exec_stream.encode``, ``encode_calls``): device times that
come out of order, events of calls still running, a stream that stops being the observer's.
The lines written fold back to the same run (the record is the run)."""

from __future__ import annotations

from typing import Any

from warmscope.core.child.exec_stream import encode, encode_calls
from warmscope.core.data import schema
from warmscope.core.data.run import RunData
from warmscope.core.run import exec_fold
from warmscope.core.run.exec_fold import ProcessRun

HELLO = {"t": "hello", "v": 1, "source": "exec", "pid": 4242, "ppid": 1, "argv": ["python", "s.py"],
         "executable": "/usr/bin/python3", "python": "3.11.7", "clock_ns": 1_000, "wall_ns": 0}  # fmt: skip
TABLES = [
    {"t": "thread", "th": 77, "name": "MainThread"},
    {"t": "module", "id": 0, "cls": "app.Net", "name": "Net", "kind": "eager", "params": 10},
    {"t": "module", "id": 1, "cls": "app.Head", "name": "Head", "kind": "eager", "params": 2},
    {"t": "signature", "id": 0, "text": "float32[8,64]@cuda:0"},
    {"t": "signature", "id": 1, "text": "float32[8]"},
]


def call(n: int, module: int, signature: int, start: int, ns: int) -> tuple[int, ...]:
    return (n, module, signature, 77, 1_000 + start, ns)


def fed(*messages: dict[str, Any] | bytes) -> tuple[ProcessRun, list[dict[str, Any]]]:
    written: list[dict[str, Any]] = []
    run = ProcessRun(written.append, ["warmscope", "exec"], "r1", None)
    run.feed(b"".join(m if isinstance(m, bytes) else encode(m) for m in (HELLO, *messages)))
    return run, written


def folded_again(lines: list[dict[str, Any]]) -> RunData:
    data = RunData()
    for line in lines:
        schema.check_line(line)
        schema.apply_line(data, line)
    return data


def test_device_times_land_on_their_calls_in_whatever_order_they_come() -> None:
    calls = [call(0, 0, 0, 0, 5_000), call(1, 1, 1, 6_000, 900), call(2, 0, 0, 7_000, 4_000)]
    run, written = fed(
        *TABLES,
        encode_calls(calls, [], 0),
        {"t": "device_ns", "n": [2], "dv": [3_000_000]},  # the GPU passed call 2's first
    )
    assert list(run.data.device_ns) == []  # call 0's time has not come: nothing placed yet
    run.feed(encode({"t": "device_ns", "n": [0], "dv": [2_000_000]}))
    assert list(run.data.device_ns) == [2_000_000, -1, 3_000_000]
    assert list(run.data.launch_ns) == [5_000, -1, 4_000]  # the host's time beside it
    assert run.data.shape_keys == ["Net(float32[8,64]@cuda:0)", "Head(float32[8])"]
    run.end("ok", "the program exited with 0", 0)
    again = folded_again(written)
    assert list(again.device_ns) == list(run.data.device_ns)
    assert again.shape_keys == run.data.shape_keys and again.count == 3


def test_a_device_time_may_come_before_its_call() -> None:
    """The observer reads a call's CUDA events once the GPU passed them: that can be before
    the batch that holds the call is sent."""
    run, _ = fed(
        *TABLES,
        {"t": "device_ns", "n": [0], "dv": [2_500_000]},
        encode_calls([call(0, 0, 0, 0, 5_000)], [], 0),
    )
    assert list(run.data.device_ns) == [2_500_000]
    assert list(run.data.launch_ns) == [5_000]


def test_a_gpu_call_whose_time_never_comes_is_not_timed_at_the_end() -> None:
    run, _ = fed(*TABLES, encode_calls([call(0, 0, 0, 0, 5_000), call(1, 1, 1, 9_000, 10)], [], 0))
    assert list(run.data.device_ns) == []
    run.end("ok", "", 0)
    assert list(run.data.device_ns) == [-1, -1]


def test_events_wait_for_their_call_and_what_never_ends_is_bounded() -> None:
    compile_event = {"t": "event", "kind": "compile", "title": "compile 0/0", "ms": 4.0, "call": 0}
    run, _ = fed(*TABLES, compile_event)
    assert run.data.events == []  # call 0 is still running
    run.feed(encode_calls([call(0, 0, 1, 0, 5_000_000)], [0], 0))
    assert [(e.kind, e.iteration) for e in run.data.events] == [("compile", 0), ("error", 0)]
    # a stream that pins events to calls that never end: held up to a bound, then outside
    many = b"".join(
        encode({"t": "event", "kind": "info", "title": f"e{n}", "call": 10**6 + n})
        for n in range(exec_fold.MAX_WAITING + 5)
    )
    run.feed(many)
    outside = [e for e in run.data.events if e.phase == exec_fold.OUTSIDE]
    assert len(outside) == 5
    run.end("ok", "", 0)
    assert sum(1 for e in run.data.events if "unfinished" in e.title) == exec_fold.MAX_WAITING


def test_a_line_that_is_not_the_observers_ends_the_reading_and_keeps_the_rest() -> None:
    run, _ = fed(*TABLES, encode_calls([call(0, 0, 1, 0, 1_000)], [], 0), b"\x1b[2J{oops\n")
    assert run.broken and run.data.count == 1
    run.feed(encode_calls([call(1, 0, 1, 2_000, 1_000)], [], 0))  # read no more
    assert run.data.count == 1
    titles = [e.title for e in run.data.events]
    assert titles and titles[0].startswith("stream dropped: a line that is not the observer's")
    assert all("\x1b" not in t for t in titles)


def test_the_bootstrap_reads_the_names_warmscope_sets() -> None:
    """The bootstrap loads before any package can (it is a file on ``PYTHONPATH``): it spells
    the environment's names itself, and they are the ones the session sets."""
    import ast
    from pathlib import Path

    from warmscope.core.child import exec_stream

    boot = Path(exec_stream.__file__).parent / "exec_boot" / "sitecustomize.py"
    names = {
        node.targets[0].id: node.value.value
        for node in ast.parse(boot.read_text()).body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id.endswith("_ENV")
        and isinstance(node.value, ast.Constant)
    }
    assert names == {
        "SOCKET_ENV": exec_stream.SOCKET_ENV,
        "LOG_ENV": exec_stream.LOG_ENV,
        "WATCH_ENV": exec_stream.WATCH_ENV,
    }
