"""Driving the app in tests: run a scenario under Pilot, wait for workers or for a condition;
read what a real terminal receives."""

from __future__ import annotations

import asyncio
import html
import os
import re
import select
import time
from collections.abc import Awaitable, Callable

from textual.pilot import Pilot

from warmscope.tui.app import WarmscopeApp

Scenario = Callable[[Pilot], Awaitable[None]]


async def settle(pilot: Pilot) -> None:
    """Wait for the main screen's panes (mounted after the first frame), then the summary
    workers and the refreshes they cause."""
    if hasattr(pilot.app, "ready"):
        await wait_for(pilot, lambda: pilot.app.ready, timeout=30)  # type: ignore[attr-defined]
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def wait_for(pilot: Pilot, condition: Callable[[], object], timeout: float = 60.0) -> None:
    """Let the app run until ``condition()`` holds (a live run's progress, say)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await pilot.pause(0.05)


def run(
    app: WarmscopeApp,
    scenario: Scenario,
    size: tuple[int, int] = (100, 30),
    *,
    settled: bool = True,
    notifications: bool = False,
) -> None:
    """Run ``scenario`` against ``app`` at ``size``; records are summarized first if ``settled``.
    ``notifications``: draw toasts (``run_test`` leaves them out, and a notification's message
    is rendered, as markup unless told not to, only when drawn)."""

    async def main() -> None:
        async with app.run_test(size=size, notifications=notifications) as pilot:
            if settled:
                await settle(pilot)
            await scenario(pilot)
            if notifications and app.is_running:  # a pause after the app quit never ends
                await pilot.pause(0.1)  # the last toasts drawn

    asyncio.run(main())


def screen_text(app: WarmscopeApp) -> str:
    """The visible screen as text (from the SVG screenshot: one string per styled run)."""
    svg = app.export_screenshot()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    return " ".join(html.unescape(t) for t in texts).replace("\xa0", " ")


def terminal_chunk(master: int, wait: float) -> bytes | None:
    """What a pseudo-terminal's ``master`` receives within ``wait`` seconds (``b""``: nothing);
    None once the program on it has closed it."""
    ready, _, _ = select.select([master], [], [], wait)
    if not ready:
        return b""
    try:
        return os.read(master, 65536) or None
    except OSError:
        return None
