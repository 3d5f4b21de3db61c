"""``GraphsScreen``: what a TorchScript run executed: the graph as loaded beside the graph that
ran last once warm, and the module's code. ``/`` finds text in them, ``w`` wraps long lines."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, ComposeResult, CSSPathType
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.events import Resize
from textual.widgets import Static, TabbedContent, TabPane, TextArea

from warmscope.core.output.digest import graph_facts
from warmscope.tui.run_view import RunEntry
from warmscope.tui.screens.tabbed_modal import TabbedModal, tab_bindings
from warmscope.tui.screens.text_search import TEXT_ACTIONS, TEXT_KEYS, TextSearch
from warmscope.tui.widgets.keys_footer import KeysFooter
from warmscope.tui.widgets.search_line import SearchLine

if TYPE_CHECKING:
    from warmscope.tui.app_state import AppState

SIDE_BY_SIDE_MIN_W = 100
SOURCE_NOTE = re.compile(r"\s+# \S.*:\d+:\d+$")  # `# /path/to/file.py:156:11` after a node
NO_GRAPHS = (
    "This run has no TorchScript graphs: they are captured at the end of script and trace "
    "runs (and .pt archives), not of eager or compiled ones."
)


def without_sources(graph: str) -> str:
    """The graph without the source location that ends most node lines: the structure shows."""
    return "\n".join(SOURCE_NOTE.sub("", line) for line in graph.splitlines())


def pane(text: str, id: str) -> TextArea:
    # Wrapped: a node's line (types, attributes, source) is often wider than half a screen.
    return TextArea(text, read_only=True, soft_wrap=True, show_line_numbers=False, id=id)


class GraphsScreen(TextSearch, TabbedModal):
    """Two scrollable panes (stacked below 100 columns); ``s`` shows the source locations."""

    CSS_PATH: ClassVar[CSSPathType | None] = [
        "run_details.tcss",
        "text_search.tcss",
    ]  # loaded when the screen first opens

    TABS = (
        ("1", "graphs-tab-graphs", "Graphs", "#graph-loaded"),
        ("2", "graphs-tab-code", "Code", "#graph-code"),
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        *tab_bindings("graphs", TABS),
        Binding("s", "toggle_sources", "Sources", id="graphs-sources"),
        *TEXT_KEYS,
    ]

    def __init__(self, entry: RunEntry) -> None:
        super().__init__()
        self.entry = entry
        self.graphs = dict(entry.data.graphs)
        self.sources = False

    def compose(self) -> ComposeResult:
        g = self.graphs
        with Vertical(id="graphs-box"):
            if not any(g.get(k) for k in ("graph", "optimized", "code")):
                yield Static(NO_GRAPHS, id="graphs-none", markup=False)
            else:
                yield Static(
                    "left: the graph as loaded · right: the graph that ran last once warm "
                    "(torch.jit.last_executed_optimized_graph) · s: source locations · / find · "
                    "w: wrap",
                    id="graphs-hint",
                    markup=False,
                )
                with TabbedContent(id="graphs-tabs"):
                    with TabPane("Graphs", id="graphs-tab-graphs"), Horizontal(id="graphs-pair"):
                        yield pane(self._graph("graph"), "graph-loaded")
                        yield pane(self._graph("optimized"), "graph-optimized")
                    with TabPane("Code", id="graphs-tab-code"):
                        yield pane(g.get("code") or "(not captured)", "graph-code")
                yield SearchLine(id="graphs-search")
        yield KeysFooter()

    def on_mount(self) -> None:
        box = self.query_one("#graphs-box")
        box.border_title = "TorchScript graphs"
        box.border_subtitle = Content(self.entry.title)  # a str title is markup
        self._titles()
        found = self.query("#graph-loaded")
        if found:
            found.first().focus()

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width < SIDE_BY_SIDE_MIN_W, "-stacked")

    def _graph(self, key: str) -> str:
        text = self.graphs.get(key) or "(not captured)"
        return text if self.sources else without_sources(text)

    def _titles(self) -> None:
        for key, id, name in (
            ("graph", "#graph-loaded", "as loaded"),
            ("optimized", "#graph-optimized", "executed last, once warm"),
        ):
            found = self.query(id)
            if found:
                found.first().border_title = name
                facts = graph_facts(self.graphs.get(key) or "").text(" · ")
                found.first().border_subtitle = Content(facts)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("tab", "toggle_sources", *TEXT_ACTIONS) and not self.query("#graphs-tabs"):
            return None
        return True

    def action_toggle_sources(self) -> None:
        self.sources = not self.sources
        self.query_one("#graph-loaded", TextArea).load_text(self._graph("graph"))
        self.query_one("#graph-optimized", TextArea).load_text(self._graph("optimized"))
        self.notify(f"source locations {'shown' if self.sources else 'hidden'}", timeout=2)


def open_screen(app: App[Any], state: AppState) -> None:
    """``g``: the viewed run's graphs."""
    if state.viewed is not None:
        app.push_screen(GraphsScreen(state.viewed))
