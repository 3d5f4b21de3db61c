"""Device time beside host time: the ``device`` record line (packed like ``iters``), its fold,
what a run's summary says of it, and the CPU path without it. (The CUDA path, CUDA events
around each call, runs in tests/gpu.)"""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest

from warmscope.core.data import packing
from warmscope.core.data.document import read_document, to_document
from warmscope.core.data.fold import device_line, iterations_line
from warmscope.core.data.record import read_run
from warmscope.core.data.run import RunData
from warmscope.core.data.schema import apply_line, check_line
from warmscope.core.data.summary_rows import device_summary
from warmscope.core.output.text_views import render_summary

DATA = Path(__file__).parent / "data"


def test_device_columns_pack_and_unpack_exactly() -> None:
    dv = [324_512, -1, 2**40, 0, 7]
    ln = [310_000, -1, 5, 0, 2**62]
    z = packing.pack_columns([dv, ln])
    assert z is not None
    got = packing.unpack_columns(z, len(dv), 2)
    assert [list(c) for c in got] == [dv, ln]


@pytest.mark.parametrize(
    ("n", "k", "what"),
    [
        (6, 2, "shorter than|unknown type"),
        (4, 2, "longer than|unknown type"),
        (5, 3, "shorter than|unknown type"),
        (packing.MAX_BATCH + 1, 2, "beyond"),
    ],
)
def test_device_columns_that_do_not_hold_together_are_refused(n: int, k: int, what: str) -> None:
    z = packing.pack_columns([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]])
    with pytest.raises(ValueError, match=what):
        packing.unpack_columns(z, n, k)


def test_a_device_bomb_is_refused_before_it_inflates() -> None:
    # A column of equal values deflates to almost nothing: declare far more than it holds.
    z = packing.pack_columns([[0] * 1000, [0] * 1000])
    with pytest.raises(ValueError):
        packing.unpack_columns(z, 2_000_000, 2)


def run_of(host_us: list[int], device_us: list[int], launch_us: list[int]) -> RunData:
    """A run folded from its record lines, as a session folds them."""
    data = RunData()
    ns = [h * 1000 for h in host_us]
    st = [sum(ns[:i]) for i in range(len(ns))]
    for line in (
        iterations_line(0, ns, st),
        device_line(0, [d * 1000 for d in device_us], [x * 1000 for x in launch_us]),
    ):
        check_line(line)
        apply_line(data, json.loads(json.dumps(line)))
    return data


def test_a_launch_bound_call_returns_from_forward_only_at_its_end() -> None:
    n = 60
    data = run_of([5000] + [300] * (n - 1), [4900] + [270] * (n - 1), [4000] + [290] * (n - 1))
    device = device_summary(data)
    assert device is not None
    assert device["bound"] == "launch-bound"
    assert device["p50_ms"] == pytest.approx(0.27) and device["host_p50_ms"] == pytest.approx(0.3)
    assert device["launch_share"] == pytest.approx(290 / 300)
    text = render_summary(data)
    assert "device     p50 270 µs on the device, 90% of the host's 300 µs" in text
    assert "launch-bound" in text


def test_a_device_bound_call_queues_its_work_and_waits() -> None:
    data = run_of([900] * 40, [880] * 40, [60] * 40)
    device = device_summary(data)
    assert device is not None and device["bound"] == "device-bound"


def test_a_device_line_after_a_gap_fills_it_and_an_overlap_is_not_taken_twice() -> None:
    data = RunData()
    data.add_device(3, array("q", [10, 20]), array("q", [1, 2]))
    assert list(data.device_ns) == [-1, -1, -1, 10, 20]
    data.add_device(4, array("q", [99, 30]), array("q", [9, 3]))
    assert list(data.device_ns) == [-1, -1, -1, 10, 20, 30]
    assert data.device_ms(0) is None and data.device_ms(5) == pytest.approx(30e-6)


