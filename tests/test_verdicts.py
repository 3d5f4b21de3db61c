"""Verdicts only where the data carry them: the rules on synthetic runs, the A/A check by
simulation, and the context a comparison shows. (Real children: ``test_export_command``.)"""

from __future__ import annotations

import itertools
import random
import shutil
from pathlib import Path

import pytest

from warmscope.cli import main
from warmscope.core.data import intervals
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.output import verdicts
from warmscope.core.output.comparison import comparison, side_rows
from warmscope.core.output.text_views import render_comparison

CALLED = ("better", "worse")


def a_run(
    first: float,
    steady: list[float],
    *,
    preset: str | None = None,
    setup: float = 1000.0,
    env: dict[str, object] | None = None,
    samples: list[dict[str, float]] | None = None,
) -> RunData:
    settings = RunSettings(target="sample:trivial")
    if preset:
        settings.set("profiling_executor=off")
    data = RunData(settings=settings)
    data.mode = "script"
    ms = [first, *steady]
    data.add_iterations(0, ms, [float(i) for i in range(len(ms))])
    data.phases = {"import torch": setup * 0.9, "load": setup * 0.1}
    data.env = dict(env or {})
    data.samples = list(samples or [])
    return data


def rows_of(a: list[RunData], b: list[RunData]) -> dict[str, object]:
    got = side_rows(a, b, [r.summary() for r in a], [r.summary() for r in b])
    return {r.metric: r for r in got}


def quiet(level: float, n: int = 90) -> list[float]:
    return [level * (1 + 0.01 * ((i % 3) - 1)) for i in range(n)]


def test_one_process_each_gives_no_first_warmup_or_setup_verdict() -> None:
    a = a_run(50.0, quiet(1.0), setup=3000.0)
    b = a_run(5.0, quiet(2.0), preset="no-profiling", setup=1000.0)
    rows = rows_of([a], [b])
    for metric in ("first_ms", "warmup_excess_ms", "setup_ms"):
        row = rows[metric]
        assert row.ratio is not None and row.ratio < 0.5, metric  # type: ignore[attr-defined]
        assert row.verdict == verdicts.ONE_EACH and row.better is None, metric  # type: ignore[attr-defined]
    # Steady figures keep the within-run rule: 2× apart with a CV near 1% is called.
    assert rows["p50_ms"].verdict == "worse"  # type: ignore[attr-defined]
    # A p99 of 90 iterations is nearly the slowest one: not a figure to call.
    assert rows["p99_ms"].verdict == verdicts.FEW_ITERATIONS  # type: ignore[attr-defined]
    text = render_comparison(comparison([a, b], ["a", "b"]))
    assert "note: 1 process each" in text and "--repeat" in text, "and how to tell it"


def test_the_same_settings_twice_are_never_called_different() -> None:
    # Identical settings, very different figures (a busy machine, a lucky process).
    a = a_run(99.1, quiet(1.0))
    b = a_run(463.0, quiet(3.0))
    rows = rows_of([a], [b])
    assert not [r for r in rows.values() if r.verdict in CALLED]  # type: ignore[attr-defined]
    assert rows["p50_ms"].verdict == verdicts.SAME_SETTINGS  # type: ignore[attr-defined]
    doc = comparison([a, b], ["a", "b"])
    assert not [v for m in doc["metrics"] for v in m["verdicts"] if v in CALLED]
    assert any(n.startswith("same settings") for n in doc["notes"])
    # Repeated sides of the same settings too, however far apart.
    many_a = [a_run(10.0 + i, quiet(1.0)) for i in range(6)]
    many_b = [a_run(90.0 + i, quiet(4.0)) for i in range(6)]
    doc = comparison([many_a, many_b], ["a", "b"])
    assert not [v for m in doc["metrics"] for v in m["verdicts"] if v in CALLED]


def test_repeated_sides_are_told_by_their_intervals() -> None:
    def side(first: float, n: int, preset: str | None) -> list[RunData]:
        return [a_run(first + i * 0.5, quiet(1.0 + i * 0.001), preset=preset) for i in range(n)]

    # Apart, with enough processes: called.
    rows = rows_of(side(50.0, 5, None), side(10.0, 5, "no-profiling"))
    first = rows["first_ms"]
    assert first.verdict == "better" and first.a_iv and first.b_iv  # type: ignore[attr-defined]
    assert first.b_iv.hi < first.a_iv.lo  # type: ignore[attr-defined]
    # Apart, but 3 against 3 miss each other 10% of the time by chance alone: untold.
    rows = rows_of(side(50.0, 3, None), side(10.0, 3, "no-profiling"))
    assert rows["first_ms"].verdict == verdicts.FEW_PROCESSES  # type: ignore[attr-defined]
    # Overlapping intervals: within noise.
    overlap = [a_run(f, quiet(1.0), preset="no-profiling") for f in (48.0, 51.0, 53.0, 55.0)]
    rows = rows_of(side(50.0, 4, None), overlap)
    assert rows["first_ms"].verdict == "within noise"  # type: ignore[attr-defined]
    doc = comparison([side(50.0, 5, None), side(10.0, 5, "no-profiling")], ["a", "b"])
    assert doc["runs"][1]["processes"] == 5 and len(doc["runs"][1]["records"]) == 5
    first_doc = next(m for m in doc["metrics"] if m["metric"] == "first_ms")
    assert first_doc["intervals"][0]["coverage"] > 0.9
    assert "(" in render_comparison(doc).splitlines()[3], "a value with its interval"


