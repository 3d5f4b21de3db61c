"""``AppState``: what the app holds besides its screens, in one object.

The app's parts (``run_control``, ``viewer``, ``opening``…) share it, and a screen's opener
(``keys``) is given it: every run, the one viewed, the next run's settings and where they came
from, the sweeps, and the one start at a time. No screen here: a screen reads this and tells
the app what it wants changed with a message (``messages``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from warmscope.core.base.safe_text import clean_name
from warmscope.core.data.settings import RunSettings
from warmscope.sample_models import DEFAULT_SAMPLE
from warmscope.tui.controller import RunController
from warmscope.tui.keys import When
from warmscope.tui.run_start import Pending, StartSlot

if TYPE_CHECKING:
    from warmscope.tui.run_view import RunEntry


@dataclass
class AppState:
    """The app's runs and what the next run will be."""

    controller: RunController
    """Every run of the session (live ones and opened records), and their summaries."""
    starts: StartSlot
    """One start at a time: a run, sweep or warm-up being started on a worker thread."""
    next_settings: RunSettings | None = None
    next_source: str | None = None
    """The file ``next_settings`` came from (a record's name), or ``None`` when they are the
    user's: from a file, their ``untrusted()`` parts run only once the user confirms them."""
    viewed: RunEntry | None = None
    """The run the main screen shows."""
    sweeps: list[dict[str, Any]] = field(default_factory=list)
    """Sweep documents opened (``warmscope open sweep.json``) or run here, the last one ``w``'s."""

    @property
    def runs(self) -> list[RunEntry]:
        return self.controller.runs

    @property
    def live(self) -> RunEntry | None:
        return self.controller.live

    @property
    def starting(self) -> Pending[Any] | None:
        """The start in progress on a worker thread, if any (``run_start``)."""
        return self.starts.pending

    def next_base(self) -> RunSettings:
        """The next run's settings, or the default sample's when nothing was chosen yet."""
        if self.next_settings is not None:
            return self.next_settings
        return RunSettings(target=f"sample:{DEFAULT_SAMPLE}")

    def next_note(self) -> str:
        """The next run's settings where they differ from the viewed run's."""
        nxt, entry = self.next_settings, self.viewed
        if nxt is None or entry is None:
            return ""
        # the digest loads after the first frame, with the first run shown
        from warmscope.core.output.settings_diff import settings_diff

        return " ".join(
            clean_name(f"{c.name}={c.b}") for c in settings_diff(entry.data.settings, nxt.to_json())
        )

    def offers(self, when: When) -> bool:
        """Whether a key offered ``when`` (``keys.Key.when``) does something now."""
        live = self.live is not None
        return {
            "": True,
            "live": live,
            "idle": not live,
            "two_runs": len(self.runs) >= 2,
            "viewed": self.viewed is not None,
            "viewed_idle": self.viewed is not None and not live,
        }[when]
