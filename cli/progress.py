"""The live lines on stderr while a headless run or a sweep goes on (rich ``Live``, transient)."""

from __future__ import annotations

import sys
import time
from typing import Any

from warmscope.core.base.safe_text import clean_line
from warmscope.core.base.units import ms
from warmscope.core.output.text_views import process_line


class Progress:
    """One live line on stderr: iteration, last latency, rate."""

    def __init__(self) -> None:
        # rich's live display: loaded only where stderr is a terminal (run.py, sweep.py)
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        self._text = Text
        self.live = Live(
            Text(""), console=Console(stderr=True), transient=True, refresh_per_second=10
        )
        self.live.start()
        self.count = 0
        self.last = 0.0
        self.rate_at = (time.monotonic(), 0)
        self.rate = 0.0

    def show(self, session: Any, update: Any) -> None:
        self.count += len(update.ms)
        if update.ms:
            self.last = update.ms[-1]
        now = time.monotonic()
        t, n = self.rate_at
        if now - t >= 0.5:
            self.rate = (self.count - n) / (now - t)
            self.rate_at = (now, self.count)
        if self.count == 0:
            line = f"{update.phase or 'starting'}… {session.elapsed():.1f} s"
        else:
            line = f"iteration {self.count}  last {ms(self.last)}  {self.rate:,.0f} it/s"
        if update.busy:
            activity = update.busy.get("activity") or "running"
            line += f"  · iteration {update.busy['iteration']} {activity} for {update.busy['ms'] / 1000:.1f} s"
        self.live.update(self._text(clean_line(line)))

    def close(self) -> None:
        self.live.stop()


class SweepProgress:
    """A live line on stderr (the process in progress) above which each finished one stays."""

    def __init__(self) -> None:
        # rich's live display: loaded only where stderr is a terminal (run.py, sweep.py)
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        self._text = Text
        self.console = Console(stderr=True)
        self.live = Live(Text(""), console=self.console, transient=True, refresh_per_second=10)
        self.live.start()
        self.count = 0
        self.step = -1

    def show(self, sweep: Any, step: int, session: Any, update: Any) -> None:
        if step != self.step:
            self.step, self.count = step, 0
        self.count += len(update.ms)
        c, r = sweep.plan[step]
        where = f"iteration {self.count}" if self.count else f"{update.phase or 'starting'}…"
        line = (
            f"process {step + 1}/{len(sweep.plan)} · {sweep.cells[c].label} (repeat {r + 1}/"
            f"{sweep.repeat}) · {where} · {session.elapsed():.1f} s"
        )
        self.live.update(self._text(clean_line(line)))

    def done(self, sweep: Any, process: Any) -> None:
        self.live.console.print(self._text(clean_line(process_line(sweep, process))))

    def close(self) -> None:
        self.live.stop()


def done_line(sweep: Any, process: Any) -> None:
    """A finished process of a sweep, where no live line is drawn."""
    print(clean_line(process_line(sweep, process)), file=sys.stderr)
