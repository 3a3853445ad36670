"""Readiness notes: details shown in /readyz that never make a service unready."""

from __future__ import annotations

from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry

from spreadbus.runtime.health import HealthServer, ReadinessGate


async def test_a_note_is_shown_in_readyz_while_ready_and_cleared_when_empty() -> None:
    gate = ReadinessGate("synced")
    server = HealthServer(gate, CollectorRegistry(), host="127.0.0.1", port=0)
    await server.start()
    try:
        url = f"http://127.0.0.1:{server.port}/readyz"
        async with aiohttp.ClientSession() as http:

            async def readyz() -> tuple[int, Any]:
                async with http.get(url) as resp:
                    return resp.status, await resp.json()

            assert await readyz() == (503, {"ready": False, "conditions": {"synced": False},
                                            "notes": {}})
            gate.set("synced", True)
            gate.note("forbidden secrets", "secrets is forbidden: cannot list")
            status, body = await readyz()
            assert status == 200
            assert body["ready"] is True
            assert body["notes"] == {"forbidden secrets": "secrets is forbidden: cannot list"}
            gate.set("synced", False)
            status, body = await readyz()
            assert status == 503, "a note does not mask a false condition either"
            assert body["notes"] == {"forbidden secrets": "secrets is forbidden: cannot list"}
            gate.set("synced", True)
            gate.note("forbidden secrets", None)
            assert await readyz() == (200, {"ready": True, "conditions": {"synced": True},
                                            "notes": {}})
    finally:
        await server.stop()


def test_an_empty_detail_clears_the_note_and_notes_are_a_copy() -> None:
    gate = ReadinessGate()
    gate.note("a", "one")
    gate.note("b", "two")
    notes = gate.notes
    notes["c"] = "not the gate's"
    gate.note("a", "")
    assert gate.notes == {"b": "two"}
    assert gate.ready
