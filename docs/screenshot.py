"""Regenerate docs/screenshot.svg from a checked-in record of a real run: python docs/screenshot.py"""

import asyncio
from pathlib import Path

from warmscope.tui.app import build_app


async def main() -> None:
    app = build_app(records=[Path("tests/data/speech-script.jsonl")])
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.5)
        await pilot.press("home")
        await pilot.pause(0.3)
        app.save_screenshot(filename="screenshot.svg", path="docs")


asyncio.run(main())
