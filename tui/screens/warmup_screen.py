"""``WarmupScreen``: a warm-up recipe derived from the viewed run's settings, verified live.

``W`` opens it after a run. The warm-up (``core/run/warmup.py``: observe, propose, verify, each in
fresh processes) runs in a thread worker with the viewed run's target, inputs, dims, mode and
knobs; its progress comes back as messages and fills the table, one row per cell (the baseline,
then each candidate). At the end the chosen recipe is written beside the run's record
(``RECORD-recipe.py``). ``q`` or Esc leaves and stops it: the process in progress ends and
nothing starts after it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import DataTable, Static

from warmscope.core.base.files import atomic_write
from warmscope.core.base.safe_text import clean_line
from warmscope.core.base.units import ratio_interval
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.sweep_digest import iv_text
from warmscope.core.output.warmup_verdict import (
    NOT_VERIFIED,
    VERIFIED,
    WITHIN,
    is_verified,
    worst_shape,
)
from warmscope.core.run.ending import one_line
from warmscope.core.run.warmup import COMPILE_REPEAT, DEFAULT_REPEAT, Warmup
from warmscope.core.run.warmup_handover import copy_recipe
from warmscope.core.run.warmup_progress import Progress
from warmscope.tui.run_start import Pending
from warmscope.tui.screens.confirm_screen import ConfirmScreen
from warmscope.tui.screens.trust_screen import trusted_then
from warmscope.tui.widgets.clock_line import ClockLine
from warmscope.tui.widgets.keys_footer import KeysFooter

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState
    from warmscope.tui.run_view import RunEntry

BASELINE = "no recipe"
COLUMNS = ("recipe", "processes", "worst first / p50", "start-up", "verdict")
PHASES = {
    "observe": "observe: fresh processes without a recipe",
    "propose": "propose: writing the candidate recipes",
    "artifact": "propose: one process saves the compile-cache artifact",
    "build": "propose: building each C++ recipe (once per torch build)",
    "verify": "verify: each candidate's file in fresh processes, interleaved",
    "again": "verify: a process slowed by other processes, run once more",
}
CLOCK_S = 1.0  # the status line's elapsed time


class Engine(Protocol):
    """What the screen needs of a warm-up: ``Warmup`` (``core/run/warmup.py``), or a fake in tests."""

    folder: Path | None
    on_progress: Callable[[Progress], None] | None

    @property
    def per_cell(self) -> int:
        """Processes per cell."""
        ...

    def run(self) -> dict[str, Any]: ...

    def stop(self) -> None: ...


@dataclass
class Row:
    """One cell of the table as it fills: its processes and figures so far."""

    label: str
    done: int = 0
    failed: int = 0
    facts: dict[str, Any] | None = None
    verdict: str = ""

    def cells(self, repeat: int) -> tuple[Text, ...]:
        facts = self.facts or {}
        worst = worst_shape(facts) if facts.get("shapes") else None
        ratio = "-"
        if worst is not None:
            ratio = ratio_interval(worst["ratio"]) + (f" {worst['key']}" if worst["key"] else "")
        startup = "-" if self.label == BASELINE else iv_text(facts.get("startup_ms"))
        done = f"{self.done}/{repeat}" + (f" ({self.failed} failed)" if self.failed else "")
        style = {VERIFIED: "bold green", WITHIN: "green", NOT_VERIFIED: "yellow"}.get(
            self.verdict, ""
        )
        verdict = self.verdict or ("…" if self.done < repeat else "")
        # Text, not str: a DataTable reads a str cell as markup, and labels come from recipes.
        return (
            Text(clean_line(self.label)),
            Text(done),
            Text(ratio),
            Text(startup),
            Text(verdict, style=style),
        )


def warmup_paths(record: str | None) -> tuple[Path | None, Path | None]:
    """The warm-up's folder and recipe beside the run's record (``RECORD-warmup/``,
    ``RECORD-recipe.py``; ``-2``, ``-3``… when taken); ``None`` where there is no record or
    its folder cannot be written (then the warm-up's own folder under the records)."""
    if not record or not os.access(Path(record).parent, os.W_OK):
        return None, None
    stem = Path(record).with_suffix("")
    for n in range(1, 1000):
        tail = "" if n == 1 else f"-{n}"
        folder = stem.with_name(f"{stem.name}-warmup{tail}")
        recipe = stem.with_name(f"{stem.name}-recipe{tail}.py")
        # lexists: a name taken by a link, even a dangling one, is taken (never written through)
        if not os.path.lexists(folder) and not os.path.lexists(recipe):
            return folder, recipe
    return None, None


def warmup_question(entry: Any, settings: RunSettings) -> str:
    """What ``W`` will run, asked before anything runs: whose target, how many processes, and
    where the recipe goes."""
    mode = settings.knobs.get("mode") or getattr(entry.data, "mode", "")
    each = COMPILE_REPEAT if mode == "compile" else DEFAULT_REPEAT
    whose = f"{entry.record_name or 'a record'}'s" if entry.source != "run" else "this run's"
    _, recipe = warmup_paths(entry.data.record_path)
    where = f"writes it as {recipe.name} beside the record" if recipe else "writes it in its folder"
    return clean_line(
        f"Derive a warm-up recipe from {whose} target {settings.target} and run it: "
        f"{each} fresh processes without a recipe, then {each} for each candidate recipe "
        f"(at least {2 * each} in all), each running the target's code; {where}. Go on?"
    )


def warmup_settings(settings: RunSettings) -> RunSettings:
    """The viewed run's settings as the warm-up takes them: no profiled iterations and no
    recipe (the baseline runs without one; ``warmscope warmup`` refuses both)."""
    out = settings.copy()
    out.profile_iters = None
    out.recipe = None
    return out


def make_engine(settings: RunSettings, folder: Path | None) -> Engine:
    """The real warm-up (its settings checked now: a bad target is one line, nothing runs)."""
    command = ["warmscope", "warmup", *settings.command_line()[2:]]
    return Warmup(settings=settings, folder=folder, command=command)


def write_outputs(doc: dict[str, Any], recipe: Path | None) -> Path | None:
    """The chosen recipe (``recipe``, else ``recipe.py`` in the warm-up's folder) and the
    warm-up document in its folder, as ``warmscope warmup --emit`` writes them."""
    folder = Path(doc["folder"])
    target = recipe or folder / "recipe.py"
    written = copy_recipe(doc, target)
    if written is not None:
        doc["emitted"] = str(written)
    atomic_write(folder / "warmup.json", json.dumps(doc, indent=1, default=str) + "\n")
    return written


class WarmupScreen(ModalScreen[None]):
    """The warm-up of one run's settings, live; leaving stops it."""

    CSS_PATH = "warmup_screen.tcss"  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,escape", "leave", "Leave (stops the warm-up)", id="leave-warmup"),
    ]

    class Stepped(Message):
        def __init__(self, progress: Progress) -> None:
            super().__init__()
            self.progress = progress

    class Ended(Message):
        """The worker's last word: the document and the recipe written, or why not."""

        def __init__(self, doc: dict[str, Any] | None, recipe: Path | None, error: str) -> None:
            super().__init__()
            self.doc, self.recipe, self.error = doc, recipe, error

    def __init__(self, engine: Engine, recipe: Path | None, title: str) -> None:
        super().__init__()
        self.engine = engine
        self.recipe = recipe
        self.title_text = title
        self.rows: dict[str, Row] = {BASELINE: Row(BASELINE)}
        self.phase = "observe"
        self.running = ""
        self.cost = ""  # "about 3 min 40 s in all", once the warm-up has estimated it
        self.ended = False
        self.t0 = time.monotonic()
        self._clock: Timer | None = None
        # Held, not queried: a message may come before the box's children are mounted.
        self.table: DataTable[Text] = DataTable(
            id="warmup-table", cursor_type="none", zebra_stripes=True
        )
        for name in COLUMNS:
            self.table.add_column(name, key=name)
        self.status_line = ClockLine("", id="warmup-status")
        self.answer = Static("", id="warmup-answer")
        self.notes = Static("", id="warmup-notes")
        self.answer.display = self.notes.display = False  # until the warm-up ends

    def compose(self) -> ComposeResult:
        box = Vertical(id="warmup-box")
        box.border_title = "warm-up recipe"
        with box:
            yield Static(Text(clean_line(self.title_text), style="dim"), id="warmup-head")
            yield self.table
            yield self.status_line
            yield self.answer
            yield self.notes
        yield KeysFooter()

    def on_mount(self) -> None:
        self._show_row(self.rows[BASELINE])
        self._show_status()
        self._clock = self.set_interval(CLOCK_S, self._show_status)
        self.run_engine()

    # -- the worker -------------------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False)
    def run_engine(self) -> None:
        engine = self.engine

        def tell(progress: Progress) -> None:  # from this thread: a message to the screen
            self.post_message(self.Stepped(progress))

        engine.on_progress = tell
        try:
            doc = engine.run()
            recipe = write_outputs(doc, self.recipe)
        except KeyboardInterrupt:  # stopped: by leaving the screen
            where = f"; the finished processes are in {engine.folder}" if engine.folder else ""
            self.post_message(self.Ended(None, None, f"stopped{where}"))
        except Exception as exc:  # whatever ends the warm-up is said on the screen, one line
            self.post_message(self.Ended(None, None, one_line(str(exc) or repr(exc))))
        else:
            self.post_message(self.Ended(doc, recipe, ""))

    # -- handlers: the UI state is theirs -----------------------------------------------------

    def on_warmup_screen_stepped(self, message: Stepped) -> None:
        p = message.progress
        if p.phase in ("plan", "estimate"):  # what it costs, not a step: beside the clock
            if p.phase == "estimate":
                self.cost = p.note.split(":")[0]
                self._show_status()
            return
        self.phase = p.phase
        for label in p.cells:
            if label not in self.rows:
                self.rows[label] = Row(label)
                self._show_row(self.rows[label])
        if p.cell and p.facts is None:
            self.running = f"{p.cell}, process {p.repeat + 1} of {self._processes(p.phase)}"
        elif p.cell and p.facts is not None:
            row = self.rows.setdefault(p.cell, Row(p.cell))
            row.facts = p.facts
            row.done = len(p.facts["processes"])
            row.failed = row.done - len(p.facts["runs"])
            self._show_row(row)
            self.running = ""
        else:
            self.running = ""
        self._show_status()

    def on_warmup_screen_ended(self, message: Ended) -> None:
        self.ended = True
        if self._clock is not None:
            self._clock.stop()
        doc = message.doc
        answer = self.answer
        answer.display = self.notes.display = True
        if doc is None:
            self.phase = "ended"
            answer.update(Text(clean_line(message.error), style="bold red"))
            self._show_status()
            return
        self.phase = "done"
        self._fill_from(doc)
        style = "bold green" if is_verified(doc["verdict"]) else "bold yellow"
        answer.update(Text(clean_line(doc["answer"]), style=style))
        notes = [f"{c['label']}: {c['why']}" for c in doc["candidates"] if c.get("why")]
        notes += [
            f"{c['label']}: {c['break_even']}" for c in doc["candidates"] if c.get("break_even")
        ]
        notes += [f"observed {o['note']}" for o in doc["observed"] if o.get("note")]
        if message.recipe is not None:
            verified = doc["verdict"] if is_verified(doc["verdict"]) else "the best, NOT verified"
            notes.append(f"recipe   {message.recipe} ({verified}; its header says so)")
        notes.append(f"records  {doc['folder']}")
        self.notes.update(Text("\n".join(clean_line(n) for n in notes)))
        self._show_status()

    def _fill_from(self, doc: dict[str, Any]) -> None:
        """The document's figures and verdicts: the final word on every row."""
        base = self.rows.setdefault(BASELINE, Row(BASELINE))
        base.facts = doc["baseline"]
        base.done = len(doc["baseline"]["processes"])
        for c in doc["candidates"]:
            row = self.rows.get(c["label"]) or Row(c["label"])
            self.rows[c["label"]] = row
            row.facts, row.verdict = c, c["verdict"]
            row.done = len(c.get("processes", []))
            row.failed = row.done - len(c.get("runs", []))
        for row in self.rows.values():
            self._show_row(row)

    def _show_row(self, row: Row) -> None:
        table = self.table
        cells = row.cells(self.engine.per_cell)
        if row.label in table.rows:
            for name, value in zip(COLUMNS, cells, strict=True):
                table.update_cell(row.label, name, value, update_width=True)
        else:
            table.add_row(*cells, key=row.label)

    def _processes(self, phase: str) -> int:
        return 1 if phase in ("artifact", "again") else self.engine.per_cell

    def _show_status(self) -> None:
        elapsed = f"{time.monotonic() - self.t0:.0f} s"
        if self.phase == "done":
            line = f"done in {elapsed}"
        elif self.phase == "ended":
            line = f"ended after {elapsed}"
        else:
            line = PHASES.get(self.phase, self.phase)
            if self.running:
                line += f" · {self.running}"
            line += f" · {elapsed}" + (f" of {self.cost}" if self.cost else "")
            line += " · q or Esc stops it"
        self.status_line.show(clean_line(line))

    # -- leaving ------------------------------------------------------------------------------

    def action_leave(self) -> None:
        if not self.ended:
            self.engine.stop()
            self.notify("warm-up stopped", timeout=2)
        self.dismiss(None)

    def on_unmount(self) -> None:
        if not self.ended:
            self.engine.stop()  # the app is closing: no process of it is left behind


