"""A page in headless Chromium, driven over the DevTools protocol: what a person does with the
mouse, and what the page then shows, read from its DOM."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from spreadbus.runtime.parent_death import die_with_parent
from tests.fixtures.polling import wait_until_async


class Page:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result, skipping the events around it."""
        ident = next(self._ids)
        await self._ws.send_json({"id": ident, "method": method, "params": params})
        async for message in self._ws:
            answer = json.loads(message.data)
            if answer.get("id") == ident:
                assert "error" not in answer, (method, answer["error"])
                result: dict[str, Any] = answer["result"]
                return result
        raise AssertionError(f"DevTools closed before answering {method}")

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        answer = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in answer, answer["exceptionDetails"]
        return answer["result"].get("value")

    async def move_mouse(self, x: float, y: float) -> None:
        await self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)


def active_port(profile: Path) -> int | None:
    """The DevTools port Chromium wrote into its profile, once the file is whole."""
    try:
        lines = (profile / "DevToolsActivePort").read_text().split("\n")
    except FileNotFoundError:
        return None
    return int(lines[0]) if len(lines) >= 2 and lines[0].isdigit() else None


@asynccontextmanager
async def headless_page(chromium: str, url: str, profile: Path) -> AsyncIterator[Page]:
    """``url`` open in a headless Chromium of its own (profile in ``profile``)."""
    process = await asyncio.create_subprocess_exec(
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        f"--user-data-dir={profile}", "--remote-debugging-port=0", "--window-size=1280,900", url,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent())
    try:
        port = await wait_until_async(lambda: active_port(profile), what="Chromium's DevTools port",
                                      timeout=60, interval=0.1)
        async with aiohttp.ClientSession() as session:

            async def page_target() -> str | None:
                async with session.get(f"http://127.0.0.1:{port}/json/list") as answer:
                    targets = await answer.json()
                return next((t["webSocketDebuggerUrl"] for t in targets
                             if t["type"] == "page" and t["url"] == url), None)

            target = await wait_until_async(page_target, what=f"a page on {url}", timeout=60,
                                            interval=0.1)
            async with session.ws_connect(target, max_msg_size=0) as ws:
                yield Page(ws)
    finally:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()
