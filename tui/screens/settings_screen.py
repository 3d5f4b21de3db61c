"""``SettingsScreen``: the next run's settings, generated from the declared knobs.

Presets first, then what to run, then every knob by group with its help text. A value the
knob refuses is marked in place with the knob's own message, and the form cannot be applied
until it is fixed. ↑ ↓ (j k outside text fields) move from field to field, the focused one
marked ``▶``; ``/`` jumps to a field by (part of) its name.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on
from textual.actions import SkipAction
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Static

from warmscope.core.base.safe_text import REPLACEMENT, clean_name
from warmscope.core.child.knobs import KNOB_BY_NAME, KNOBS, Knob, KnobError, show_value
from warmscope.core.data.settings import (
    PRESETS,
    RunSettings,
    SettingsError,
)
from warmscope.core.data.settings.field_text import help_of, parse_field
from warmscope.core.data.sweep_plan import (
    SweepPlan,
    check_presets,
    check_varies,
    parse_repeat,
    split_names,
)
from warmscope.core.data.sweep_plan import plan as sweep_plan
from warmscope.core.data.targets import TargetError
from warmscope.tui.messages import NextRun
from warmscope.tui.widgets.choice_field import ChoiceField
from warmscope.tui.widgets.keys_footer import KeysFooter

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState

NOTE = (
    "These apply to the next run: each run is a fresh process, because JIT and compiler "
    "state is process-wide."
)
NO_PRESET = "(none)"
GROUP_TITLES = {
    "run": "how the model runs",
    "torchscript": "TorchScript executor",
    "backends": "backends",
    "compile": "torch.compile",
}


@dataclass
class SettingsResult:
    settings: RunSettings
    run_now: bool
    plan: SweepPlan = dataclasses.field(default_factory=SweepPlan)
    """With ``run_now``: N fresh processes, or the chosen cells, as a sweep (``plan.many``)."""


def knob_options(k: Knob) -> list[str]:
    """The values a bool or choice knob can take in the form."""
    values = ["on", "off"] if k.type == "bool" else list(k.choices)
    return ["default", *values] if k.default is None else values


def uses_choice(k: Knob) -> bool:
    return k.type in ("bool", "choice")


FEED_FIELDS = ("inputs_file", "dims", "schedule", "seed", "gap", "idle_probe")
"""How the model is fed: one text field each, typed as after its option on the command line
(``field_text``: the option's parser and check, its ``--help`` beside the field)."""
SWEEP_FIELDS = {
    "processes": "fresh processes per setting, interleaved; ^r runs them as a sweep: medians "
    "with 95% intervals (3 or more give intervals, 6 reach 95%)",
    "sweep_presets": "presets to compare, each a setting of the sweep (space-separated): "
    + " ".join(PRESETS),
    "vary": "knob values to compare, as --vary: KNOB=V1,V2 (several: a grid), e.g. "
    "profiling_executor=on,off",
}
"""How many processes, and which settings a sweep compares; kept between visits."""
ADAPTIVE_HELP = (
    "as --adaptive: rounds stop once the answer is decided, a setting beyond noise worse than "
    "the best drops out; processes is then the cap per setting"
)
FEED_PLACEHOLDERS = {"inputs_file": "none", "dims": "none", "gap": "none", "idle_probe": "none"}
MARK = "▶ "


class Form(VerticalScroll, can_focus=False, inherit_bindings=False):
    """The fields' scroll: ↑ ↓ belong to the screen (they move the focus), not to scrolling."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]


def row_name(row: DOMNode) -> str:
    return (row.id or "").removeprefix("row-")


def initials(name: str) -> str:
    """``profiling_executor`` → ``pe``, ``dynamo.cache_size_limit`` → ``dcsl``."""
    return "".join(word[0] for word in re.split(r"[_.]", name.lower()) if word)


def find_fields(query: str, names: list[str], helps: dict[str, str]) -> list[str]:
    """The fields ``query`` names: names that start with it, then names whose initials start
    with it (``pe``: profiling_executor), then names that hold it, then fields whose help text
    holds it (case-insensitive)."""
    q = query.strip().lower()
    if not q:
        return []
    found: list[str] = []
    for matches in (
        lambda n: n.lower().startswith(q),
        lambda n: len(q) > 1 and initials(n).startswith(q),
        lambda n: q in n.lower(),
        lambda n: q in helps.get(n, "").lower(),
    ):
        found += [n for n in names if n not in found and matches(n)]
    return found


def feed_text(settings: RunSettings, name: str) -> str:
    """A feed setting as typed on the command line."""
    value = getattr(settings, name)
    if name == "dims":
        return " ".join(value)
    if name == "idle_probe":
        return ",".join(f"{g:g}" for g in value)
    if name == "gap":
        return "" if value is None else f"{value:g}"
    return "" if value is None else str(value)


def target_help(target: str) -> str:
    """The target field's help: the forms a target takes, or, where its name holds characters
    a terminal does not show, the name as the main view shows it."""
    shown = clean_name(target)
    if shown == target:
        return "model.pt, path/file.py:factory, package.module:factory or sample:NAME"
    # The field holds the name as it is; what a terminal would not show is said.
    return (
        f"holds characters a terminal does not show, marked {REPLACEMENT} as the "
        f"main view marks them: {shown}"
    )


class SettingsScreen(Screen[SettingsResult | None]):
    CSS_PATH = "settings_screen.tcss"  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Cancel", id="settings-cancel", tooltip="Keep the old settings"
        ),
        Binding(
            "ctrl+s", "apply(False)", "Apply", id="settings-apply", tooltip="Use for the next run"
        ),
        Binding(
            "ctrl+r",
            "apply(True)",
            "Apply & run",
            id="settings-run",
            tooltip="Apply and start a run",
        ),
        # Priority, so that what is typed right after `/` (or after Enter) lands where the focus
        # went: keys already queued for the old focus would be lost. Skipped in text fields.
        Binding(
            "slash",
            "find",
            "Find",
            id="settings-find",
            tooltip="Jump to a field by name",
            priority=True,
        ),
        Binding("enter", "find_go", "Go", show=False, priority=True),
        # Not priority: a text field keeps j and k as letters; ↑ ↓ reach the screen from any.
        Binding("down,j", "move(1)", "Next field", show=False),
        Binding("up,k", "move(-1)", "Previous field", show=False),
    ]

    def __init__(self, base: RunSettings) -> None:
        super().__init__(id="settings")
        self.base = base
        self.errors: dict[str, str] = {}
        self.helps: dict[str, str] = {}
        self.found: list[str] = []
        """Fields the jump line's text names, best first; ``found_at`` is the one shown."""
        self.found_at = 0
        self._before_find: Widget | None = None

    # -- building the form --------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("Settings for the next run", id="settings-title")
        yield Static(NOTE, id="settings-note")
        yield Static("", id="form-error", markup=False)
        with Horizontal(id="settings-find-line"):
            yield Label("jump to", id="settings-find-label")
            yield Input(placeholder="part of a name", compact=True, id="settings-find")
            yield Static("", id="settings-found", markup=False)
        with Form(id="form"):
            yield Static("presets", classes="group-title")
            yield from self._row(
                "preset",
                ChoiceField([NO_PRESET, *PRESETS], self.base.preset or NO_PRESET, id="preset"),
                self._preset_help(self.base.preset),
            )
            yield Static("what to run", classes="group-title")
            yield from self._what_to_run_rows()
            yield from self._feed_rows()
            yield Static("repeats and sweeps", classes="group-title")
            yield from self._sweep_rows()
            yield from self._knob_rows()
        with Horizontal(id="settings-buttons"):
            yield Button("Apply ^s", id="apply", variant="primary", compact=True)
            yield Button("Apply & run ^r", id="apply-run", variant="success", compact=True)
            yield Button("Cancel esc", id="cancel", compact=True)
        yield KeysFooter()

    def _what_to_run_rows(self) -> ComposeResult:
        """The target, its inputs, and how long to run it (iterations or a duration)."""
        b = self.base
        yield from self._row(
            "target", Input(b.target, compact=True, id="field-target"), target_help(b.target)
        )
        yield from self._row(
            "inputs",
            Input(
                " ".join(b.inputs),
                placeholder="the target's own",
                compact=True,
                id="field-inputs",
            ),
            help_of("inputs") + " (space-separated)",
        )
        yield from self._row(
            "iters",
            Input(str(b.iters), compact=True, id="field-iters"),
            help_of("iters"),
        )
        yield from self._row(
            "duration",
            Input(
                "" if b.duration is None else f"{b.duration:g}",
                compact=True,
                id="field-duration",
            ),
            help_of("duration") + " (empty: iters)",
        )

    def _feed_rows(self) -> ComposeResult:
        """How the model is fed (``FEED_FIELDS``): a text field each, as on the command line."""
        for name in FEED_FIELDS:
            yield from self._row(
                name,
                Input(
                    feed_text(self.base, name),
                    placeholder=FEED_PLACEHOLDERS.get(name, ""),
                    compact=True,
                    id=f"field-{name}",
                ),
                help_of(name),
            )

    def _sweep_rows(self) -> ComposeResult:
        """How many processes, which settings a sweep compares, and whether it is adaptive."""
        for name, help_text in SWEEP_FIELDS.items():
            yield from self._row(
                name,
                Input(
                    "1" if name == "processes" else "",
                    placeholder="none" if name != "processes" else "",
                    compact=True,
                    id=f"field-{name}",
                ),
                help_text,
            )
        yield from self._row(
            "adaptive", ChoiceField(["off", "on"], "off", id="field-adaptive"), ADAPTIVE_HELP
        )

    def _knob_rows(self) -> ComposeResult:
        """Every knob, by group in the order declared, each group under its title."""
        for group in dict.fromkeys(k.group for k in KNOBS):
            yield Static(GROUP_TITLES.get(group, group), classes="group-title")
            for k in KNOBS:
                if k.group == group:
                    yield from self._row(k.name, self._knob_widget(k), k.help)

    def _row(self, name: str, widget: Widget, help_text: str) -> ComposeResult:
        """Name and control on one line, the help (or the reason a value is refused) below."""
        with Horizontal(classes="field-line", id=f"row-{name}"):
            yield Label("  " + name, classes="field-name", markup=False)
            # Not mounted yet: its styles are worked out as it mounts (an update now would
            # style it twice, a few ms for each of the form's fields).
            yield widget.add_class("field-control", update=False)
        yield Static(help_text, classes="field-help", id=f"help-{name}", markup=False)
        self.helps[name] = help_text

    def _knob_widget(self, k: Knob) -> Widget:
        value = self.base.knobs.get(k.name, k.default)
        if uses_choice(k):
            return ChoiceField(knob_options(k), show_value(value), id=f"knob-{k.name}")
        return Input(
            "" if value is None else show_value(value),
            placeholder="default" if k.default is None else show_value(k.default),
            compact=True,
            id=f"knob-{k.name}",
        )

    def _preset_help(self, name: str | None) -> str:
        if not name or name not in PRESETS:
            return "a named set of knobs; choosing one sets its knobs below, the others stay"
        p = PRESETS[name]
        knobs = ", ".join(f"{k}={show_value(v)}" for k, v in p.knobs.items())
        return f"{p.help} [{knobs}]"

    def on_mount(self) -> None:
        self.query_one("#preset", ChoiceField).focus()

    def load(self, base: RunSettings) -> None:
        """Show ``base`` (the screen is kept between visits: the form is built once)."""
        self.base = base
        if not self.is_mounted:
            return  # compose reads self.base
        with self.prevent(ChoiceField.Changed, Input.Changed):
            self.query_one("#preset", ChoiceField).value = base.preset or NO_PRESET
            fields = {
                "target": base.target,
                "inputs": " ".join(base.inputs),
                "iters": str(base.iters),
                "duration": "" if base.duration is None else f"{base.duration:g}",
                **{name: feed_text(base, name) for name in FEED_FIELDS},
            }
            for field, text in fields.items():
                self.query_one(f"#field-{field}", Input).value = text
            for k in KNOBS:
                value = base.knobs.get(k.name, k.default)
                widget = self.query_one(f"#knob-{k.name}")
                if isinstance(widget, ChoiceField):
                    widget.value = show_value(value)
                elif isinstance(widget, Input):
                    widget.value = "" if value is None else show_value(value)
        self.helps["preset"] = self._preset_help(base.preset)
        for field in list(self.helps):
            self._set_error(field, "")
        self.query_one("#form-error", Static).display = False
        self.query_one("#preset", ChoiceField).focus()
        self.query_one("#form").scroll_home(animate=False)

    # -- reacting -----------------------------------------------------------------------

    @on(ChoiceField.Changed, "#preset")
    def preset_changed(self, event: ChoiceField.Changed) -> None:
        name = event.value
        self.helps["preset"] = self._preset_help(name)
        self.query_one("#help-preset", Static).update(self.helps["preset"])
        if name not in PRESETS:
            return
        # As `--preset` does: the preset's knobs on top of the others, which stay as they are.
        for key, value in PRESETS[name].knobs.items():
            widget = self.query_one(f"#knob-{key}")
            if isinstance(widget, ChoiceField):
                widget.value = show_value(value)
            elif isinstance(widget, Input):
                widget.value = "" if value is None else show_value(value)

    @on(ChoiceField.Changed, "#field-adaptive")
    def adaptive_changed(self, event: ChoiceField.Changed) -> None:
        self._show_plan()

    @on(Input.Changed, "#form Input")
    def input_changed(self, event: Input.Changed) -> None:
        field = (event.input.id or "").partition("-")[2]
        self._set_error(field, self._check(field, event.value))
        if field in SWEEP_FIELDS:
            self._show_plan()

    def plan(self) -> SweepPlan:
        """The repeats and sweep the form asks for (``SweepPlan()``, one process, where a field
        is refused: ``build`` says why)."""
        try:
            return self._plan()
        except ValueError:
            return SweepPlan()

    def _plan(self) -> SweepPlan:
        """The plan the sweep fields ask for, checked whole (``sweep_plan.plan``, as the
        command line checks it): ``UsageError`` names what is wrong."""
        text = {n: self.query_one(f"#field-{n}", Input).value for n in SWEEP_FIELDS}
        return sweep_plan(
            parse_repeat(text["processes"]),
            split_names(text["sweep_presets"]),
            text["vary"].split(),
            adaptive=self.query_one("#field-adaptive", ChoiceField).value == "on",
        )

    def _show_plan(self) -> None:
        """The run button says what ^r starts: one run, N processes, or a sweep."""
        plan = self.plan()
        label = "Apply & run"
        if plan.sweeps:
            label = f"Sweep {'≤' if plan.adaptive else '×'}{plan.repeat}"
        elif plan.many:
            label = f"Run ×{plan.repeat}"
        self.query_one("#apply-run", Button).label = label + " ^r"

    def _check(self, field: str, text: str) -> str:
        """The reason ``text`` is refused for ``field``, or an empty string."""
        try:
            self._parse(field, text)
        except (KnobError, SettingsError, TargetError, ValueError) as exc:
            return str(exc)
        return ""

    def _parse(self, field: str, text: str) -> Any:
        if field in KNOB_BY_NAME:
            return KNOB_BY_NAME[field].parse(text)
        if field in ("iters", "duration", "inputs", *FEED_FIELDS):
            return parse_field(self.base, field, text)
        if field == "processes":
            return parse_repeat(text)
        if field == "sweep_presets":
            return check_presets(split_names(text))
        if field == "vary":
            return check_varies(text.split())
        if field == "target":
            if not text.strip():
                raise SettingsError("target: what to run (e.g. sample:speech)")
            return text.strip()
        return text

    def _set_error(self, field: str, message: str) -> None:
        """Show why ``field`` is refused in place of its help, or give the help back."""
        if message:
            self.errors[field] = message
        else:
            self.errors.pop(field, None)
        line = self.query_one(f"#help-{field}", Static)
        line.update(message or self.helps.get(field, ""))
        line.set_class(bool(message), "-error")
        self.query_one(f"#row-{field}").set_class(bool(message), "-invalid")

    # -- moving and finding -------------------------------------------------------------

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Mark the focused field's row (a ``▶`` and a reversed name: seen without colour too),
        with its help line in view. (The mark and the blank it replaces are two cells each: the
        names keep their size, and the form is not laid out again.)"""
        row = next((a for a in event.widget.ancestors_with_self if a.has_class("field-line")), None)
        for line in self.query(".field-line.-focused"):
            if line is not row:
                line.remove_class("-focused")
                line.query_one(".field-name", Label).update("  " + row_name(line), layout=False)
        if row is None:
            return
        row.add_class("-focused")
        row.query_one(".field-name", Label).update(MARK + row_name(row), layout=False)
        self.query_one(f"#help-{row_name(row)}").scroll_visible(animate=False)

    def field_control(self, name: str) -> Widget:
        return self.query_one(f"#row-{name} > .field-control")

    def action_move(self, step: int) -> None:
        """↑ ↓: the previous or next field; in the jump line, the previous or next field found."""
        if self.query_one("#settings-find", Input).has_focus:
            if self.found:
                self._show_found((self.found_at + step) % len(self.found))
            return
        if step > 0:
            self.focus_next()
        else:
            self.focus_previous()

    def action_find(self) -> None:
        find = self.query_one("#settings-find", Input)
        if isinstance(self.focused, Input):
            raise SkipAction()  # a `/` typed in a path
        self._before_find = self.focused
        self.query_one("#settings-find-line").display = True
        find.value = ""
        # At once, not after the queue: "/prof" typed fast must land in the jump line.
        self.set_focus(find, scroll_visible=False)

    @on(Input.Changed, "#settings-find")
    def find_changed(self, event: Input.Changed) -> None:
        self.found = find_fields(event.value, list(self.helps), self.helps)
        self._show_found(0)

    def _show_found(self, at: int) -> None:
        self.found_at = at
        for line in self.query(".field-line.-found"):
            line.remove_class("-found")
        found = self.query_one("#settings-found", Static)
        if not self.found:
            text = self.query_one("#settings-find", Input).value
            found.update(f"no field named {text!r}" if text.strip() else "")
            return
        name = self.found[at]
        row = self.query_one(f"#row-{name}")
        row.add_class("-found")
        # At the top, where the eye is (the jump line); from the row's place in the form, which
        # the jump line showing up does not move.
        self.query_one(Form).scroll_to(y=row.virtual_region.y, animate=False, immediate=True)
        more = f" ({at + 1} of {len(self.found)}, ↓ next)" if len(self.found) > 1 else ""
        found.update(f"→ {name}{more}  ⏎ go  esc back")

    def action_find_go(self) -> None:
        if not self.query_one("#settings-find", Input).has_focus:
            raise SkipAction()
        target = self.field_control(self.found[self.found_at]) if self.found else None
        self._end_find(target)

    def _end_find(self, target: Widget | None) -> None:
        for line in self.query(".field-line.-found"):
            line.remove_class("-found")
        self.query_one("#settings-find-line").display = False
        self.set_focus(target or self._before_find)

    # -- applying -----------------------------------------------------------------------

    def build(self) -> RunSettings:
        """The form as ``RunSettings``; raises ``SettingsError`` naming the first problem."""
        for field in ("target", "inputs", "iters", "duration", *FEED_FIELDS, *SWEEP_FIELDS):
            self._set_error(
                field, self._check(field, self.query_one(f"#field-{field}", Input).value)
            )
        for k in KNOBS:
            widget = self.query_one(f"#knob-{k.name}")
            if isinstance(widget, Input):
                self._set_error(k.name, self._check(k.name, widget.value))
        if self.errors:
            field, message = next(iter(self.errors.items()))
            raise SettingsError(message if field in message else f"{field}: {message}")
        try:
            self._plan()
        except ValueError as exc:  # each field is right, the plan as a whole is not
            raise SettingsError(str(exc)) from None
        settings = self.base.copy()
        value = lambda field: self.query_one(f"#field-{field}", Input).value  # noqa: E731
        settings.target = self._parse("target", value("target"))
        settings.inputs = self._parse("inputs", value("inputs"))
        settings.iters = self._parse("iters", value("iters"))
        settings.duration = self._parse("duration", value("duration"))
        for name in FEED_FIELDS:
            setattr(settings, name, self._parse(name, value(name)))
        preset = self.query_one("#preset", ChoiceField).value
        settings.preset = preset if preset in PRESETS else None
        for k in KNOBS:
            widget = self.query_one(f"#knob-{k.name}")
            text = str(widget.value) if isinstance(widget, (Input, ChoiceField)) else ""
            settings.knobs[k.name] = k.parse(text)
        settings.check_here()  # a target on --host is checked there when the run starts
        return settings

    def action_apply(self, run_now: bool) -> None:
        error = self.query_one("#form-error", Static)
        try:
            settings = self.build()
        except (SettingsError, KnobError) as exc:
            error.update(f"Not applied: {exc}")
            error.display = True
            self.notify(str(exc), title="Not applied", severity="error", markup=False)
            return
        self.dismiss(SettingsResult(settings, run_now, self.plan()))

    def action_cancel(self) -> None:
        if self.query_one("#settings-find-line").display:
            self._end_find(None)  # Esc leaves the jump line first, the screen after
            return
        self.dismiss(None)

    @on(Button.Pressed)
    def button(self, event: Button.Pressed) -> None:
        if event.button.id == "apply":
            self.action_apply(False)
        elif event.button.id == "apply-run":
            self.action_apply(True)
        else:
            self.action_cancel()


def open_screen(app: App[Any], state: AppState) -> None:
    """``e``: the form over the next run's settings; what is applied becomes them (``NextRun``),
    run at once with Ctrl+R (a sweep where it asks for more than one process)."""
    base = state.next_base()

    def done(result: SettingsResult | None) -> None:
        if result is not None:
            told = "applies to the next run: press r"
            app.post_message(
                NextRun(result.settings, told, run_now=result.run_now, plan=result.plan)
            )

    # Built once (a form of every knob takes a while to mount), filled anew each time.
    if not app.is_screen_installed("settings"):
        app.install_screen(SettingsScreen(base), "settings")
    screen = app.get_screen("settings")
    assert isinstance(screen, SettingsScreen)
    screen.load(base)
    app.push_screen(screen, done)