def test_the_json_document_keeps_device_time_and_reads_it_back(tmp_path: Path) -> None:
    data = run_of([500] * 30, [450] * 29 + [460], [300] * 30)
    doc = to_document(data)
    assert doc["iterations"][0]["device_ms"] == 0.45 and doc["iterations"][0]["launch_ms"] == 0.3
    assert doc["summary"]["device"]["bound"] == "mixed"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    back = read_document(json.loads(path.read_text()), path)
    assert list(back.device_ns) == list(data.device_ns)
    assert list(back.launch_ns) == list(data.launch_ns)


def test_a_cpu_run_has_no_device_time_and_says_nothing_of_it() -> None:
    data = read_run(DATA / "speech-script.jsonl")
    assert not len(data.device_ns) and device_summary(data) is None
    doc = to_document(data)
    assert "device" not in doc["summary"]
    assert not any("device_ms" in row for row in doc["iterations"])
    assert "\ndevice " not in render_summary(data)


def test_a_device_line_of_the_wrong_shape_is_refused() -> None:
    for line in (
        {"type": "device", "i0": 0, "dv": [1, 2], "ln": [1]},
        {"type": "device", "i0": -1, "dv": [], "ln": []},
        {"type": "device", "i0": 0, "dv": ["x"], "ln": [1]},
        {"type": "device", "i0": 0, "n": 0, "z": ""},
    ):
        with pytest.raises(ValueError):
            check_line(line)


def test_the_chart_switches_to_device_time_only_where_the_run_has_it() -> None:
    from textual.pilot import Pilot

    from tests.tui_support import run
    from warmscope.tui.app import build_app
    from warmscope.tui.widgets.run.latency_chart import LatencyChart

    timed = run_of([5000] + [300] * 59, [4900] + [270] * 59, [4000] + [290] * 59)
    app = build_app(records=[read_run(DATA / "speech-script.jsonl"), timed])

    async def scenario(pilot: Pilot) -> None:
        chart = app.screen.query_one(LatencyChart)
        await pilot.press("d")
        assert not chart.device_time  # a CPU run: nothing to switch to
        app.viewer.show(app.runs[1])
        await pilot.pause()
        await pilot.press("d")
        assert chart.showing_device()
        assert chart.view is not None and chart.view.device_series.count == 60
        assert chart.view.device_series.head[1] == pytest.approx(0.27)
        await pilot.press("d")
        assert not chart.showing_device()

    run(app, scenario)


H100_DEVICE_TIME = DATA / "gpu_h100" / "runs" / "cnn-script-cudnn-3shapes-device-time"


def test_a_real_h100_record_has_each_calls_device_time_and_says_launch_bound() -> None:
    data = read_run(H100_DEVICE_TIME / "cnn.jsonl")
    assert len(data.device_ns) == data.count == 150
    assert all(v >= 0 for v in data.device_ns) and all(v >= 0 for v in data.launch_ns)
    device = device_summary(data)
    assert device is not None and device["bound"] == "launch-bound"
    assert device["p50_ms"] < device["host_p50_ms"]
    doc = to_document(data)
    assert doc["summary"]["device"]["bound"] == "launch-bound"
    assert doc["iterations"][20]["device_ms"] == pytest.approx(data.device_ns[20] / 1e6)
    text = render_summary(data)
    assert "\ndevice     p50 " in text and "launch-bound" in text


def test_the_chart_draws_a_real_h100_runs_device_time() -> None:
    from textual.pilot import Pilot

    from tests.tui_support import run
    from warmscope.tui.app import build_app
    from warmscope.tui.widgets.run.latency_chart import LatencyChart

    app = build_app(records=[H100_DEVICE_TIME / "cnn.jsonl"])

    async def scenario(pilot: Pilot) -> None:
        chart = app.screen.query_one(LatencyChart)
        await pilot.press("d")
        assert chart.showing_device()
        view = chart.view
        assert view is not None and view.device_series.count == 150
        assert view.device is not None and view.device["bound"] == "launch-bound"
        assert chart.border_title is not None and "device time" in str(chart.border_title)

    run(app, scenario)
