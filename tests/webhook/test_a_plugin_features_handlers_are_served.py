"""A feature registered as a plugin is served by the webhook without any change to it: its
handlers answer on a path of their own and beside WorkloadSpread's on a shared one."""

from __future__ import annotations

import json

import aiohttp

from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.generation_feature import OWN_PATH, PLUGIN, UNDELETABLE
from tests.webhook.admission_reviews import pod, review
from tests.webhook.conftest import WebhookTls, webhook_shell


async def test_the_webhook_serves_a_plugins_handlers_on_its_own_path_and_a_shared_one(
    nats_server: NatsServer, webhook_tls: WebhookTls
) -> None:
    async with webhook_shell(nats_server, webhook_tls, feature_plugins=(PLUGIN,)) as running:
        url = f"https://127.0.0.1:{running.service.port}"
        connector = aiohttp.TCPConnector(ssl=webhook_tls.client_context())
        async with aiohttp.ClientSession(connector=connector) as http:

            async def answer(path: str, body: dict[str, object]) -> dict[str, object]:
                async with http.post(url + path, data=json.dumps(body)) as response:
                    assert response.status == 200
                    return dict((await response.json())["response"])

            kept = pod("web-1", labels={"app": "web", UNDELETABLE: "true"})
            refused = await answer("/validate-pod", review(
                operation="DELETE", resource="pods", name="web-1", old=kept))
            assert refused["allowed"] is False
            assert refused["status"]["code"] == 403  # type: ignore[index]
            assert UNDELETABLE in refused["status"]["message"]  # type: ignore[index]
            allowed = await answer("/validate-pod", review(
                operation="DELETE", resource="pods", name="web-2", old=pod("web-2")))
            assert allowed["allowed"] is True
            own = await answer(OWN_PATH, review(operation="CREATE", resource="configmaps",
                                                name="forbidden", obj={"kind": "ConfigMap"}))
            assert (own["allowed"], own["status"]["code"]) == (False, 422)  # type: ignore[index]
            # WorkloadSpread's paths are served as before, next to the plugin's.
            steered = await answer("/mutate-pod", review(operation="CREATE", resource="pods",
                                                         obj=pod("web-3")))
            assert steered["allowed"] is True
    assert await running.stop() == 0


