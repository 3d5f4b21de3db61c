"""``IterationScreen``: one iteration: its latency, its events and, if it was profiled, where
its time went (operators, and the diff against the steady profiled iteration)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from warmscope.core.data.breakdown import OpDelta, diff, steady_reference
from warmscope.core.data.run import Event
from warmscope.tui import fmt
from warmscope.tui.keys import opens
from warmscope.tui.run_view import RunEntry
from warmscope.tui.screens.tabbed_modal import TabbedModal, tab_bindings
from warmscope.tui.widgets.keys_footer import KeysFooter
from warmscope.tui.widgets.row_list import RowList
from warmscope.tui.widgets.run.events_pane import EventsPane

OPERATOR_W = 34
SHAPES_W = 40
NOT_PROFILED = (
    "not profiled{others}: press p to profile chosen iterations on the next run "
    "(e.g. 0,1,steady; the same as --profile-iters)"
)


@dataclass
class IterationFacts:
    """What the screen shows of one iteration, copied out of the run once."""

    iteration: int
    ms: float | None
    label: str | None
    events: list[Event]
    profile: dict[str, Any] | None
    reference: int | None
    steady: dict[str, Any] | None
    profiled: list[int] = field(default_factory=list)
    deltas: list[OpDelta] = field(default_factory=list)

    @classmethod
    def of(cls, entry: RunEntry, iteration: int) -> IterationFacts:
        steady_from = entry.view.summary.steady_from if entry.view.summary else None
        data = entry.snapshot()  # a live run goes on while the screen reads it
        profiles = dict(data.profiles)
        profile = profiles.get(iteration)
        if profile is not None and "ops" not in profile:
            profile = None
        reference = steady_reference(profiles, steady_from)
        steady = profiles.get(reference) if reference is not None else None
        facts = cls(
            iteration=iteration,
            ms=data.latency(iteration) if 0 <= iteration < data.count else None,
            label=data.label(iteration),
            events=[e for e in data.events_at(iteration) if e.kind != "stderr"],
            profile=profile,
            reference=reference,
            steady=steady,
            profiled=sorted(profiles),
        )
        if profile is not None and steady is not None and reference != iteration:
            facts.deltas = diff(profile, steady)
        return facts


def right(text: str, style: str = "") -> Text:
    return Text(text, style=style, justify="right")


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def profile_line(profile: dict[str, Any]) -> str:
    """``75.3 ms = 12.4 ms in operators + 62.9 ms not in any operator (84%)``."""
    wall = float(profile.get("wall_ms", 0.0))
    ops = float(profile.get("ops_ms", 0.0))
    none = float(profile.get("unaccounted_ms", 0.0))
    share = f" ({none / wall:.0%})" if wall > 0 else ""
    return (
        f"{fmt.ms(wall)} = {fmt.ms(ops)} in operators + {fmt.ms(none)} not in any operator{share}"
    )


def why(delta: OpDelta) -> str:
    if delta.kind == "only here":
        return "only here"
    if delta.kind == "unaccounted":
        return "JIT, compiler, Python"
    ratio = delta.ratio
    return f"×{ratio:.1f} slower" if ratio is not None else "slower"


class IterationScreen(TabbedModal):
    """Keyboard first: 1 2 3 switch tabs, Enter on an event shows its full text, Esc closes."""

    CSS_PATH = "run_details.tcss"  # loaded when the screen first opens

    TABS = (
        ("1", "it-tab-diff", "Diff", "#iteration-diff"),
        ("2", "it-tab-ops", "Operators", "#iteration-ops"),
        ("3", "it-tab-events", "Events", "#iteration-events"),
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        *tab_bindings("iteration", TABS),
        Binding("t", "all_text", "All text", id="iteration-text", tooltip="every event's text"),
        Binding("p", opens("profile_screen"), "Profile…", id="iteration-profile"),
    ]

    def __init__(self, entry: RunEntry, iteration: int) -> None:
        super().__init__()
        self.entry = entry
        self.facts = IterationFacts.of(entry, iteration)

    def compose(self) -> ComposeResult:
        f = self.facts
        with Vertical(id="iteration-box"):
            yield Static(self._title(), id="iteration-title", markup=False)
            yield Static(
                profile_line(f.profile) if f.profile else self._not_profiled(),
                id="iteration-profile",
                classes="" if f.profile else "-not-profiled",
                markup=False,
            )
            with TabbedContent(id="iteration-tabs", initial=self._initial_tab()):
                if f.profile is not None:
                    with TabPane(self._diff_tab_title(), id="it-tab-diff"):
                        yield from self._diff_widgets()
                    with TabPane(f"Operators ({self._op_count()})", id="it-tab-ops"):
                        yield self._ops_table()
                with TabPane(f"Events ({len(f.events)})", id="it-tab-events"):
                    if f.events:
                        yield EventsPane(id="iteration-events")
                    else:
                        yield Static("no events in this iteration", classes="iteration-note")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#iteration-box").border_title = f"iteration {self.facts.iteration}"
        self.query_one("#iteration-box").border_subtitle = Content(self.entry.title)
        if self.facts.events:
            self.query_one(EventsPane).show_rows(self.facts.events, follow=False)
        self.focus_tab(self.query_one(TabbedContent).active)

    # -- content --------------------------------------------------------------------------

    def _title(self) -> str:
        f = self.facts
        parts = [fmt.ms(f.ms)]
        if f.label:
            parts.append(f.label)
        parts.append(f"{len(f.events)} event(s)")
        if f.profile is not None:
            parts.append("profiled")
        if f.reference == f.iteration:
            parts.append("the steady reference")
        return f"#{f.iteration} · " + " · ".join(parts)

    def _not_profiled(self) -> str:
        others = ", ".join(f"#{i}" for i in self.facts.profiled[:6])
        if len(self.facts.profiled) > 6:
            others += ", …"
        return NOT_PROFILED.format(others=f" (this run profiled {others})" if others else "")

    def _initial_tab(self) -> str:
        f = self.facts
        if f.profile is None:
            return "it-tab-events"
        return "it-tab-diff" if f.deltas else "it-tab-ops"

    def _diff_tab_title(self) -> str:
        ref = self.facts.reference
        return "vs steady" if ref is None or ref == self.facts.iteration else f"vs steady #{ref}"

    def _op_count(self) -> int:
        profile = self.facts.profile or {}
        return len(profile.get("ops", [])) + int(profile.get("rest", {}).get("operators", 0))

    def _diff_widgets(self) -> ComposeResult:
        f = self.facts
        if f.reference is None:
            yield Static(
                "no profiled iteration is in steady state to compare with: "
                "add `steady` to the list (p)",
                classes="iteration-note",
            )
            return
        if f.reference == f.iteration:
            yield Static(
                "this is the steady reference: the other profiled iterations are compared with it",
                classes="iteration-note",
            )
            return
        if not f.deltas:
            yield Static(
                f"nothing here is much slower than in steady iteration #{f.reference}",
                classes="iteration-note",
            )
            return
        yield Static(
            f"what #{f.iteration} adds over steady #{f.reference}, largest first: operators "
            "only here or much slower, and time in no operator",
            classes="iteration-note",
        )
        table: DataTable[Text | str] = DataTable(
            id="iteration-diff", cursor_type="row", zebra_stripes=True
        )
        table.add_column("operator", key="operator")
        for name in ("here", "steady", "adds", "calls"):
            table.add_column(right(name), key=name)
        table.add_column("why", key="why")
        for d in f.deltas:
            unaccounted = d.kind == "unaccounted"
            table.add_row(
                Text(clip(d.name, OPERATOR_W), style="italic" if unaccounted else ""),
                right(fmt.ms(d.slow_ms)),
                right("not run" if d.kind == "only here" else fmt.ms(d.steady_ms), "dim"),
                right("+" + fmt.ms(d.added_ms), "bold"),
                right("" if unaccounted else f"{d.calls_slow}/{d.calls_steady}"),
                Text(why(d), style="dim"),
            )
        yield table

    def _ops_table(self) -> DataTable[Text | str]:
        profile = self.facts.profile or {}
        ops: list[dict[str, Any]] = list(profile.get("ops", []))
        device = any("device_ms" in op for op in ops)
        table: DataTable[Text | str] = DataTable(
            id="iteration-ops", cursor_type="row", zebra_stripes=True
        )
        table.add_column("operator", key="operator")
        for name in ("self", "total", "calls"):
            table.add_column(right(name), key=name)
        if device:
            table.add_column(right("device"), key="device")
        table.add_column("shapes", key="shapes")
        for op in ops:
            row: list[Text | str] = [
                Text(clip(str(op.get("name", "?")), OPERATOR_W)),
                right(fmt.ms(float(op.get("self_ms", 0.0)))),
                right(fmt.ms(float(op.get("total_ms", 0.0))), "dim"),
                right(str(op.get("calls", ""))),
            ]
            if device:
                row.append(right(fmt.ms(op["device_ms"]) if "device_ms" in op else ""))
            row.append(Text(clip(str(op.get("shapes", "")), SHAPES_W), style="dim"))
            table.add_row(*row)
        rest = profile.get("rest") or {}
        if rest.get("operators"):
            row = [
                Text(f"({rest['operators']} more operators)", style="italic"),
                right(fmt.ms(float(rest.get("self_ms", 0.0)))),
                right(""),
                right(str(rest.get("calls", ""))),
            ]
            if device:
                row.append(right(""))
            row.append("")
            table.add_row(*row)
        return table

    # -- keys -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "tab":
            return self.facts.profile is not None  # else one tab only: hide the keys
        if action == "all_text":
            return bool(self.facts.events)
        return True

    def on_row_list_selected(self, message: RowList.Selected) -> None:
        # a screen loads when first opened
        from warmscope.tui.screens.event_screen import EventDetailScreen

        message.stop()
        self.app.push_screen(EventDetailScreen([message.row]))

    def action_all_text(self) -> None:
        # a screen loads when first opened
        from warmscope.tui.screens.event_screen import EventDetailScreen

        i = self.facts.iteration
        events = list(self.entry.snapshot().events_at(i))  # the child's stderr lines too
        if events:
            self.app.push_screen(EventDetailScreen(events, iteration=i))
