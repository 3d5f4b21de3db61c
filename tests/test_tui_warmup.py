"""The warm-up screen driven by a fake engine (no child, no torch): its phases, its rows filling
as processes end, the answer and the recipe written; leaving mid-way stops the engine; ``W``
hands the engine the viewed run's settings and puts the recipe beside its record."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.tui_support import SharedApp, screen_text, wait_for
from warmscope.core.base.units import ratio_interval
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.recipe import Call, Recipe, emit_python, split_header
from warmscope.core.output.sweep_stats import stat_json
from warmscope.core.run.warmup_progress import Progress
from warmscope.tui.app import build_app
from warmscope.tui.screens import warmup_screen
from warmscope.tui.screens.confirm_screen import ConfirmScreen
from warmscope.tui.screens.warmup_screen import BASELINE, WarmupScreen, warmup_paths

DATA = Path(__file__).parent / "data"
CANDIDATES = ["warm-up calls", "profiling off"]


def facts(ratios: list[float], startup: list[float] | None = None) -> dict[str, Any]:
    """A cell's figures as ``cell_facts`` gives them, one process per ratio."""
    return {
        "shapes": [{"key": "T=40", "ratio": stat_json(ratios)}],
        "startup_ms": stat_json(startup or [0.0] * len(ratios)),
        "processes": [{"status": "ok"} for _ in ratios],
        "runs": [f"r{n}.jsonl" for n in range(len(ratios))],
    }


def script() -> list[Progress]:
    steps = [Progress("observe", cells=[BASELINE])]
    for r, ratios in enumerate(([9.5], [9.5, 10.5])):
        steps += [
            Progress("observe", cell=BASELINE, repeat=r),
            Progress("observe", cell=BASELINE, repeat=r, facts=facts(ratios)),
        ]
    steps += [Progress("propose", cells=CANDIDATES), Progress("verify", cells=CANDIDATES)]
    for label, ratios in zip(CANDIDATES, ([1.5, 1.7], [0.9, 1.0]), strict=True):
        steps += [
            Progress("verify", cell=label, repeat=0),
            Progress("verify", cell=label, repeat=0, facts=facts(ratios[:1], [110.0])),
        ]
    return steps


class FakeWarmup:
    """Tells its progress one step at a time, when the test lets it (``advance``)."""

    def __init__(self, folder: Path) -> None:
        self.per_cell = 2
        self.folder: Path | None = folder
        self.on_progress: Any = None
        self.steps = script()
        self.gate = threading.Semaphore(0)
        self.stopped = threading.Event()
        self.ended = threading.Event()
        self.told = 0

    def advance(self, steps: int = 1) -> None:
        for _ in range(steps):
            self.gate.release()

    def run(self) -> dict[str, Any]:
        try:
            for step in [*self.steps, None]:
                while not self.gate.acquire(timeout=0.02):
                    if self.stopped.is_set():
                        raise KeyboardInterrupt
                if step is None:
                    return self.document()
                self.on_progress(step)
                self.told += 1
            raise AssertionError("unreachable")
        finally:
            self.ended.set()

    def stop(self) -> None:
        self.stopped.set()

    def document(self) -> dict[str, Any]:
        assert self.folder is not None
        self.folder.mkdir()
        files = []
        recipes = []
        for n, label in enumerate(CANDIDATES):
            path = self.folder / f"recipe{n}.py"
            recipes.append(Recipe(label, "script", [], [], [Call({}, n + 1)]).to_json())
            path.write_text(emit_python(Recipe.from_json(recipes[-1])))
            files.append(str(path))
        cands = [
            {**facts([1.5, 1.7], [110.0, 120.0]), "label": CANDIDATES[0], "file": files[0]},
            {**facts([0.9, 1.0], [100.0, 105.0]), "label": CANDIDATES[1], "file": files[1]},
        ]
        for cand, recipe in zip(cands, recipes, strict=True):
            cand["recipe"] = recipe
        cands[0].update(verdict="not verified", why="T=40's first call is 1.6×: the profiling run")
        cands[1].update(verdict="verified", why="")
        return {
            "folder": str(self.folder),
            "baseline": facts([9.5, 10.5]),
            "candidates": cands,
            "observed": [{"note": "T=40: first call 10× its steady p50 (the profiling run)"}],
            "chosen": CANDIDATES[1],
            "verdict": "verified",
            "target": "sample:speech",
            "answer": "verified: profiling off, worst first call 0.95× its steady p50 (T=40)",
        }


