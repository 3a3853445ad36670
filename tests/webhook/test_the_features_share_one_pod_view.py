"""A webhook replica keeps each pod once: one pod view over the observation stream holds it as
every feature that reads pods registers (``Feature.webhook_pods``), and each feature's view reads
its own form from there (real nats-server, the replica in its service shell)."""

from __future__ import annotations

from typing import Any

import nats

from events import subjects
from events.codec import encode
from events.messages import Observation
from spreadbus.features.registry import BUILTIN
from tests.fixtures.polling import wait_until_async
from tests.webhook.conftest import RunningWebhook


def _pod(name: str, phase: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid",
                         "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            "status": {"phase": phase}}


async def test_each_pod_is_kept_once_for_every_feature_that_reads_pods(
    webhook: RunningWebhook,
) -> None:
    service = webhook.service
    keeping = [f.name for f in BUILTIN if f.webhook is not None and f.webhook_pods is not None]
    assert keeping == ["workloadspread", "podunavailablebudget"]
    nc = await nats.connect(service.settings.nats_url[0])
    try:
        js = nc.jetstream()
        last = 0
        for name, phase in (("web-1", "Running"), ("web-2", "Pending"), ("web-1", "Succeeded")):
            event = Observation(cluster="c1", group="", version="v1", resource="pods",
                                event="MODIFIED", object=_pod(name, phase))
            ack = await js.publish(subjects.observation("c1", "", "pods", "default", name),
                                   encode(event))
            last = ack.seq

        async def folded() -> bool:
            return service.seq >= last

        await wait_until_async(folded, what="the replica to fold every observation")
    finally:
        await nc.close()

    assert sorted(service.pods.kept) == [("default", "web-1"), ("default", "web-2")]
    spreads = service.sides["workloadspread"].view  # type: ignore[attr-defined]
    budgets = service.sides["podunavailablebudget"].view  # type: ignore[attr-defined]
    assert spreads.get("", "pods", "default", "web-1")["status"] == {"phase": "Succeeded"}
    assert budgets.pod("default", "web-1")["status"] == {"phase": "Succeeded"}
    assert budgets.pod("default", "web-2")["spec"] == {
        "containers": [{"name": "app", "image": "nginx"}]}
    # One entry per pod holds both features' forms, and each view reads its own from it.
    entry = service.pods.kept[("default", "web-2")]
    assert entry == (spreads.pods[("default", "web-2")], budgets.pods[("default", "web-2")])
    assert not spreads.active("default", "web-1")
    assert spreads.active("default", "web-2")
