"""``SummaryPanel``: first iteration, warm-up, percentiles, CV, throughput, the first call of
each shape against its steady p50 (when the shapes vary) and setup phases."""

from __future__ import annotations

from textual.markup import escape
from textual.widgets import Static

from warmscope.tui import fmt
from warmscope.tui.runs import RunView

LABEL_W = 10
PHASE_W = 18
PHASE_MIN_MS = 1.0
MAX_SHAPE_ROWS = 8


def summary_markup(view: RunView) -> str:
    """The panel's text, in Textual markup."""
    s = view.summary
    rows: list[tuple[str, str]] = []
    first = view.series.head[0] if view.series.head else None
    rows.append(("first", fmt.ms(first)))
    if s is None or s.count < 2:
        rows.append(("warm-up", "-"))
    elif s.steady_from is None:
        rows.append(("warm-up", "[$warning]not steady yet[/]"))
    else:
        rows.append(
            (
                "warm-up",
                f"[$warning]{s.steady_from} it[/] · +{fmt.ms(s.warmup_excess_ms)}",
            )
        )
    if s is not None and s.p50_ms is not None:
        rows.append(("p50", f"[b]{fmt.ms(s.p50_ms)}[/b]"))
        rows.append(("p90 · p99", f"{fmt.ms(s.p90_ms)} · {fmt.ms(s.p99_ms)}"))
        rows.append(("CV", "-" if s.cv is None else f"{s.cv * 100:.1f}%"))
        rows.append(("throughput", fmt.rate(s.throughput_per_s)))
    else:
        rows += [("p50", "-"), ("p90 · p99", "-"), ("CV", "-"), ("throughput", "-")]
    shape_lines = []
    if view.shapes:
        shape_lines.append(f"[$text-muted]{'shapes':<{LABEL_W}} 1st÷p50      p50[/]")
        for row in view.shapes[:MAX_SHAPE_ROWS]:
            ratio = "-" if row.get("first_vs_p50") is None else f"{row['first_vs_p50']:.2f}×"
            mark = "[$warning]R[/]" if any(e["kind"] == "recompile" for e in row["events"]) else " "
            lines_key = escape(str(row["key"])[: LABEL_W + 1])
            shape_lines.append(
                f" {lines_key:<{LABEL_W + 1}}{mark}{ratio:>7} {fmt.ms(row.get('p50_ms')):>8}"
            )
        if len(view.shapes) > MAX_SHAPE_ROWS:
            shape_lines.append(f" [$text-muted]+{len(view.shapes) - MAX_SHAPE_ROWS} more[/]")
    shown = [(k, v) for k, v in view.phases.items() if v >= PHASE_MIN_MS]
    small = len(view.phases) - len(shown)
    lines = [f"[$text-muted]{k:<{LABEL_W}}[/] {v}" for k, v in rows]
    lines += shape_lines
    lines.append("[$text-muted]phases[/]")
    for name, value in shown:
        lines.append(f" {escape(name):<{PHASE_W}} {fmt.ms(value):>8}")
    if small:
        lines.append(f" [$text-muted]+{small} under 1 ms[/]")
    if not view.phases and not view.finished:
        lines.append(f" [$text-muted]{escape(view.phase or 'starting')}…[/]")
    if view.summary_error:
        lines.append(f"[$error]summary failed:[/] {escape(view.summary_error)}")
    return "\n".join(lines)


class SummaryPanel(Static):
    """Redrawn when the summary, the phases or the count change."""

    _shown = ""

    def show_view(self, view: RunView) -> None:
        markup = summary_markup(view)
        if markup != self._shown:
            # Relayout only when the panel grows or shrinks.
            layout = markup.count("\n") != self._shown.count("\n")
            self._shown = markup
            self.update(markup, layout=layout)