def open_screen(app: App[Any], state: AppState) -> None:
    """``W``: a warm-up recipe from the viewed run's settings, verified in fresh processes.
    Asked every time: a warm-up derives code from the run's target and runs it in many
    processes, whoever made the run. Settings read from a record that choose what runs (an
    interpreter, the child's environment) are shown first."""
    entry = state.viewed
    if state.live is not None:
        app.notify("a run is going: the warm-up starts once it ends", timeout=3)
        return
    if entry is None or state.starts.refused():
        return
    if any(isinstance(screen, WarmupScreen) for screen in app.screen_stack):
        app.notify("a warm-up is open: q leaves it (and stops it)", timeout=3)
        return
    source = entry.record_name or "a record" if entry.source != "run" else None
    settings = warmup_settings(entry.data.settings)

    def answered(yes: bool | None) -> None:
        if yes:
            trusted_then(app, settings, source, partial(_begin, app, state, entry))
        else:
            app.notify("nothing started", timeout=2)

    app.push_screen(ConfirmScreen(warmup_question(entry, settings)), answered)


def _begin(app: App[Any], state: AppState, entry: RunEntry, settings: RunSettings) -> None:
    """Make the warm-up's engine on a worker (over ``--host`` its target is asked there),
    then show it."""
    folder, recipe = warmup_paths(entry.data.record_path)

    def done(engine: Engine | None, error: str) -> None:
        if engine is None:
            app.notify(error, title="No warm-up", severity="error", timeout=8, markup=False)
            return
        title = f"run #{entry.number} {settings.target}"
        app.push_screen(WarmupScreen(engine, recipe, title))

    build = partial(make_engine, settings, folder)  # looked up now: tests replace it
    state.starts.begin(Pending("a warm-up", build, done))
