"""``SweepScreen``: a sweep document's answer, each setting's medians with intervals, warnings."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Sparkline, Static

from warmscope.core.output.safe_text import clean_line
from warmscope.core.output.sweep_digest import count_text, iv_text

CURVE_POINTS = 60
"""The first iterations whose median latency each setting's curve shows."""


def sweep_table(doc: dict[str, Any]) -> Table:
    """One row per setting, every figure a median with its 95% interval (the digest's)."""
    table = Table(box=None, padding=(0, 1), header_style="bold")
    for name in ("setting", "runs", "first", "warm-up excess", "steady from", "steady p50"):
        table.add_column(name, no_wrap=True, justify="left" if name == "setting" else "right")
    table.add_column("shapes")
    ranks = {r.get("cell"): r for r in doc.get("ranking", [])}
    for c in doc.get("cells", []):
        rank = ranks.get(c.get("index"), {})
        verdict = rank.get("vs_best", "")
        style = "bold" if verdict == "best" else ("dim" if verdict == "worse" else "")
        table.add_row(
            Text(clean_line(str(c.get("label", "?"))), style=style),
            str(len(c.get("runs", []))),
            iv_text(c.get("first_ms")),
            iv_text(c.get("warmup_excess_ms")),
            count_text(c.get("steady_from")),
            iv_text(c.get("steady_p50_ms")),
            clean_line(str(c.get("shapes", "-"))),
        )
    return table


class SweepScreen(ModalScreen[None]):
    """Opened over the runs of a sweep (``warmscope open sweep.json``); Esc shows the runs."""

    CSS_PATH = "sweep_screen.tcss"  # loaded when the screen first opens

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,w", "dismiss", "Runs", id="close-sweep"),
        Binding("q", "app.quit", "Quit", id="quit-from-sweep"),
    ]

    def __init__(self, doc: dict[str, Any]) -> None:
        super().__init__()
        self.doc = doc

    def compose(self) -> ComposeResult:
        doc = self.doc
        with VerticalScroll(id="sweep-box"):
            yield Static(
                Text(clean_line(str(doc.get("answer", ""))), style="bold"), id="sweep-answer"
            )
            yield Static(
                Text(
                    f"{clean_line(str(doc.get('target', '?')))} · {len(doc.get('cells', []))} settings × "
                    f"{doc.get('repeat')} processes, interleaved"
                    + (" · stopped" if doc.get("stopped") else "")
                    + f" · median (95% interval), {doc.get('interval', '')}",
                    style="dim",
                ),
                id="sweep-head",
            )
            yield Static(sweep_table(doc), id="sweep-table")
            yield Static(
                Text("median latency of the first iterations (each on its own scale)", style="dim")
            )
            for c in doc.get("cells", []):
                medians = [row.get("median") or 0.0 for row in c.get("by_iteration", [])]
                yield Static(Text(clean_line(str(c.get("label", "?"))), style="bold"))
                yield Sparkline(medians[:CURVE_POINTS], classes="sweep-curve")
            warnings = [clean_line(str(w)) for w in doc.get("warnings", [])]
            if warnings:
                yield Static(Text("\n".join(warnings), style="yellow"), id="sweep-warnings")
        yield Footer()
