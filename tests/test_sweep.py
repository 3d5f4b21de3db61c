"""`warmscope sweep` and `run --repeat`: real child processes, real torch, real records.

One real sweep of two presets serves every test that reads a finished sweep (its document,
its records, compare, report and open of it, from here and from elsewhere: it records under
a folder given relative to where it ran); one real sweep stopped with Ctrl-C serves the
stopped and the killed sweep's tests; what the command line decides before any child (usage
errors) and what compare and report print of a document are checked through ``main()``
in-process."""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import main_here
from tests.conftest import Result, warmscope
from warmscope.core.data.record import read_run

ONE_THREAD = ("--set", "intra_op_threads=1")


def started_ns(record: Path) -> int:
    """When a run began, from its run id (``PID-TIME_NS``)."""
    with record.open() as f:
        return int(json.loads(f.readline())["run_id"].rsplit("-", 1)[1])


RECORDS = "logs/sw"
"""The sweep's record folder, relative to the folder it runs in."""


@pytest.fixture(scope="module")
def two_presets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    """The sweep, run in ``tmp`` with ``--record logs/sw`` (relative): its document names its
    records relative to ``tmp`` (``ran_in``)."""
    tmp = tmp_path_factory.mktemp("sweep")
    result = warmscope(
        "sweep",
        "sample:trivial",
        "--preset",
        "torchscript,no-profiling",
        "--repeat",
        "2",
        "--iters",
        "12",
        *ONE_THREAD,
        "--record",
        RECORDS,
        json_path=tmp / "sweep.json",
        cwd=tmp,
        timeout=240,
    )
    return result, tmp


def test_two_preset_sweep_runs_interleaved(two_presets: tuple[Result, Path]) -> None:
    r, tmp = two_presets
    assert r.code == 0, r.stderr
    doc = r.doc
    assert doc is not None and doc["format"] == "warmscope-sweep"
    assert doc["stopped"] is False
    assert doc["schedule"] == [[0, 0], [1, 0], [0, 1], [1, 1]]
    assert [c["label"] for c in doc["cells"]] == ["torchscript", "no-profiling"]
    # The records really started in that order: A B A B.
    runs = {(c["index"], p["repeat"]): p["record"] for c in doc["cells"] for p in c["processes"]}
    by_time = sorted(runs, key=lambda key: started_ns(tmp / runs[key]))
    assert [list(k) for k in by_time] == doc["schedule"]
    for cell, preset in zip(doc["cells"], ("torchscript", "no-profiling"), strict=True):
        assert len(cell["runs"]) == 2
        assert cell["settings"]["preset"] == preset
        for path in cell["runs"]:
            data = read_run(tmp / path)
            assert data.status == "ok" and data.count == 12
            assert data.settings.preset == preset
        for metric in ("first_ms", "warmup_excess_ms", "steady_p50_ms", "setup_ms"):
            stat = cell[metric]
            assert set(stat) >= {"median", "lo", "hi", "values"}
            assert stat["lo"] <= stat["median"] <= stat["hi"]
            assert len(stat["values"]) == 2
        assert cell["by_iteration"][0]["median"] == cell["first_ms"]["median"]
        assert len(cell["by_iteration"]) == 12
        assert all(
            p["shape"] in ("flat", "warm-up", "slowdown", "no steady state")
            for p in cell["processes"]
        )
    assert doc["answer"] and doc["answer"] in r.stdout.splitlines()[0]
    assert [x["rank"] for x in doc["ranking"]] == [1, 2]
    # 2 processes each cannot reach 95%: no best, and not "within noise" either.
    assert [x["vs_best"] for x in doc["ranking"]] == ["best", "cannot tell"]
    assert doc["decided"] is False and not doc["adaptive"]
    assert "no setting is best beyond noise" in doc["answer"]
    assert "cannot tell 2 settings apart at 95%: --repeat 4 or more" in doc["answer"]
    lines = r.stdout.splitlines()
    assert lines[0] == f"answer     {doc['answer']}"
    assert any(line.endswith("50.0% intervals (2 processes; 6 reach 95%)") for line in lines)
    assert not any("95% interval" in line for line in lines)
    # The sweep's own record is the same document, beside its runs.
    saved = json.loads((tmp / RECORDS / "sweep.json").read_text())
    assert saved["answer"] == doc["answer"] and saved["schedule"] == doc["schedule"]


