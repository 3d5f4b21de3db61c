"""``RepaintBudget``: when each pane of the main screen may repaint.

Over SSH every repaint is bytes on the wire, and every frame is CPU taken from the measured
child. Batches arrive ten times a second; a pane repaints only when what it shows changed,
and at most at its own rate: the header, the summary and the table once a second (as ``top``:
the eye reads figures no faster), the chart and the usage pane every two seconds
(``--refresh HZ`` caps them all). A frozen screen
repaints nothing while the run goes on; the end of a run is drawn at once. No Textual here:
the rules are testable alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PANE_HZ: dict[str, float] = {
    "header": 1.0,  # its elapsed time and rate; at 2 Hz, a tenth of the bytes at 80x24
    "summary": 1.0,
    "events": 1.0,
    "stderr": 1.0,
    "table": 1.0,
    "chart": 0.5,  # the widest pane: a repaint is ~14 KB at 120x40
    "usage": 0.5,
}
DEFAULT_REFRESH_HZ = 2.0


@dataclass
class RepaintBudget:
    refresh_hz: float = DEFAULT_REFRESH_HZ
    frozen: bool = False
    pending: set[str] = field(default_factory=set)
    stderr: list[str] = field(default_factory=list)
    """Stderr lines held until the pane may repaint: written then, in one batch."""
    _last: dict[str, float] = field(default_factory=dict)

    def interval(self, pane: str) -> float:
        return 1.0 / min(PANE_HZ[pane], self.refresh_hz)

    def changed(self, *panes: str) -> None:
        self.pending.update(panes)

    def due(self, now: float, *, everything: bool = False) -> set[str]:
        """The panes to repaint now (and no longer pending). ``everything``: the run ended,
        or another run is shown: draw what is pending whatever the rates, frozen or not."""
        if self.frozen and not everything:
            return set()
        ready = {
            p
            for p in self.pending
            if everything or now - self._last.get(p, -1e9) >= self.interval(p)
        }
        for pane in ready:
            self._last[pane] = now
        self.pending -= ready
        return ready
