"""``RunHeader``: target, mode, changed settings, status and elapsed time of the viewed run."""

from __future__ import annotations

from textual.markup import escape
from textual.widgets import Static

from warmscope.tui import fmt
from warmscope.tui.runs import RunEntry

STATUS = {
    "starting": ("◌", "$text-muted"),
    "running": ("●", "$success"),
    "ok": ("✓", "$success"),
    "stopped": ("■", "$warning"),
    "timeout": ("■", "$error"),
    "failed": ("✗", "$error"),
    "crashed": ("✗", "$error"),
}


def header_markup(entry: RunEntry, next_note: str = "") -> str:
    """Two lines in Textual markup: what runs, and how it is going."""
    view, data = entry.view, entry.data
    source = f" [$text-muted]{escape(entry.record_name)}[/]" if entry.source == "record" else ""
    line1 = (
        f"[b]#{entry.number}[/b] [b $accent]{escape(entry.target)}[/] · [b]{escape(entry.mode)}[/b]"
        f" · {escape(fmt.settings_line(data.settings))}{source}"
    )
    status = view.status
    mark, color = STATUS.get(status, ("?", "$text"))
    parts = [f"[b {color}]{mark} {escape(status)}[/]", fmt.seconds(entry.elapsed())]
    if view.count:
        parts.append(f"{fmt.count(view.count)} it")
        rate = entry.loop_rate()
        if rate:
            parts.append(fmt.rate(rate))
    if entry.live:
        if view.busy:
            activity = view.busy.get("activity") or "running"
            parts.append(
                f"[$warning]iteration {view.busy.get('iteration')} {escape(str(activity))}"
                f" for {fmt.seconds(view.busy.get('ms', 0) / 1000)}[/]"
            )
        elif not view.count:
            parts.append(f"[$text-muted]{escape(view.phase or 'starting')}…[/]")
        elif view.last_ms is not None:
            parts.append(f"last {fmt.ms(view.last_ms)}")
    elif data.status_detail and status != "ok":
        parts.append(f"[{color}]{escape(data.status_detail)}[/]")
    line2 = " · ".join(parts)
    if next_note:
        line2 += f"  [$text-muted]next run:[/] [$warning]{escape(next_note)}[/]"
    return f"{line1}\n{line2}"


class RunHeader(Static):
    """Redrawn on every tick of a live run (the elapsed time moves)."""

    def show_entry(self, entry: RunEntry, next_note: str = "") -> None:
        self.update(header_markup(entry, next_note))
