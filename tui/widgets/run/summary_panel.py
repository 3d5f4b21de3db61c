"""``SummaryPanel``: first iteration, warm-up, percentiles, CV, throughput, a slow first call's
explanation, the first call of each shape against its steady p50 (when the shapes vary) and
setup phases."""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Region
from textual.widgets import Static

from warmscope.tui import fmt
from warmscope.tui.run_view import RunView

LABEL_W = 10
PHASE_W = 18
PHASE_MIN_MS = 1.0
MAX_SHAPE_ROWS = 8
BOUND_WORDS = {"launch-bound": "by launches", "device-bound": "by the GPU", "mixed": "both"}
"""What a steady CUDA call waits on, in the pane's few columns."""
EXPLAINED_KIND = "explained"
"""``first_call.EXPLAINED``, not imported: that module brings the profile analysis, which the
first frame does not need (``test_tui_units`` keeps the two equal)."""
MUTED = "$text-muted"

Part = str | tuple[str, str]
"""Plain text, or ``(text, style)``: built as ``Content``, never parsed as markup (phase names
and errors come from the child or a record)."""
NOISE_WORDS = {
    "cv": "noisy: CV>10%",
    "iqr": "noisy: IQR>10%",
    "band": "warm-up may hide in noise",
    "not_steady": "no steady state",
}
"""A run's warnings (``intervals.run_warnings``) in the panel's few columns."""
OTHER_WORDS = {"contention": "cpu waits", "threads": "threads"}
"""The row of each other warning (``contention.run_warnings``), its brief beside it."""


def summary_content(view: RunView) -> Content:
    """The panel's text."""
    s = view.summary
    rows: list[tuple[str, list[Part]]] = []
    first = view.series.head[0] if view.series.head else None
    rows.append(("first", [fmt.ms(first)]))
    if s is None or s.count < 2:
        rows.append(("warm-up", ["-"]))
    elif s.steady_from is None:
        rows.append(("warm-up", [("not steady yet", "$warning")]))
    else:
        excess = s.warmup_excess_ms or 0.0
        # No "+0.00 µs": an excess under a microsecond (the warm-up was profiled, and profiled
        # iterations are left out) says nothing.
        rows.append(
            (
                "warm-up",
                [(f"{s.steady_from} it", "$warning")]
                + ([f" · +{fmt.ms(excess)}"] if excess >= 0.001 else []),
            )
        )
    if s is not None and s.p50_ms is not None:
        # Several shapes: a p50 of them all, so labelled; each shape's own is below.
        rows.append(("pooled p50" if view.shapes else "p50", [(fmt.ms(s.p50_ms), "b")]))
        rows.append(("p90 · p99", [f"{fmt.ms(s.p90_ms)} · {fmt.ms(s.p99_ms)}"]))
        rows.append(("CV", ["-" if s.cv is None else f"{s.cv * 100:.1f}%"]))
        rows.append(("steady", [fmt.rate(s.throughput_per_s)]))
    else:
        rows += [("p50", ["-"]), ("p90 · p99", ["-"]), ("CV", ["-"]), ("steady", ["-"])]
    if view.device is not None:  # CUDA: how busy the device was in a steady call
        rows.append(("device p50", [fmt.ms(view.device["p50_ms"])]))
        rows.append(("bound", [BOUND_WORDS.get(view.device["bound"], view.device["bound"])]))
    noise = [w for w in view.warnings if w.code in NOISE_WORDS]
    if noise:
        said = dict.fromkeys(NOISE_WORDS[w.code] for w in noise)
        rows.append(("noise", [(" · ".join(said), "$warning")]))
    for w in view.warnings:  # contention: measured waits, more threads than cores
        if w.code not in NOISE_WORDS:
            rows.append((OTHER_WORDS.get(w.code, w.code), [(w.brief or w.text, "$warning")]))
    explained = [ev for ev in view.events if ev.kind == EXPLAINED_KIND]
    for ev in explained:  # a slow first call, explained by its profile
        cause = ev.title.removeprefix("first call: ")
        rows.append(("1st call", [f"#{ev.iteration} ", (cause, "$warning")]))
    shown = [(k, v) for k, v in view.phases.items() if v >= PHASE_MIN_MS]
    small = len(view.phases) - len(shown)
    lines: list[list[Part]] = [[(f"{k:<{LABEL_W}}", MUTED), " ", *v] for k, v in rows]
    lines += shape_lines(view)
    if view.idle_probe:
        lines.append([(f"{'idle':<{LABEL_W}} × steady p50 after the gap", MUTED)])
        for r in view.idle_probe:
            ratios = " ".join(f"{v:.2f}×" for v in r.get("vs_p50") or []) or "-"
            lines.append([f" after {r.get('idle_s', 0):g} s  {ratios}"])
    lines.append([("phases", MUTED)])
    for name, value in shown:
        lines.append([f" {name:<{PHASE_W}} {fmt.ms(value):>8}"])
    if small:
        lines.append([" ", (f"+{small} under 1 ms", MUTED)])
    if not view.phases and not view.finished:
        lines.append([" ", (f"{view.phase or 'starting'}…", MUTED)])
    if view.summary_error:
        lines.append([("summary failed:", "$error"), " " + view.summary_error])
    return Content("\n").join(Content.assemble(*line) for line in lines)


def shape_lines(view: RunView) -> list[list[Part]]:
    """Each shape's first call against its steady p50 (a watched program's module and
    signature); what all shapes share said once, above the parts that tell them apart."""
    out: list[list[Part]] = []
    if not view.shapes:
        return out
    out.append([(f"{'shapes':<{LABEL_W}} 1st÷p50      p50", MUTED)])
    head = fmt.shared_head([str(row["key"]) for row in view.shapes])
    if head:  # what every row shares, once, above the rows that differ after it
        shared = str(view.shapes[0]["key"])[:head]
        out.append([(f" {shared[: LABEL_W + 14]}…", MUTED)])
    for row in view.shapes[:MAX_SHAPE_ROWS]:
        ratio = "-" if row.get("first_vs_p50") is None else f"{row['first_vs_p50']:.2f}×"
        recompiled = any(e["kind"] == "recompile" for e in row["events"])
        key = str(row["key"])[head:][: LABEL_W + 1]
        out.append(
            [
                f" {key:<{LABEL_W + 1}}",
                ("R", "$warning") if recompiled else " ",
                f"{ratio:>7} {fmt.ms(row.get('p50_ms')):>8}",
            ]
        )
    if len(view.shapes) > MAX_SHAPE_ROWS:
        out.append([" ", (f"+{len(view.shapes) - MAX_SHAPE_ROWS} more", MUTED)])
    return out


class SummaryPanel(Static):
    """Redrawn when the summary, the phases or the count change: only the lines that changed
    are sent to the terminal (most ticks change a figure or two)."""

    _shown = Content()
    repainted: list[Region] | None = None
    """The lines the last change refreshed; None: all of the panel."""

    def render(self) -> Content:
        return self._shown

    def show_view(self, view: RunView) -> None:
        content = summary_content(view)
        if content.is_same(self._shown):
            return
        old = self._shown.split("\n", allow_blank=True)
        new = content.split("\n", allow_blank=True)
        self._shown = content
        width = self.size.width
        if len(old) != len(new) or not width or any(line.cell_length > width for line in new):
            self.repainted = None
            self.refresh(layout=True)  # it grows, shrinks or wraps: all of it
            return
        self.repainted = [
            Region(0, y, width, 1)
            for y, (a, b) in enumerate(zip(old, new, strict=True))
            if not a.is_same(b)
        ]
        self.refresh(*self.repainted)
