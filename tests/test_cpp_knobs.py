"""The knobs and inputs of ``--runtime cpp``, each as the Python agent has it: the same settings
give the same executor dumps in the same iterations, the same input values from the same seed,
the same phases; what this libtorch cannot do is refused as in Python. Real children of both
runtimes."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from tests.conftest import warmscope
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.session import RunSession


def run(target: Path, tmp_path: Path, runtime: str = "cpp", **kw: object) -> RunData:
    knobs: list[str] = kw.pop("knobs", [])  # type: ignore[assignment]
    settings = RunSettings(target=str(target), **kw)  # type: ignore[arg-type]
    for knob in [f"runtime={runtime}", "intra_op_threads=1", *knobs]:
        settings.set(knob)
    session = RunSession(settings, record_path=tmp_path / f"{runtime}-{time.time_ns()}.jsonl")
    session.start()
    assert session.wait(120)
    assert session.data.status == "ok", session.data.status_detail
    return session.data


def dumps(data: RunData) -> list[tuple[str, int | None]]:
    return [(e.title, e.iteration) for e in data.events if e.kind == "jit"]


@pytest.mark.parametrize(
    "knobs",
    [["profiling_executor=off"], ["num_profiled_runs=3"], ["graph_optimizer=off"]],
    ids=lambda k: k[0],
)
def test_executor_knobs_give_the_dumps_python_gives(
    knobs: list[str], cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """The TorchScript executor's settings, applied in C++ as their Python forms apply them:
    the profiling and optimization dumps land in the same iterations in both runtimes (none
    without the profiling executor; the optimization after three profiled runs)."""
    got = {
        runtime: dumps(
            run(
                cpp_archives / "speech.pt",
                tmp_path,
                runtime,
                inputs=["1x300x40"],
                iters=6,
                knobs=knobs,
            )
        )
        for runtime in ("python", "cpp")
    }
    assert got["cpp"] == got["python"]
    if knobs == ["num_profiled_runs=3"]:
        assert ("Optimized Graph", 3) in got["cpp"]
    else:
        assert not any(t in ("Profiled Graph", "Optimized Graph") for t, _ in got["cpp"])


def test_inputs_from_the_same_seed_hold_the_same_values(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """Each generator draws what Python's draws (a normal, a uniform, integers), seed 11."""
    printed = {}
    for runtime in ("python", "cpp"):
        data = run(
            cpp_archives / "echo.pt",
            tmp_path,
            runtime,
            inputs=["2x8", "2x8:uniform(-1,1)", "int64[16]:randint(0,100)"],
            seed=11,
            iters=2,
            jit_log="",
        )
        printed[runtime] = [e.text.strip() for e in data.events if "sums" in e.text]
    assert printed["cpp"] == printed["python"] and printed["cpp"], printed


def test_threads_freezing_dtype_and_the_feeding_settings(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path
) -> None:
    """Threads as the env reports them; freeze and optimize_for_inference as their own phases;
    dtype casts the float inputs; --gap, --fresh-inputs, --idle-probe and --replay-opening."""
    data = run(
        cpp_archives / "printer.pt",
        tmp_path,
        inputs=["2x8"],
        iters=4,
        gap=0.05,
        fresh_inputs=True,
        idle_probe=[0.01],
        replay_opening=True,
        knobs=[
            "inter_op_threads=1",
            "freeze=on",
            "optimize_for_inference=on",
            "dtype=float64",
            "grad_mode=inference_mode",
        ],
    )
    assert data.env["intra_op_threads"] == 1 and data.env["inter_op_threads"] == 1
    assert {"freeze", "optimize_for_inference"} <= set(data.phases)
    assert data.inputs == ["float64[2,8]"]
    starts = list(data.start_ms)
    assert all(b - a >= 50 for a, b in itertools.pairwise(starts)), starts
    assert len(data.idle_probe) == 1 and len(data.idle_probe[0]["ms"]) == 3
    assert len(data.opening["ms"]) == 3


def test_cpu_fusion_without_llvm_is_refused_as_in_python(
    cpp_agent: Path, cpp_archives: Path, tmp_path: Path, record_dir: Path
) -> None:
    """cpu_fusion=on on a torch built without LLVM: one line naming why, exit 2, both runtimes
    (where this torch has LLVM, the C++ run goes through)."""
    codes = {}
    for runtime in ("python", "cpp"):
        r = warmscope(
            "run",
            str(cpp_archives / "printer.pt"),
            "--runtime",
            runtime,
            "--input",
            "2x8",
            "--iters",
            "2",
            "--set",
            "cpu_fusion=on",
            "--no-explain",
        )
        codes[runtime] = r.code
        if r.code == 2:
            assert "LLVM" in r.stderr, r.stderr
    assert codes["cpp"] == codes["python"]


def test_dims_and_schedules(cpp_agent: Path, cpp_archives: Path, tmp_path: Path) -> None:
    """--dim makes one set of inputs per shape; ramp serves them in blocks, once each once."""
    data = run(
        cpp_archives / "printer.pt",
        tmp_path,
        inputs=["2xL"],
        dims=["L=4,8,16"],
        schedule="ramp",
        iters=6,
    )
    assert list(data.shape_of) == [0, 0, 1, 1, 2, 2]
    assert data.shape_keys == ["L=4", "L=8", "L=16"]
    once = run(
        cpp_archives / "printer.pt",
        tmp_path,
        inputs=["2xL"],
        dims=["L=4,8,16"],
        schedule="once",
        iters=50,
    )
    assert once.count == 3