@pytest.fixture(scope="module")
def empty() -> Iterator[SharedApp]:
    """``warmscope`` with nothing run yet: one app for the tests that open a warm-up screen on
    an engine of their own (each starts from the first frame's screen: ``SharedApp``)."""
    with SharedApp(build_app()) as shared:
        yield shared


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedApp]:
    """``warmscope open speech.jsonl``, a copy of a real run's record in a folder of its own
    (where ``W`` writes the warm-up's files)."""
    record = tmp_path_factory.mktemp("opened") / "speech.jsonl"
    shutil.copyfile(DATA / "speech-script.jsonl", record)
    with SharedApp(build_app(records=[record])) as shared:
        yield shared


def row(app: Any, label: str) -> list[str]:
    return [str(cell) for cell in app.screen.table.get_row(label)]


def status(app: Any) -> str:
    return str(app.screen.status_line.render())


def test_the_table_fills_as_processes_end_and_the_answer_writes_the_recipe(
    empty: SharedApp, tmp_path: Path
) -> None:
    engine = FakeWarmup(tmp_path / "w")
    recipe = tmp_path / "run-recipe.py"
    app = empty.app

    async def scenario(pilot: Pilot) -> None:
        app.push_screen(WarmupScreen(engine, recipe, "run #1 sample:speech"))
        await wait_for(
            pilot, lambda: isinstance(app.screen, WarmupScreen) and app.screen.is_mounted
        )
        engine.advance(2)
        await wait_for(pilot, lambda: "process 1 of 2" in status(app))
        assert status(app).startswith("observe") and row(app, BASELINE)[1] == "0/2"
        engine.advance()
        await wait_for(pilot, lambda: row(app, BASELINE)[1] == "1/2")
        assert row(app, BASELINE)[2] == f"{ratio_interval(stat_json([9.5]))} T=40"
        engine.advance(2)
        await wait_for(pilot, lambda: row(app, BASELINE)[1] == "2/2")
        assert row(app, BASELINE)[2] == f"{ratio_interval(stat_json([9.5, 10.5]))} T=40"
        engine.advance()  # propose: a row per candidate, nothing run yet
        await wait_for(pilot, lambda: len(app.screen.table.rows) == 3)
        assert row(app, CANDIDATES[1])[1:] == ["0/2", "-", "-", "…"]
        engine.advance(3)
        await wait_for(pilot, lambda: row(app, CANDIDATES[0])[1] == "1/2")
        assert status(app).startswith("verify") and row(app, CANDIDATES[0])[3].startswith("110")
        engine.advance(3)  # the last process, then the document
        await wait_for(pilot, engine.ended.is_set)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert row(app, CANDIDATES[1])[4] == "verified"
        assert row(app, CANDIDATES[0])[4] == "not verified"
        assert row(app, CANDIDATES[1])[1] == "2/2"
        text = screen_text(app)
        assert "verified: profiling off" in text and str(recipe) in text
        assert status(app).startswith("done")
        # The chosen candidate's file, beside the record; the document in the folder.
        # The very file verified, under a header that says so.
        header, body = split_header(recipe.read_text())
        assert "Verdict: verified (warmscope, torch " in header
        assert body == split_header((tmp_path / "w" / "recipe1.py").read_text())[1]
        assert (tmp_path / "w" / "warmup.json").exists()
        await pilot.press("q")
        await wait_for(pilot, lambda: app.screen is app.main)
        assert not engine.stopped.is_set()  # nothing left to stop

    empty.run(scenario)


