"""/healthz, /readyz and /metrics as every service serves them."""

from __future__ import annotations

import aiohttp
from prometheus_client import CollectorRegistry, Counter

from spreadbus.runtime.health import HealthServer, ReadinessGate


async def test_readyz_is_503_until_every_condition_holds_and_metrics_render() -> None:
    registry = CollectorRegistry()
    Counter("spreadbus_test_things", "things", registry=registry).inc(3)
    gate = ReadinessGate("nats", "caught_up")
    server = HealthServer(gate, registry, host="127.0.0.1", port=0)
    await server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/healthz") as resp:
                assert resp.status == 200
            gate.set("nats", True)
            async with http.get(f"{base}/readyz") as resp:
                assert resp.status == 503
                body = await resp.json()
                assert body["conditions"] == {"nats": True, "caught_up": False}
            gate.set("caught_up", True)
            async with http.get(f"{base}/readyz") as resp:
                assert resp.status == 200
            async with http.get(f"{base}/metrics") as resp:
                assert resp.status == 200
                text = await resp.text()
                assert "spreadbus_test_things_total 3.0" in text
                assert "spreadbus_ready 1.0" in text
                assert 'spreadbus_ready_condition{condition="caught_up"} 1.0' in text
            gate.set("nats", False)
            async with http.get(f"{base}/metrics") as resp:
                text = await resp.text()
                assert "spreadbus_ready 0.0" in text
                assert 'spreadbus_ready_condition{condition="nats"} 0.0' in text
    finally:
        await server.stop()