def test_compare_and_report_read_a_sweep(
    two_presets: tuple[Result, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    r, tmp = two_presets
    doc = r.doc
    assert doc is not None
    shown = main_here(capsys, "compare", str(tmp / "sweep.json"))
    assert shown.code == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == f"answer     {doc['answer']}"
    report = main_here(capsys, "report", str(tmp / RECORDS / "sweep.json"))
    assert report.code == 0, report.stderr
    assert f"**{doc['answer']}**" in report.stdout
    assert "| torchscript | 2 |" in report.stdout
    runs = doc["cells"][0]["runs"] + doc["cells"][1]["runs"][:1]
    many = main_here(capsys, "compare", *runs, cwd=tmp)
    assert many.code == 0, many.stderr
    assert "ratios: each run against the first" in many.stdout
    assert "profiling_executor" in many.stdout  # the settings that differ


def test_open_shows_a_sweep_over_its_runs(two_presets: tuple[Result, Path]) -> None:
    from textual.pilot import Pilot

    from tests.tui_support import run
    from warmscope.cli.view import open_records
    from warmscope.tui.app import build_app
    from warmscope.tui.screens.sweep_screen import SweepScreen

    _, tmp = two_presets
    records, sweeps = open_records([tmp / "sweep.json"])
    assert len(records) == 4 and all(p.suffix == ".jsonl" for p in records)
    assert len(sweeps) == 1
    app = build_app(records=records, sweeps=sweeps)

    async def scenario(pilot: Pilot) -> None:
        assert isinstance(app.screen, SweepScreen)
        answer = str(app.screen.query_one("#sweep-answer").render())
        assert answer == sweeps[0]["answer"]
        shown = app.export_screenshot()
        assert "no-profiling" in shown and "torchscript" in shown and "warm-up" in shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SweepScreen)
        assert len(app.runs) == 4  # every run of the sweep, in the history

    run(app, scenario, size=(120, 40))


def test_a_sweep_recorded_under_a_relative_folder_opens_from_anywhere(
    two_presets: tuple[Result, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from warmscope.cli.view import open_records

    r, tmp = two_presets
    assert r.code == 0, r.stderr
    document = tmp / RECORDS / "sweep.json"
    doc = json.loads(document.read_text())
    assert doc["ran_in"] == str(tmp)
    assert doc["cells"][0]["processes"][0]["record"].startswith(f"{RECORDS}/")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    for cwd, name in ((elsewhere, str(document)), (tmp / "logs", "sw/sweep.json")):
        monkeypatch.chdir(cwd)
        records, sweeps = open_records([Path(name)])
        assert len(records) == 4 and all(p.is_file() for p in records)
        assert sweeps and sweeps[0]["ran_in"] == str(tmp)

    # A document from before the folder was recorded: its records are found beside it (a
    # copy of the document, beside the sweep's own, which the other tests read).
    older = document.with_name("older-sweep.json")
    older.write_text(json.dumps({k: v for k, v in doc.items() if k != "ran_in"}))
    monkeypatch.chdir(elsewhere)
    records, _ = open_records([older])
    assert sorted(p.name for p in records) == sorted(
        Path(p["record"]).name for c in doc["cells"] for p in c["processes"]
    )
    assert all(p.is_file() for p in records)


def test_a_sweeps_figures_are_its_records_first_iterations(
    two_presets: tuple[Result, Path],
) -> None:
    """Each cell's figures are its records' own: the first iterations, their medians, each
    iteration's median, the steady p50s (``run --repeat`` digests its one cell the same way:
    test_export_command checks that on a real ``run --repeat``)."""
    r, tmp = two_presets
    doc: dict[str, Any] = r.doc  # type: ignore[assignment]
    for cell in doc["cells"]:
        records = [read_run(tmp / p) for p in cell["runs"]]
        assert [round(d.ms[0], 6) for d in records] == cell["first_ms"]["values"]
        assert cell["first_ms"]["median"] == pytest.approx(
            statistics.median(d.ms[0] for d in records)
        )
        for i, row in enumerate(cell["by_iteration"]):
            assert row["median"] == pytest.approx(
                statistics.median(d.ms[i] for d in records), abs=1e-6
            )
        assert cell["steady_p50_ms"]["values"] == [
            round(d.summary().p50_ms, 6)
            for d in records  # type: ignore[arg-type]
        ]


def test_run_repeat_is_one_cell_in_that_many_processes() -> None:
    """``run --repeat N``: the run's settings as the one cell, its N processes in turn (a real
    ``run --repeat`` runs in test_export_command)."""
    from warmscope.cli import make_parser
    from warmscope.cli.sweep import sweep_cells
    from warmscope.core.run.sweep import Sweep

    args = make_parser("run").parse_args(
        ["sample:trivial", "--repeat", "2", "--iters", "6", *ONE_THREAD]
    )
    cells = sweep_cells(args, sweep=False)
    assert len(cells) == 1
    assert cells[0].settings.iters == 6 and cells[0].settings.knobs["intra_op_threads"] == 1
    assert cells[0].label == "intra_op_threads=1"
    assert Sweep("sample:trivial", cells, repeat=2).plan == [(0, 0), (0, 1)]


@dataclass(frozen=True)
class Stopped:
    code: int
    out: str
    err: str
    document: Path
    mid_way: str
    """The document's text as it was on disk once a process had finished, the sweep still
    running: what a SIGKILL then would have left (the sweep writes it whole, by a rename,
    after each process; nothing written after a SIGKILL)."""


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Stopped:
    """One real sweep of 8 planned processes, stopped with Ctrl-C (SIGINT) once one of them
    finished."""
    folder = tmp_path_factory.mktemp("stopped") / "records"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "warmscope.cli", "sweep", "sample:trivial"),
            *("--vary", "profiling_executor=on,off", "--repeat", "4", "--iters", "5"),
            *ONE_THREAD,
            *("--record", str(folder)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    document = folder / "sweep.json"
    mid_way = ""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if document.exists():
            text = document.read_text()
            if json.loads(text)["finished"] >= 1:
                mid_way = text
                break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return Stopped(proc.returncode, out, err, document, mid_way)


def test_a_stopped_sweep_keeps_what_finished(stopped: Stopped) -> None:
    assert stopped.code == 130, stopped.err
    doc = json.loads(stopped.document.read_text())
    assert doc["stopped"] is True
    assert 1 <= doc["finished"] < doc["planned"] == 8
    assert doc["answer"].startswith(f"stopped after {doc['finished']} of 8 processes")
    finished_ok = sum(len(c["runs"]) for c in doc["cells"])
    assert finished_ok >= doc["finished"] - 1  # the one stopped half way is left out
    for c in doc["cells"]:
        assert len(c["first_ms"]["values"]) == len(c["runs"])
    assert stopped.out.startswith("answer ")


def test_sweep_usage_errors_name_the_problem(capsys: pytest.CaptureFixture[str]) -> None:
    # Decided before any child: in-process (a child started fails the call); the one-line
    # exit 2 of the console script is test_cli_errors'.
    one = main_here(capsys, "sweep", "sample:trivial", "--preset", "torchscript")
    assert one.code == 2 and "at least two settings" in one.stderr
    bad = main_here(capsys, "sweep", "sample:trivial", "--preset", "torchscript,nope")
    assert bad.code == 2 and "unknown preset 'nope'" in bad.stderr
    vary = main_here(capsys, "sweep", "sample:trivial", "--vary", "no_such_knob=1,2")
    assert vary.code == 2 and "no_such_knob" in vary.stderr
    rank = main_here(
        capsys,
        "sweep",
        "sample:trivial",
        "--preset",
        "eager,torchscript",
        "--rank-by",
        "total@999",
        "--iters",
        "10",
    )
    assert rank.code == 2 and "only 10 iterations" in rank.stderr


def test_a_target_the_child_refuses_ends_the_sweep_at_once(tmp_path: Path) -> None:
    from tests.conftest import FACTORIES

    r = warmscope(
        "sweep",
        f"{FACTORIES}:not_a_module",
        "--preset",
        "eager,torchscript",
        "--repeat",
        "3",
        "--record",
        str(tmp_path / "records"),
    )
    assert r.code == 2, r.stderr
    assert len(r.stderr.strip().splitlines()[-1]) < 300 and "warmscope:" in r.stderr
    doc = json.loads((tmp_path / "records" / "sweep.json").read_text())
    assert doc["finished"] == 1, "one refusal is enough: the other processes would refuse too"


def test_profiling_is_refused_in_a_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    r = main_here(capsys, "run", "sample:trivial", "--repeat", "2", "--profile-iters", "0")
    assert r.code == 2 and "--profile-iters does not go with --repeat" in r.stderr


def test_a_killed_sweep_says_how_many_of_its_processes_ran(
    stopped: Stopped, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed (SIGKILL) after 1 of 8 processes: nothing marks the document stopped, yet
    compare and report of it say how many of the planned processes ran. The document is the
    one on disk while the stopped sweep ran (``Stopped.mid_way``): a SIGKILL runs no code."""
    assert stopped.mid_way, "no process finished within 120 s"
    document = tmp_path / "sweep.json"  # its records are named by their absolute paths
    document.write_text(stopped.mid_way)
    doc = json.loads(stopped.mid_way)
    ran = doc["finished"]
    assert 1 <= ran < doc["planned"] == 8 and doc["stopped"] is False
    said = f"{ran} of 8 planned processes ran"
    compared = main_here(capsys, "compare", str(document))
    assert compared.code == 0, compared.stderr
    assert said in compared.stdout
    assert said in main_here(capsys, "report", str(document)).stdout


def test_an_adaptive_sweep_drops_the_slower_cell_and_stops_early() -> None:
    """A first call 300 ms slower in one cell: with a cap of 5 rounds, the adaptive sweep's
    looks drop it after round 4 (two cells can first be told apart there) and its plan stops
    there, decided. The looks on processes' figures, as the sweep takes them after each
    process (real processes race through Ray in test_ray_sweep)."""
    from warmscope.cli import make_parser
    from warmscope.cli.sweep import sweep_cells
    from warmscope.core.data.run import RunData
    from warmscope.core.data.sweep_state import Process
    from warmscope.core.output.sweep_digest import sweep_document
    from warmscope.core.run.sweep import Sweep

    args = make_parser("sweep").parse_args(
        ["sample:trivial", "--vary", "env.WARMSCOPE_FIRST_SLEEP_MS=300,0", "--repeat", "5"]
    )
    sweep = Sweep("sample:trivial", sweep_cells(args, sweep=True), repeat=5, adaptive=True)
    first_ms = {0: [305.0, 312.0, 301.0, 309.0, 303.0], 1: [5.2, 4.9, 5.6, 5.1, 5.0]}
    decided, n = False, -1
    while not decided and n + 1 < len(sweep.plan):
        n += 1
        c, r = sweep.plan[n]
        sweep.processes.append(Process(c, r, RunData(status="ok"), first_ms[c][r]))
        decided = sweep._look(n)
    assert decided and n + 1 == len(sweep.plan) == 8
    assert sweep.plan == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)]
    assert sweep.race.looks == [4]
    [drop] = sweep.race.drops
    assert drop.cell == 0 and drop.round == 4 and drop.best == 1
    assert drop.comparison.beyond_noise and drop.comparison.lo > 1
    assert sweep.race.decided and sweep.race.live == [1]
    doc = sweep_document(sweep)
    assert doc["processes_fixed"] == 10 and doc["processes_saved"] == 2


def test_a_cell_whose_processes_fail_the_same_way_twice_is_stopped() -> None:
    """Issue 31: 15 processes all failed at torch.jit.script (62 s) before "No process
    finished". The plan drops a cell's later processes once two of them failed alike; a cell
    that failed two different ways, or once, runs on."""
    from warmscope.cli import make_parser
    from warmscope.cli.sweep import sweep_cells
    from warmscope.core.child import outcome
    from warmscope.core.data.run import RunData
    from warmscope.core.data.sweep_state import Process
    from warmscope.core.output.sweep_digest import ran_text, sweep_document
    from warmscope.core.run.sweep import Sweep

    args = make_parser("sweep").parse_args(
        ["sample:trivial", "--preset", "eager,torchscript,no-profiling", "--repeat", "4"]
    )
    sweep = Sweep("sample:trivial", sweep_cells(args, sweep=True), repeat=4)

    def finish(detail: str) -> None:
        c, r = sweep.plan[len(sweep.processes)]
        status = outcome.OK if not detail else outcome.FAILED
        data = RunData(status=status, status_detail=detail)
        sweep.processes.append(Process(c, r, data))
        sweep._give_up(sweep.processes[-1], len(sweep.processes))

    # Round 1: eager ok, torchscript fails at scripting, no-profiling fails one way.
    for detail in ("", "RuntimeError: cannot script", "timed out after 30 s"):
        finish(detail)
    assert len(sweep.plan) == 12 and not sweep.given_up
    # Round 2: the same failure again for torchscript; another one for no-profiling.
    for detail in ("", "RuntimeError: cannot script", "RuntimeError: cannot script"):
        finish(detail)
    assert sweep.given_up == {1: "failed: RuntimeError: cannot script"}
    assert [c for c, _ in sweep.plan[6:]] == [0, 2, 0, 2]
    doc = sweep_document(sweep)
    assert doc["given_up"] == [
        {"cell": 1, "label": "torchscript", "why": "failed: RuntimeError: cannot script"}
    ]
    assert ran_text({**doc, "finished": 10}) == "10 of 12 ran"
    assert (
        "torchscript stopped after 2 processes failed the same way (failed: RuntimeError: "
        "cannot script)" in doc["answer"]
    )