@pytest.mark.parametrize(("m", "n"), [(2, 2), (3, 3), (3, 5), (4, 4), (4, 7), (6, 9), (2, 9)])
def test_the_chance_of_apart_intervals_is_exact(m: int, n: int) -> None:
    """Every assignment of pooled ranks to the sides, counted."""
    j, _ = intervals.median_ranks(m)
    k, _ = intervals.median_ranks(n)
    apart = total = 0
    for xs in itertools.combinations(range(m + n), m):
        ys = [v for v in range(m + n) if v not in xs]
        a = intervals.median_interval([float(x) for x in xs])
        b = intervals.median_interval([float(y) for y in ys])
        assert a is not None and b is not None
        apart += not a.overlaps(b)
        total += 1
    assert verdicts.apart_chance(m, j, n, k) == pytest.approx(apart / total)


def test_simulated_aa_comparisons_are_rarely_called_different() -> None:
    """Same distribution both sides, heavy tails (log-normal and Pareto): the interval rule
    calls a difference at most LEVEL of the time at every side size."""
    rng = random.Random(20)
    trials = 2000
    for n in (3, 4, 5, 8):
        called = 0
        for t in range(trials):
            draw = (
                (lambda: rng.lognormvariate(0, 1))
                if t % 2
                else (lambda: rng.paretovariate(1.5))  # infinite variance
            )
            a = intervals.median_interval([draw() for _ in range(n)])
            b = intervals.median_interval([draw() for _ in range(n)])
            assert a is not None and b is not None
            called += verdicts.interval_verdict(a, b) in (intervals.LOWER, intervals.HIGHER)
        rate = called / trials
        print(f"A/A, {n} processes a side, {trials} trials: {rate:.2%} called different")
        assert rate <= verdicts.LEVEL + 0.015, (n, rate)  # the level, give or take the draw
    assert verdicts.fewest_each() == 4


def test_context_that_changes_what_is_measured_is_shown() -> None:
    env = {"torch": "2.13.0", "hostname": "a", "cpu_model": "X", "cpu_logical": 4}
    env.update(intra_op_threads=4, inter_op_threads=4)
    cold = {**env, "compile_cache": {"mode": "cold", "had_entries": False}}
    warm = {**env, "compile_cache": {"mode": "user", "had_entries": True}}
    idle = [{"cpu": 100.0, "sys_cpu": 25.0}] * 5  # the run's own core: nothing else
    busy = [{"cpu": 100.0, "sys_cpu": 75.0}] * 5  # two more cores busy elsewhere
    a = a_run(5000.0, quiet(1.0), env=cold, samples=idle)
    b = a_run(900.0, quiet(1.0), env=warm, samples=busy)
    rows = {r.name: r for r in verdicts.context_table([[a], [b]])}
    assert rows["compile cache"].values == ["cold (empty)", "user (had entries)"]
    assert rows["load elsewhere"].values == ["0.0 cores", "2.0 cores"]
    assert "torch" not in rows and "host" not in rows, "only what differs"
    text = render_comparison(comparison([a, b], ["a", "b"]))
    assert "context that differs" in text and "user (had entries)" in text
    other = a_run(
        5000.0, quiet(1.0), env={**cold, "torch": "2.12.0", "hostname": "b"}, samples=idle
    )
    rows = {r.name: r for r in verdicts.context_table([[a], [other]])}
    assert set(rows) == {"torch", "host"}
    assert verdicts.context_table([[a], [a_run(1.0, quiet(1.0), env=cold, samples=idle)]]) == []


def test_a_side_is_repeats_of_one_setting(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    data = Path(__file__).parent / "data"
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for name in ("speech-script.jsonl", "speech-no-profiling.jsonl"):
        shutil.copy(data / name, mixed / name)
    assert main(["compare", str(mixed), str(data / "speech-script.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a side is repeats of one setting" in err
    assert main(["compare", str(tmp_path / "none-*.jsonl"), str(mixed)]) == 2
    assert "no record matches" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["compare", str(empty), str(mixed)]) == 2
    assert "no run records" in capsys.readouterr().err
