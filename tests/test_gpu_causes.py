"""Every GPU warm-up cause named from evidence: table-driven over the records, traces and
stderr of warmscope's runs on a real H100 (tests/data/gpu_h100), read here without a GPU."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from warmscope.core.data import cause_kinds as names
from warmscope.core.data import causes, trace_evidence
from warmscope.core.data.record import read_run
from warmscope.core.output.digest import digest
from warmscope.core.output.report import report
from warmscope.core.output.text_views import render_summary

RUNS = Path(__file__).parent / "data" / "gpu_h100" / "runs"


def record(name: str) -> Path:
    (path,) = [p for p in (RUNS / name).glob("*.jsonl") if "." not in p.stem]
    return path


def named(name: str) -> dict[object, set[str]]:
    """Each iteration's (or phase's) cause names in the record ``name``."""
    data = read_run(record(name))
    out: dict[object, set[str]] = {}
    for c in causes.run_causes(data, trace_evidence.for_run(data)):
        out.setdefault(c.phase if c.phase is not None else c.iteration, set()).add(c.name)
    return out


LAZY = names.LAZY_LOADING
CUBLAS = names.CUBLAS_FIRST_USE
CUDNN = names.CUDNN_FIRST_USE
TUNED = names.CUDNN_AUTOTUNING
TUNED_FIRST = names.CUDNN_AUTOTUNING + " with cuDNN's first use"
FIRST_USE = names.CUDA_FIRST_USE

# (record, iteration or phase, the causes it must name, the ones it must not)
TABLE = [
    # A CNN's first eager call: lazy loading, cuBLAS and cuDNN first use, not "kernel selection".
    ("cnn-eager", 0, {LAZY, CUBLAS, CUDNN, names.ALLOCATOR}, {TUNED}),
    ("cnn-eager", "cuda init", {names.CONTEXT}, set()),
    # cudnn_benchmark on, three shapes, profiled: the autotuner in each shape's first call.
    ("cnn-eager-3shapes-cudnn-profiled", 0, {TUNED_FIRST, CUBLAS, LAZY}, {CUDNN}),
    ("cnn-eager-3shapes-cudnn-profiled", 1, {TUNED}, {LAZY, CUBLAS}),
    ("cnn-eager-3shapes-cudnn-profiled", 2, {TUNED}, {CUBLAS}),
    # The same run unprofiled: the settings name the autotuner, the first call its first use.
    ("cnn-eager-3shapes-cudnn-on", 0, {FIRST_USE, TUNED}, set()),
    ("cnn-eager-3shapes-cudnn-on", 1, {TUNED}, {FIRST_USE}),
    ("cnn-eager-3shapes-cudnn-on", 2, {TUNED}, {FIRST_USE}),
    ("cnn-eager-3shapes-cudnn-off", 0, {FIRST_USE}, {TUNED}),
    # CUDA_MODULE_LOADING=EAGER: the libraries load whole, in cuda init and at first use.
    (
        "cnn-eager-module-loading-EAGER",
        "cuda init",
        {names.CONTEXT + " with eager module loading"},
        set(),
    ),
    ("cnn-eager-EAGER-profiled", 0, {CUDNN, CUBLAS}, {LAZY}),
    ("cnn-eager-module-loading-LAZY", "cuda init", {names.CONTEXT}, set()),
    # A scripted CNN: the profiling run is named, and so is the CUDA first use inside it.
    ("cnn-script-cudnn-3shapes", 0, {names.PROFILING_RUN, FIRST_USE, TUNED}, set()),
    ("cnn-script-cudnn-3shapes", 1, {names.OPTIMIZATION, TUNED}, set()),
    ("cnn-script-cudnn-3shapes", 2, {TUNED, LAZY}, set()),
    # torch.compile on CUDA: the compile, CUDA graph warm-up then recording, Triton autotuning.
    (
        "transformer-compile-reduce-overhead",
        0,
        {names.COMPILE, names.GRAPH_WARMUP},
        {names.GRAPH_RECORDING},
    ),
    ("transformer-compile-reduce-overhead", 1, {names.GRAPH_RECORDING}, {names.COMPILE}),
    (
        "transformer-compile-max-autotune-nocg",
        0,
        {names.COMPILE, names.TRITON_AUTOTUNING},
        {names.GRAPH_WARMUP},
    ),
    # Recorded by this warmscope (device time, profiles with a cuda summary, the first call of
    # a scripted model profiled on CUDA): the executor's share apart from the CUDA first use,
    # and the part of the measured call its profiled twin did not see.
    (
        "cnn-script-cudnn-3shapes-device-time",
        0,
        {names.PROFILING_RUN, TUNED_FIRST, CUBLAS, LAZY, names.UNSEEN},
        set(),
    ),
    ("cnn-script-cudnn-3shapes-device-time", 1, {names.OPTIMIZATION, TUNED}, {CUBLAS}),
    ("cnn-script-cudnn-3shapes-device-time", 2, {TUNED, LAZY}, set()),
    # The first CUDA run on a machine just started: its first call read the libraries it used
    # from disk, which the explaining process, started after it, found cached.
    (
        "cnn-script-cold-page-cache",
        0,
        {names.DISK_READS, names.UNSEEN, names.PROFILING_RUN, CUBLAS, CUDNN, LAZY},
        set(),
    ),
    ("cnn-script-cold-page-cache", 1, {names.OPTIMIZATION}, {names.DISK_READS}),
    # The same, unexplained, by the warmscope that also counts what each setup phase read.
    ("cnn-script-cold-page-cache-phases", "import torch", {names.DISK_READS}, set()),
    ("cnn-script-cold-page-cache-phases", "cuda init", {names.CONTEXT}, {names.DISK_READS}),
    ("cnn-script-cold-page-cache-phases", 0, {names.DISK_READS, FIRST_USE}, set()),
]


@pytest.mark.parametrize(("name", "at", "must", "must_not"), TABLE)
def test_each_h100_first_call_is_explained_by_its_causes(
    name: str, at: object, must: set[str], must_not: set[str]
) -> None:
    found = named(name).get(at, set())
    assert must <= found, f"{name} {at}: {found}"
    assert not (must_not & found), f"{name} {at}: {found}"


def test_a_cold_page_cache_names_what_the_explaining_profile_could_not_see() -> None:
    data = read_run(record("cnn-script-cold-page-cache"))
    found = {
        (c.iteration, c.name): c for c in causes.run_causes(data, trace_evidence.for_run(data))
    }
    reads = found[(0, names.DISK_READS)]
    assert reads.ms is None, "the counters say how much was read, not how long it took"
    assert reads.evidence.startswith("199 MiB read from disk and 63 major page faults in this")
    unseen = found[(0, names.UNSEEN)]
    assert unseen.ms == pytest.approx(309.465179)
    assert "this call read 199 MiB from disk" in unseen.evidence
    assert [(r.first, r.calls) for r in data.disk_reads] == [(0, 1)], "one batch, the first call"


def test_what_each_setup_phase_read_on_a_cold_machine_is_said_under_the_phases() -> None:
    data = read_run(record("cnn-script-cold-page-cache-phases"))
    assert data.phase_reads["import torch"] == (930189312, 308)
    text = render_summary(data)
    assert "import torch: reads from disk (887 MiB and 308 major page faults)" in text
    assert "cuda init: reads from disk" not in text, "28 KiB is not named"


def test_the_timed_causes_are_what_the_evidence_times() -> None:
    data = read_run(record("cnn-eager-3shapes-cudnn-profiled"))
    found = {
        (c.iteration, c.name): c for c in causes.run_causes(data, trace_evidence.for_run(data))
    }
    # iteration 1 (a new shape): the autotuner's time in aten::cudnn_convolution, against steady.
    tuned = found[(1, TUNED)]
    assert tuned.ms is not None and 100 < tuned.ms < data.latency(1) * 1.1
    assert "timing calls in aten::cudnn_convolution" in tuned.evidence
    # Under reduce-overhead: the recording's own callback time, the warm-up the call's rest.
    data = read_run(record("transformer-compile-reduce-overhead"))
    found = {(c.iteration, c.name): c for c in causes.run_causes(data)}
    assert found[(1, names.GRAPH_RECORDING)].ms == pytest.approx(22.442831)
    compile_ms = found[(0, names.COMPILE)].ms
    assert compile_ms == pytest.approx(3322.277021)
    warmup = found[(0, names.GRAPH_WARMUP)].ms
    assert warmup == pytest.approx(data.latency(0) - compile_ms)


def test_a_warning_never_titles_a_call_that_compiled() -> None:
    data = read_run(record("transformer-compile-reduce-overhead"))
    rows = {row.iteration: row for row in digest(data).warmup}
    assert rows[0].label_text.startswith("the compile")
    assert rows[0].titles[0] == "compile 0/0 (dynamo)"  # the warning after what the call did
    assert rows[1].label_text.startswith("CUDA graph recording")
    text = render_summary(data)
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("#0"))
    assert line.index("the compile") < line.index("UserWarning")


def test_report_explains_an_h100_record_with_todays_rules() -> None:
    text = report(read_run(record("cnn-eager")))
    assert "## Why the slow calls were slow" in text
    assert "cuBLAS first use" in text and "CUDA lazy module loading" in text
    assert "kernel selection/allocation" not in text  # the stored label is not trusted
    text = report(read_run(record("transformer-compile-reduce-overhead")))
    assert "| #0 | the compile |" in text and "| #1 | CUDA graph recording |" in text
    assert "compiled 1 time(s)" in text  # the recording is not a compile


def test_without_its_traces_a_record_is_explained_from_its_profile_lines(tmp_path: Path) -> None:
    src = record("cnn-eager-3shapes-cudnn-profiled")
    copy = tmp_path / src.name
    shutil.copy(src, copy)  # the record alone: no trace beside it, none where it names them
    data = read_run(copy)
    assert trace_evidence.for_run(data)(0) is None
    found = {(c.iteration, c.name) for c in causes.run_causes(data, trace_evidence.for_run(data))}
    assert {(0, TUNED_FIRST), (0, LAZY), (0, CUBLAS), (1, TUNED)} <= found


def test_a_trace_is_found_beside_its_record_gzipped() -> None:
    data = read_run(record("cnn-eager"))
    profile = data.profiles[0]
    assert not Path(profile["trace"]).exists()  # the GPU machine's path
    evidence = trace_evidence.for_run(data)(0)
    assert evidence is not None and evidence.source == "trace"
    assert evidence.count(trace_evidence.MODULE_LOADING) == 13  # 3 modules, 10 functions


def test_a_trace_that_is_no_file_or_too_large_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)  # opened, it would block: never opened
    assert trace_evidence.load(str(fifo), None) is None
    assert trace_evidence.load("/dev/zero", None) is None
    big = tmp_path / "big.trace.json"
    with open(big, "wb") as f:
        f.truncate(trace_evidence.MAX_TRACE_BYTES + 1)
    assert trace_evidence.load(str(big), None) is None
    bad = tmp_path / "bad.trace.json"
    bad.write_text('{"traceEvents": [1, "x", {"ph": "X", "cat": "kernel", "dur": "NaN"}]}')
    assert trace_evidence.load(str(bad), None) is not None  # odd events skipped, not raised


def test_a_profiling_runs_own_share_is_its_profiled_call_less_the_cuda_first_use() -> None:
    data = read_run(record("cnn-script-cudnn-3shapes-device-time"))
    found = {
        (c.iteration, c.name): c for c in causes.run_causes(data, trace_evidence.for_run(data))
    }
    profile = data.profiles[0]
    cuda_ms = sum(
        c.ms or 0.0
        for (i, name), c in found.items()
        if i == 0 and name not in (names.PROFILING_RUN, names.UNSEEN)
    )
    assert found[(0, names.PROFILING_RUN)].ms == pytest.approx(profile["wall_ms"] - cuda_ms)
    unseen = found[(0, names.UNSEEN)]
    assert unseen.ms == pytest.approx(data.latency(0) - profile["wall_ms"])


def test_the_profile_lines_own_cuda_summary_serves_without_the_trace(tmp_path: Path) -> None:
    src = record("cnn-script-cudnn-3shapes-device-time")
    for name in (src.name, src.with_suffix("").name + ".explain.jsonl"):
        shutil.copy(src.with_name(name), tmp_path / name)
    data = read_run(tmp_path / src.name)
    assert "cuda" in data.profiles[1] and trace_evidence.for_run(data)(1) is None
    evidence = trace_evidence.from_profile(data.profiles[1])
    assert evidence.source == "profile" and evidence.complete
    assert evidence.inside_count("aten::cudnn_convolution", trace_evidence.TIMING) > 0
    found = {(c.iteration, c.name) for c in causes.run_causes(data, trace_evidence.for_run(data))}
    assert {(1, TUNED), (2, TUNED), (0, TUNED_FIRST)} <= found


def test_the_json_document_carries_each_cause() -> None:
    from warmscope.core.data.document import to_document

    doc = to_document(read_run(record("transformer-compile-reduce-overhead")))
    named = {(c["iteration"], c["name"]) for c in doc["causes"]}
    assert {(0, names.COMPILE), (0, names.GRAPH_WARMUP), (1, names.GRAPH_RECORDING)} <= named
    assert all(set(c) >= {"name", "iteration", "ms", "evidence", "source"} for c in doc["causes"])
