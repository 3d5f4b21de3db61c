"""The run keys, declared once: the main screen binds them, the footer shows the first ones,
``?`` lists them all and the palette offers them."""

from __future__ import annotations

from textual.binding import Binding, BindingType

# Each is (keys, action, description, id, tooltip, in the footer); the first key names it.
RUN_KEYS = (
    ("r", "app.start_run", "Run", "run", "start a new run with the next settings", True),
    ("s", "app.stop_run", "Stop", "stop", "stop the run gracefully (SIGINT)", True),
    ("K,ctrl+k", "app.kill_run", "Kill", "kill", "kill the run now (SIGKILL), after a yes", True),
    ("e", "app.settings", "Settings", "settings", "edit the next run's settings", True),
    ("h", "app.history", "History", "history", "runs of this session and records", True),
    ("c", "app.compare", "Compare", "compare", "the newest run against the one before", True),
    ("x", "app.export", "Export", "export", "write JSON, CSV, Markdown and the report", True),
    # In the help and the palette only: the footer keeps to the run keys at 80 columns.
    ("p", "app.profile_iters", "Profile iterations", "profile", "on the next run", False),
    ("g", "app.graphs", "Graphs", "graphs", "TorchScript graph as loaded and as run warm", False),
    ("W", "app.warmup", "Warm-up recipe", "warmup", "from this run's settings", False),
    ("l", "toggle_log", "Log scale", "log-scale", "log or linear latency axis", False),
    ("z", "toggle_zoom", "Zoom", "zoom", "all iterations or the warm-up view", False),
    ("d", "toggle_device", "Device time", "device-time", "host or device time (CUDA)", False),
    ("colon", "goto", "Go to iteration", "goto", "any iteration, by its number", False),
    ("space", "freeze", "Freeze", "freeze", "stop repainting while the run goes on", False),
    ("slash", "search_events", "Search events", "search", "⏎, then n N: next/previous", False),
    ("f", "filter_events", "Filter events", "filter", "one kind, f the next, esc all", False),
    ("o", "order", "Slowest first", "order", "iterations slowest first, or by number", False),
    ("1", "pane('tab-events')", "Events", "pane-events", "", False),
    ("2", "pane('tab-usage')", "Usage", "pane-usage", "", False),
    ("3", "pane('tab-stderr')", "Stderr", "pane-stderr", "", False),
)
KEY_DISPLAY = {"colon": ":", "slash": "/"}
PRIORITY_KEYS = {"slash"}
"""Checked before the key reaches the focused pane, so what is typed right after it lands in
the search line (keys queued for the old focus would be lost); the main screen has no text field."""


def run_binding(
    keys: str, action: str, description: str, id: str, tooltip: str, show: bool
) -> Binding:
    first = keys.split(",")[0]
    return Binding(
        keys,
        action,
        description,
        id=id,
        tooltip=tooltip,
        show=show,
        key_display=KEY_DISPLAY.get(first, first),
        priority=first in PRIORITY_KEYS,
    )


RUN_BINDINGS: list[BindingType] = [run_binding(*key) for key in RUN_KEYS]
MATCH_BINDINGS: list[BindingType] = [  # told with `/` in the help
    Binding("n", "search_next(1)", "Next match", id="search-next", show=False),
    Binding("N", "search_next(-1)", "Previous match", id="search-previous", show=False),
]