@pytest.mark.parametrize("key", ["q", "escape"])
def test_leaving_mid_way_stops_the_warmup(empty: SharedApp, tmp_path: Path, key: str) -> None:
    engine = FakeWarmup(tmp_path / "w")
    recipe = tmp_path / "run-recipe.py"
    app = empty.app

    async def scenario(pilot: Pilot) -> None:
        app.push_screen(WarmupScreen(engine, recipe, "run #1"))
        await wait_for(
            pilot, lambda: isinstance(app.screen, WarmupScreen) and app.screen.is_mounted
        )
        engine.advance(3)
        await wait_for(pilot, lambda: row(app, BASELINE)[1] == "1/2")
        await pilot.press(key)
        await wait_for(pilot, lambda: app.screen is app.main)
        await wait_for(pilot, engine.ended.is_set, timeout=5)
        assert engine.stopped.is_set() and engine.told == 3
        assert not recipe.exists()

    empty.run(scenario)


def test_w_takes_the_viewed_runs_settings_and_writes_beside_its_record(
    opened: SharedApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = opened.app
    beside = Path(app.runs[0].data.record_path or "").parent
    made: list[tuple[RunSettings, Path | None, FakeWarmup]] = []

    def make(settings: RunSettings, folder: Path | None) -> FakeWarmup:
        engine = FakeWarmup(folder or tmp_path / "none")
        made.append((settings, folder, engine))
        return engine

    monkeypatch.setattr(warmup_screen, "make_engine", make)

    async def scenario(pilot: Pilot) -> None:
        # Asked first, whoever made the run: what will run, and where the recipe goes.
        await pilot.press("W")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = app.screen.question
        assert "speech.jsonl's target sample:speech" in question
        assert "6 fresh processes without a recipe" in question and "speech-recipe.py" in question
        await pilot.press("escape")  # no: nothing is made, nothing runs
        await pilot.pause()
        assert made == [] and not isinstance(app.screen, ConfirmScreen)
        await pilot.press("W")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(
            pilot, lambda: isinstance(app.screen, WarmupScreen) and app.screen.is_mounted
        )
        settings, folder, engine = made[0]
        viewed = app.runs[0].data.settings
        assert settings.target == viewed.target and settings.dims == viewed.dims
        assert settings.inputs == viewed.inputs and settings.knobs == viewed.knobs
        assert folder == beside / "speech-warmup"
        screen = app.screen
        assert isinstance(screen, WarmupScreen)
        assert screen.recipe == beside / "speech-recipe.py"
        # from the palette, over the open one: not a second warm-up
        app.action_open("warmup_screen")
        await pilot.pause()
        assert len(made) == 1 and app.screen is screen
        await pilot.press("q")
        await wait_for(pilot, engine.ended.is_set, timeout=5)
        assert engine.stopped.is_set()

    opened.run(scenario)


def test_the_palette_offers_the_warmup(opened: SharedApp) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        titles = [c.title for c in app.get_system_commands(app.main)]
        assert "Warm-up recipe" in titles

    opened.run(scenario)


def test_paths_beside_the_record_take_the_next_free_name(tmp_path: Path) -> None:
    record = tmp_path / "run.jsonl"
    assert warmup_paths(str(record)) == (tmp_path / "run-warmup", tmp_path / "run-recipe.py")
    (tmp_path / "run-recipe.py").write_text("")
    assert warmup_paths(str(record)) == (tmp_path / "run-warmup-2", tmp_path / "run-recipe-2.py")
    assert warmup_paths(None) == (None, None)


def test_a_dangling_link_where_the_recipe_would_go_is_a_name_taken(tmp_path: Path) -> None:
    """``RECORD-recipe.py`` as a link to nowhere: written through, it would put the recipe
    where the link points; the next free name is taken instead."""
    record = tmp_path / "speech.jsonl"
    record.write_text("")
    (tmp_path / "speech-recipe.py").symlink_to(tmp_path / "elsewhere" / "pwned.py")
    folder, recipe = warmup_paths(str(record))
    assert recipe == tmp_path / "speech-recipe-2.py" and folder == tmp_path / "speech-warmup-2"
