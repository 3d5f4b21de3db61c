"""The keys, declared once: the main screen binds the run keys, the footer shows the first ones,
``?`` lists them all and the palette offers them; the app binds the few that work on every
screen (``APP_BINDINGS``).

A key that opens a screen names the screen's module (``opens("history_screen")``). The app's
one ``open`` action imports that module when the key is first pressed and calls its
``open_screen(app, state)`` (the ``AppState``), so a screen loads only when first opened and a
new screen is its module, its stylesheet and one line here.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from textual.actions import parse
from textual.binding import Binding, BindingType

When = Literal["", "live", "idle", "two_runs", "viewed", "viewed_idle"]
"""When a key does something (``AppState.offers``): always, while a run is going, while none
is, with two runs to compare, with a run shown, with a run shown and none going."""


def opens(module: str) -> str:
    """The action of a key that opens the screen of ``tui/screens/MODULE.py``."""
    return f"app.open({module!r})"


class Key(NamedTuple):
    keys: str
    """Comma-separated; the first names the key in the footer, the help and the palette."""
    action: str
    description: str
    id: str
    tooltip: str = ""
    footer: bool = False
    """In the footer; the others are in the help and the palette only."""
    when: When = ""
    """Otherwise the key does nothing and the footer leaves it out."""


RUN_KEYS = (
    Key("r", "app.start_run", "Run", "run", "start a new run with the next settings", True, "idle"),
    Key("s", "app.stop_run", "Stop", "stop", "stop the run gracefully (SIGINT)", True, "live"),
    Key("K,ctrl+k", "app.kill_run", "Kill", "kill", "kill the run now (SIGKILL), after a yes", True, "live"),
    Key("e", opens("settings_screen"), "Settings", "settings", "edit the next run's settings", True),
    Key("h", opens("history_screen"), "History", "history", "runs of this session and records", True),
    Key("c", opens("compare_screen"), "Compare", "compare", "the newest run against the one before", True, "two_runs"),
    Key("x", opens("export_screen"), "Export", "export", "write JSON, CSV, Markdown and the report", True, "viewed"),
    # In the help and the palette only: the footer keeps to the run keys at 80 columns.
    Key("p", opens("profile_screen"), "Profile iterations", "profile", "on the next run"),
    Key("g", opens("graphs_screen"), "Graphs", "graphs", "TorchScript graph as loaded and as run warm", when="viewed"),
    Key("W", opens("warmup_screen"), "Warm-up recipe", "warmup", "from this run's settings", when="viewed_idle"),
    # The main screen's own keys.
    Key("l", "toggle_log", "Log scale", "log-scale", "log or linear latency axis"),
    Key("z", "toggle_zoom", "Zoom", "zoom", "all iterations or the warm-up view"),
    Key("d", "toggle_device", "Device time", "device-time", "host or device time (CUDA)"),
    Key("colon", "goto", "Go to iteration", "goto", "any iteration, by its number"),
    Key("space", "freeze", "Freeze", "freeze", "stop repainting while the run goes on"),
    Key("slash", "search_events", "Search events", "search", "⏎, then n N: next/previous"),
    Key("f", "filter_events", "Filter events", "filter", "one kind, f the next, esc all"),
    Key("o", "order", "Slowest first", "order", "iterations slowest first, or by number"),
    Key("1", "pane('tab-events')", "Events", "pane-events"),
    Key("2", "pane('tab-usage')", "Usage", "pane-usage"),
    Key("3", "pane('tab-stderr')", "Stderr", "pane-stderr"),
)  # fmt: skip
KEY_DISPLAY = {"colon": ":", "slash": "/"}
PRIORITY_KEYS = {"slash"}
"""Checked before the key reaches the focused pane, so what is typed right after it lands in
the search line (keys queued for the old focus would be lost); the main screen has no text field."""


def run_binding(key: Key) -> Binding:
    first = key.keys.split(",")[0]
    return Binding(
        key.keys,
        key.action,
        key.description,
        id=key.id,
        tooltip=key.tooltip,
        show=key.footer,
        key_display=KEY_DISPLAY.get(first, first),
        priority=first in PRIORITY_KEYS,
    )


RUN_BINDINGS: list[BindingType] = [run_binding(key) for key in RUN_KEYS]
MATCH_BINDINGS: list[BindingType] = [  # told with `/` in the help
    Binding("n", "search_next(1)", "Next match", id="search-next", show=False),
    Binding("N", "search_next(-1)", "Previous match", id="search-previous", show=False),
]
APP_BINDINGS: list[BindingType] = [
    Binding("q", "quit", "Quit", id="quit", tooltip="Quit (a running child is stopped first)"),
    # Ctrl+C quits like q (Textual's default only says "press ctrl+q").
    Binding("ctrl+c", "quit", "Quit", id="quit-ctrl-c", show=False, priority=True),
    Binding("question_mark", opens("help_screen"), "Help", id="help", tooltip="Every key"),
    # Ctrl+Z is job control as in any program (raw mode reads it as a key); Ctrl+L redraws.
    Binding("ctrl+z", "suspend_process", "Suspend", id="suspend", show=False, priority=True),
    Binding("ctrl+l", "repaint", "Redraw", id="repaint", show=False, priority=True),
    Binding(
        "w",
        opens("sweep_screen"),
        "Sweep",
        id="sweep",
        show=False,
        tooltip="the last sweep's screen",
    ),
]
"""Keys on every screen (a screen's own binding of the same key comes first)."""

_WHEN = {parse(key.action)[1:]: key.when for key in RUN_KEYS}


def when_offered(action: str, parameters: tuple[object, ...]) -> When:
    """When the key of ``action`` (with ``parameters``, as ``check_action`` gets them) does
    something; always for an action no key here offers conditionally."""
    return _WHEN.get((action, parameters), "")
