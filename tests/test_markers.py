"""Log lines on fd 2 pinned to the exact iteration that printed them, by the agent's markers.

With the SIGIO watch (the default on Linux) the agent writes a marker only after an iteration
that wrote to fd 2; with ``WARMSCOPE_MARK_EVERY_ITERATION`` after every iteration. Both must
attribute exactly: real children, real torch, real pipes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.conftest import PLANTED, TARGETS
from warmscope.core.child.agent import MARK_EVERY_ITERATION
from warmscope.core.data.run import Cursor, Event
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.session import RunSession

LATE_LOG = TARGETS / "late_log.py"
SCHEMES = ["watch", "every"]
LINUX = sys.platform.startswith("linux")


def settings_for(target: str, scheme: str, **kw: object) -> RunSettings:
    settings = RunSettings(target=target, jit_log="profiling_graph_executor_impl", **kw)  # type: ignore[arg-type]
    settings.set("intra_op_threads=1")
    if scheme == "every":
        settings.env[MARK_EVERY_ITERATION] = "1"
    return settings


def run_to_end(settings: RunSettings, tmp_path: Path) -> RunSession:
    session = RunSession(settings, record_path=tmp_path / "run.jsonl")
    session.start()
    assert session.wait(120), "the run ended"
    return session


def where(events: list[Event], kind: str) -> dict[str, list[int | None]]:
    found: dict[str, list[int | None]] = {}
    for e in events:
        if e.kind == kind:
            found.setdefault(e.title, []).append(e.iteration)
    return found


@pytest.mark.parametrize("scheme", ["watch", "claims_sigio"])
def test_a_late_first_compile_is_pinned_to_its_iteration(scheme: str, tmp_path: Path) -> None:
    """A scripted part first called in iteration 40 of an eager model: its executor's profiling
    run logs in 40 and its optimization in 41, a Python print in 45, a raw fd-2 write in 47;
    nothing else prints in the loop. ``claims_sigio``: the same model from a factory that takes
    SIGIO for itself; the agent's watch gives way to a marker after every iteration (as
    ``WARMSCOPE_MARK_EVERY_ITERATION`` asks for), and every line is still exact."""
    from tests.targets.late_log import ITERS, LATE, PRINT, RAW

    factory = "late" if scheme == "watch" else "claims_sigio"
    settings = settings_for(f"{LATE_LOG}:{factory}", "watch", iters=ITERS)
    settings.set("mode=eager")
    session = run_to_end(settings, tmp_path)
    data = session.data
    assert data.status == "ok" and data.count == ITERS
    in_loop = [e for e in data.events if e.iteration is not None]
    jit = where(in_loop, "jit")
    assert jit["Profiled Graph"] == [LATE]
    assert jit["Optimized Graph"] == [LATE + 1]
    assert {i for e in in_loop if e.kind == "jit" for i in [e.iteration]} == {LATE, LATE + 1}
    stderr = {e.text.strip(): e for e in in_loop if e.kind == "stderr"}
    assert stderr[f"python print in call {PRINT}"].iteration == PRINT
    assert stderr[f"raw write in call {RAW}"].iteration == RAW
    assert not any(e.data.get("approx_iteration") for e in in_loop), "every line exact"
    if scheme == "claims_sigio" or not LINUX:
        assert session.iteration_markers >= ITERS
    else:
        # Markers after the four iterations that printed (and none after the others).
        assert session.iteration_markers <= 6, session.iteration_markers


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_profiling_executors_first_iterations_of_a_scripted_model(
    scheme: str, tmp_path: Path
) -> None:
    settings = settings_for("sample:speech", scheme, iters=30)
    settings.apply_preset("torchscript")
    session = run_to_end(settings, tmp_path)
    data = session.data
    assert data.status == "ok" and data.count == 30
    jit = where([e for e in data.events if e.iteration is not None], "jit")
    assert jit["Profiled Graph"] == [0]
    assert jit["Optimized Graph"] == [1]
    assert data.label(0) == "profiling run" and data.label(1) == "optimization"
    assert all(data.label(i) is None for i in range(2, 30))
    if scheme == "watch" and LINUX:
        assert session.iteration_markers <= 4, session.iteration_markers


def test_a_line_shows_while_its_long_iteration_still_runs(tmp_path: Path) -> None:
    """No marker until the iteration ends, yet its line arrives, exact, while it runs: the
    shared counter proves the iteration."""
    from tests.targets.late_log import LONG

    settings = settings_for(f"{LATE_LOG}:long_line", "watch", iters=LONG + 3)
    settings.set("mode=eager")
    session = RunSession(settings, record_path=tmp_path / "run.jsonl")
    session.start()
    cursor = Cursor()
    try:
        deadline = time.monotonic() + 60
        seen: list[Event] = []
        while time.monotonic() < deadline and not seen:
            update = session.poll(cursor)
            seen = [e for e in update.events if "then a wait" in e.text]
            time.sleep(0.05)
        assert seen and seen[0].iteration == LONG
        assert not seen[0].data.get("approx_iteration")
        assert session.ring.completed() == LONG, "seen while its iteration still ran"
    finally:
        assert session.wait(60)


def test_what_a_crashing_iteration_printed_is_pinned_to_it(tmp_path: Path) -> None:
    """A segfault in iteration K leaves no marker: what the iteration printed (the fault
    handler's report) is the unfinished iteration's, the one the shared counter names."""
    from tests.conftest import K

    settings = settings_for(f"{PLANTED}:segfault", "watch", inputs=["4"], iters=20)
    settings.set("mode=eager")
    session = run_to_end(settings, tmp_path)
    assert session.data.status == "crashed"
    fault = [e for e in session.data.events if "Segmentation fault" in e.text]
    assert fault and fault[0].iteration == K
    assert not fault[0].data.get("approx_iteration")


def test_a_flood_within_one_iteration_stays_in_it(tmp_path: Path) -> None:
    """8 MB written in iteration K, eight times what is held back for a marker
    (``attribution.MAX_PENDING_CHARS``): held back only up to that bound, then counted
    against the iteration running; memory stays bounded either way."""
    from tests.conftest import K
    from warmscope.core.run.attribution import MAX_PENDING_CHARS

    settings = settings_for(f"{PLANTED}:floods", "watch", inputs=["4"], iters=40)
    settings.set("mode=eager")
    flood_mb = 8
    assert flood_mb << 20 >= 8 * MAX_PENDING_CHARS, "well past what is held back"
    settings.env["FLOOD_MB"] = str(flood_mb)
    session = run_to_end(settings, tmp_path)
    assert session.data.status == "ok"
    flood = [e for e in session.data.events if e.kind == "stderr" and "flood" in e.text]
    assert flood and {e.iteration for e in flood} == {K}


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_watch_never_cuts_a_models_write_short(scheme: str, tmp_path: Path) -> None:
    """Writes of 256 KiB at once into the stderr pipe, from two threads: each is written whole
    (the watch's SIGIO is never delivered to a thread of the model), and stays in its iteration."""
    from tests.targets.late_log import BIG

    settings = settings_for(f"{LATE_LOG}:big_writes", scheme, iters=12)
    settings.set("mode=eager")
    session = run_to_end(settings, tmp_path)
    assert session.data.status == "ok", session.data.status_detail
    blobs = [e for e in session.data.events if e.kind == "stderr"]
    assert {e.iteration for e in blobs} == {0, 5, 10}
    assert not any(e.data.get("approx_iteration") for e in blobs)
    written = session.stderr_path.stat().st_size
    assert written >= 6 * (BIG - 64), "every byte reached the side file"
