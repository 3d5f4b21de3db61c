"""Exports from the command line and the A/A check, on real children: ``run --json -``,
``export`` in each format, bad input in one line, and runs of the same settings never
called different by ``compare``, ``report`` or the TUI's compare.

The runs are real (a module's fixture, once); what ``export``, ``compare`` and ``report``
make of their records is the command line's own reading, checked through ``main()``
in-process (``cli``), with one real ``export`` process for its stdout byte for byte."""

from __future__ import annotations

import csv
import functools
import io
import json
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_in_process import main_here
from tests.conftest import Result, warmscope
from warmscope.core.data.record import read_run

ITERS = 30
TRIVIAL = ("sample:trivial", "--iters", str(ITERS))
CALLED = ("better", "worse")
Runs = tuple[Path, Result, Result, Result]
REPEAT = 2
"""The processes of ``run --repeat``: two a side when compared with the single runs."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Two single runs of the same settings (one through ``--json -``, one with ``--json
    PATH``) and a folder of two more, ``run --repeat 2`` (its sweep document through
    ``--json -`` too): six real children were four."""
    tmp = tmp_path_factory.mktemp("aa")
    a = warmscope(
        "run", *TRIVIAL, "--no-explain", "--record", str(tmp / "a.jsonl"), "--json", "-", cwd=tmp
    )
    b = warmscope(
        "run", *TRIVIAL, "--no-explain", "--record", str(tmp / "b.jsonl"), json_path=tmp / "b.json"
    )
    assert a.code == 0 and b.code == 0, a.stderr + b.stderr
    repeated = warmscope(
        "run", *TRIVIAL, "--repeat", str(REPEAT), "--json", "-", "--record", "rep", cwd=tmp
    )
    assert repeated.code == 0, repeated.stderr
    return tmp, a, b, repeated


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``warmscope ARGS`` through ``main()`` in-process (``cwd=`` where it runs)."""
    return functools.partial(main_here, capsys)


def test_run_json_dash_writes_the_document_to_stdout_alone(runs: Runs) -> None:
    tmp, a, _b, _rep = runs
    doc = json.loads(a.stdout)  # stdout is the document and nothing else
    assert doc["format"] == "warmscope-run" and len(doc["iterations"]) == ITERS
    assert "warmscope  sample:trivial" in a.stderr, "the summary went to stderr"
    assert not (tmp / "-").exists(), "no file named -"


def test_export_json_is_the_runs_json_document(runs: Runs, cli: Callable[..., Result]) -> None:
    tmp, a, _b, _rep = runs
    # Nothing normalised: the same document, byte for byte, from the record named as the
    # run named it (a real process: its stdout is the document alone).
    exported = warmscope("export", str(tmp / "a.jsonl"), "--format", "json")
    assert exported.code == 0, exported.stderr
    assert exported.stdout == a.stdout
    from_path = cli("export", str(tmp / "b.jsonl"), "--format", "json")
    assert from_path.stdout == (tmp / "b.json").read_text()
    # Named otherwise, only "record" differs: the path the record was read from.
    relative = json.loads(cli("export", "a.jsonl", "--format", "json", cwd=tmp).stdout)
    original = json.loads(a.stdout)
    assert relative["record"] == "a.jsonl"
    assert {k for k in original if original[k] != relative[k]} == {"record"}
    both = json.loads(cli("export", "a.jsonl", "b.jsonl", "--format", "json", cwd=tmp).stdout)
    assert [d["record"] for d in both] == ["a.jsonl", "b.jsonl"], "several: a list"


def test_export_csv_has_a_header_and_a_row_an_iteration(
    runs: Runs, cli: Callable[..., Result]
) -> None:
    tmp, a, _b, _rep = runs
    out = cli("export", "a.jsonl", "--format", "csv", cwd=tmp)
    assert out.code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "iteration,ms,start_ms,shape,label,profiled,device_ms,launch_ms"
    assert len(lines) == 1 + ITERS
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    doc = json.loads(a.stdout)
    assert [int(r["iteration"]) for r in rows] == list(range(ITERS))
    assert [float(r["ms"]) for r in rows] == [it["ms"] for it in doc["iterations"]]
    assert {r["profiled"] for r in rows} == {"false"}
    assert {r["device_ms"] for r in rows} == {r["launch_ms"] for r in rows} == {""}  # a CPU run
    assert [r["label"] for r in rows] == [it.get("label", "") for it in doc["iterations"]]
    many = cli("export", "a.jsonl", "b.jsonl", "--format", "csv", "-o", "ab.csv", cwd=tmp)
    assert many.code == 0 and many.stdout == "", many.stderr
    with (tmp / "ab.csv").open(newline="") as f:
        both = list(csv.DictReader(f))
    assert len(both) == 2 * ITERS and {r["run"] for r in both} == {"a.jsonl", "b.jsonl"}


def test_the_format_defaults_to_the_outputs_suffix_else_json(
    runs: Runs, cli: Callable[..., Result]
) -> None:
    tmp, a, _b, _rep = runs
    assert cli("export", str(tmp / "a.jsonl")).stdout == a.stdout
    assert cli("export", "a.jsonl", "-o", "a.csv", cwd=tmp).code == 0
    assert (tmp / "a.csv").read_text().startswith("iteration,ms,start_ms,")
    assert cli("export", "a.jsonl", "-o", "a.out", cwd=tmp).code == 0
    assert json.loads((tmp / "a.out").read_text())["format"] == "warmscope-run"


def test_export_md_is_the_report(runs: Runs, cli: Callable[..., Result]) -> None:
    tmp, *_ = runs
    md = cli("export", "a.jsonl", "--format", "md", cwd=tmp)
    assert md.code == 0 and md.stdout == cli("report", "a.jsonl", cwd=tmp).stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["missing.jsonl", "--format", "json"], "no such file"),
        (["a.stderr.txt", "--format", "csv"], "a.stderr.txt"),
        (["a.jsonl", "--format", "xml"], "invalid choice"),
        (["rep", "--format", "json"], "is a folder"),
        (["rep/sweep.json", "a.jsonl", "--format", "csv"], "sweep documents"),
        (["a.jsonl", "--format", "csv", "-o", "a.jsonl"], "also a record"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    runs: Runs, args: list[str], says: str, cli: Callable[..., Result]
) -> None:
    tmp, *_ = runs
    r = cli("export", *args, cwd=tmp)
    assert r.code == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_sweep_document_exports_as_itself_a_row_a_process_or_its_report(
    runs: Runs, cli: Callable[..., Result]
) -> None:
    tmp, *_ = runs
    rep = tmp / "rep"
    as_json = cli("export", "rep/sweep.json", cwd=tmp)
    assert as_json.code == 0, as_json.stderr
    assert as_json.stdout == (rep / "sweep.json").read_text(), "the document, byte for byte"
    doc = json.loads(as_json.stdout)
    rows = list(
        csv.DictReader(
            io.StringIO(cli("export", "rep/sweep.json", "--format", "csv", cwd=tmp).stdout)
        )
    )
    processes = doc["cells"][0]["processes"]
    assert len(rows) == len(processes) == REPEAT
    assert [r["record"] for r in rows] == [p["record"] for p in processes]
    assert [float(r["first_ms"]) for r in rows] == [p["first_ms"] for p in processes]
    md = cli("export", "rep/sweep.json", "-o", str(tmp / "rep.md"), cwd=tmp)
    assert md.code == 0 and "written to" in md.stderr
    assert (tmp / "rep.md").read_text() == cli("report", "rep/sweep.json", cwd=tmp).stdout


def test_json_dash_writes_a_sweeps_document_to_stdout_alone(runs: Runs) -> None:
    tmp, _a, _b, repeated = runs
    doc = json.loads(repeated.stdout)  # stdout is the document alone; the answer went to stderr
    assert doc == json.loads((tmp / "rep" / "sweep.json").read_text())
    assert doc["finished"] == REPEAT and len(doc["cells"][0]["processes"]) == REPEAT
    assert f"{REPEAT} processes" in repeated.stderr
    assert not (tmp / "-").exists()


def test_aa_compare_calls_nothing_different(runs: Runs, cli: Callable[..., Result]) -> None:
    tmp, *_ = runs
    one_each = cli("compare", "a.jsonl", "b.jsonl", cwd=tmp)
    assert one_each.code == 0, one_each.stderr
    for line in one_each.stdout.splitlines():
        assert not line.rstrip().endswith(CALLED), line
    first = next(x for x in one_each.stdout.splitlines() if x.startswith("first_ms"))
    assert first.rstrip().endswith("1 process each")
    # Machine-readable, and repeated sides (two records a side, a pattern's against a
    # folder's; a folder against one).
    for sides in (
        ["a.jsonl", "b.jsonl"],
        ["[ab].jsonl", "rep"],
        ["a.jsonl", "rep"],
        ["rep/sweep.json", "b.jsonl"],
    ):
        r = cli("compare", *sides, "--json", cwd=tmp)
        assert r.code == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["format"] == "warmscope-comparison"
        verdicts = [v for m in doc["metrics"] for v in m["verdicts"]]
        assert not [v for v in verdicts if v in CALLED], (sides, verdicts)
    assert [run["processes"] for run in doc["runs"]] == [REPEAT, 1]


def test_aa_report_hint_claims_no_difference(runs: Runs, cli: Callable[..., Result]) -> None:
    tmp, *_ = runs
    r = cli("report", "a.jsonl", "--against", "b.jsonl", cwd=tmp)
    assert r.code == 0, r.stderr
    hints = r.stdout.split("## Hints")[-1].split("## Reproduce")[0]
    assert not any(word in hints for word in CALLED)
    if "profiling executor's warm-up" in hints:  # the executor's warm-up was seen
        assert "same settings, so it cannot tell" in hints


def test_aa_tui_compare_calls_nothing_different(runs: Runs) -> None:
    from textual.pilot import Pilot

    from tests.tui_support import run, screen_text
    from warmscope.tui.app import build_app

    tmp, *_ = runs
    app = build_app(records=[tmp / "a.jsonl", tmp / "b.jsonl"])
    seen: list[str] = []

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("c")
        await pilot.pause()
        seen.append(screen_text(app))

    run(app, scenario, (120, 40))
    assert "can't tell" in seen[0]
    assert "better" not in seen[0] and "worse" not in seen[0]


def test_report_format_json_holds_the_document_hints_and_comparison(
    runs: Runs, cli: Callable[..., Result]
) -> None:
    tmp, a, *_ = runs
    r = cli("report", "a.jsonl", "--against", "b.jsonl", "--format", "json", cwd=tmp)
    assert r.code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "warmscope-report"
    assert doc["run"]["iterations"] == json.loads(a.stdout)["iterations"]
    assert doc["comparison"]["format"] == "warmscope-comparison"
    assert isinstance(doc["hints"], list)
    md = cli("report", "a.jsonl", "--format", "md", cwd=tmp)
    assert md.stdout == cli("report", "a.jsonl", cwd=tmp).stdout, "md: the default"


def test_run_repeat_is_a_sweep_of_one_cell_whose_figures_are_its_records(runs: Runs) -> None:
    """``run --repeat 2``: a sweep document of the run's one cell, its processes in turn, and
    its figures its records' own (first iterations, their medians, each iteration's)."""
    tmp, _a, _b, repeated = runs
    doc = json.loads(repeated.stdout)
    assert doc["format"] == "warmscope-sweep" and len(doc["cells"]) == 1
    assert doc["schedule"] == [[0, r] for r in range(REPEAT)]
    cell = doc["cells"][0]
    records = [read_run(tmp / p) for p in cell["runs"]]
    assert len(records) == REPEAT and all(d.count == ITERS for d in records)
    assert [round(d.ms[0], 6) for d in records] == cell["first_ms"]["values"]
    assert cell["first_ms"]["median"] == pytest.approx(statistics.median(d.ms[0] for d in records))
    for i, row in enumerate(cell["by_iteration"]):
        assert row["median"] == pytest.approx(statistics.median(d.ms[i] for d in records), abs=1e-6)
    assert cell["steady_p50_ms"]["values"] == [
        round(d.summary().p50_ms, 6)  # type: ignore[arg-type]
        for d in records
    ]
    # Its summary, the sweep's, went to stderr: it opens with the answer.
    assert f"answer     {doc['answer']}" in repeated.stderr.splitlines()
