"""Starting a sweep from the TUI and taking its processes in as runs of the session.

The settings screen's Ctrl+R with more than one process (or presets and knob values to
compare) comes here: the sweep is built (its cells checked, its folder made) and run on thread
workers, and shown on a ``SweepScreen`` that fills in live. Each process, once started, becomes
a run of the app (the main screen follows it under the sweep screen; history and compare list
it), tagged with its sweep and cell (``RunEntry.sweep``). When the sweep ends its document
joins the app's sweeps: ``w`` shows it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from warmscope.core.data.settings import RunSettings
from warmscope.tui import run_start
from warmscope.tui.run_start import Pending
from warmscope.tui.run_view import RunEntry, SweepTag
from warmscope.tui.sweep_runner import Started, SweepPlan, SweepRunner, make_runner

if TYPE_CHECKING:
    from warmscope.tui.app import WarmscopeApp


def start_sweep(app: WarmscopeApp, settings: RunSettings, plan: SweepPlan) -> None:
    """Run ``plan`` over ``settings`` now; settings from a file that choose what runs are shown
    to the user first, as for one run."""
    if app.live is not None or app.controller.sweeping is not None:
        app.notify("a run is going: s stops it, k kills it", severity="warning")
        return
    if run_start.refused(app):
        return
    run_start.trusted_then(app, settings, lambda chosen: _start(app, chosen, plan))


def _start(app: WarmscopeApp, settings: RunSettings, plan: SweepPlan) -> None:
    """Build the sweep on a worker (its cells checked: over ``--host`` a file target is asked
    there), then run it on another and show its screen."""
    from warmscope.tui.screens.sweep_screen import SweepScreen

    def done(runner: SweepRunner | None, error: str) -> None:
        if runner is None:
            app.notify(error, title="No sweep", severity="error", timeout=8, markup=False)
            return
        app.controller.sweeping = runner
        app.run_worker(runner.run, name="sweep", thread=True, group="sweep", exit_on_error=False)
        app.push_screen(SweepScreen(runner=runner))

    run_start.begin(app, Pending("a sweep", lambda: make_runner(settings, plan), done))


def adopt(app: WarmscopeApp, started: Started, runner: SweepRunner) -> RunEntry:
    """A process of the sweep, now a run of the app, followed live by the main screen."""
    tag = SweepTag(
        str(runner.folder), started.cell, started.label, started.repeat, runner.plan.repeat
    )
    entry = app.controller.adopt(started.session, tag)
    app.view_entry(entry)  # the main screen follows it, under the sweep screen
    return entry


def ended(app: WarmscopeApp, runner: SweepRunner, doc: dict[str, Any]) -> None:
    """The sweep ended (done, stopped or failed): its document joins the app's sweeps."""
    if app.controller.sweeping is runner:
        app.controller.sweeping = None
    if doc.get("finished"):
        app.sweeps.append(doc)
    what = "stopped" if doc.get("stopped") else "done"
    if runner.error:
        app.notify(runner.error, title="Sweep ended", severity="error", timeout=8, markup=False)
    else:
        app.notify(f"sweep {what}: {doc.get('finished')} processes; w shows it again", timeout=4)
