"""A steered pod's admission patch carries the deletion cost the planner will want on it."""

from __future__ import annotations

import json
from typing import Any

from nats.aio.client import Client

from kubesim import jsonpatch
from spreadbus.features.workloadspread.admission.admission import SpreadAdmission
from tests.webhook.admission_reviews import patch_of, request
from tests.workloadspread.webhook.cluster_state import (
    MATCHED,
    Feed,
    deployment,
    new_pod,
    replicaset,
    spread,
    stored_pod,
    synced_feed,
    zone_subset,
)
from tests.workloadspread.webhook.spread_admission import spread_admission

COST = "controller.kubernetes.io/pod-deletion-cost"


def template(image: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": image}]},
    }


async def admission_for(nc: Client, subsets: list[dict[str, Any]]) -> tuple[SpreadAdmission, Feed]:
    """A webhook whose view holds a Deployment mid-rollout: ``web-new`` has its template."""
    feed = synced_feed()
    deploy = deployment(replicas=10)
    deploy["spec"]["template"] = template("nginx:2")
    feed.put(deploy)
    for name, image in (("web-new", "nginx:2"), ("web-old", "nginx:1")):
        rs = replicaset(name)
        rs["spec"] = {"replicas": 5, "template": template(image)}
        rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] = name.split("-")[1]
        feed.put(rs)
    feed.put(spread(subsets))
    return await spread_admission(feed.view, nc), feed


async def create(admission: SpreadAdmission, pod: dict[str, Any]) -> dict[str, Any]:
    answer = await admission.mutate_pod(request(operation="CREATE", resource="pods", obj=pod))
    patched: dict[str, Any] = jsonpatch.apply(pod, patch_of(answer))
    return patched


async def test_new_pods_carry_the_in_limit_cost_of_their_subset(nats_client: Client) -> None:
    admission, feed = await admission_for(
        nats_client, [zone_subset("zone-a", 2), zone_subset("zone-b", 2), zone_subset("zone-c")]
    )
    seen: list[tuple[str, str | None]] = []
    for i in range(5):
        pod = await create(admission, new_pod("web-new"))
        annotations = pod["metadata"]["annotations"]
        seen.append((json.loads(annotations[MATCHED])["subset"], annotations.get(COST)))
        feed.put(stored_pod(pod, f"web-new-{i}", pod))
    # three subsets, latest version: 100 x (3 - position)
    assert seen == [
        ("zone-a", "300"),
        ("zone-a", "300"),
        ("zone-b", "200"),
        ("zone-b", "200"),
        ("zone-c", "100"),
    ]


async def test_a_value_in_the_pod_template_is_replaced(nats_client: Client) -> None:
    admission, _ = await admission_for(
        nats_client, [zone_subset("zone-a", 2), zone_subset("zone-b")]
    )
    pod = new_pod("web-new")
    pod["metadata"]["annotations"] = {COST: "-5"}
    assert (await create(admission, pod))["metadata"]["annotations"][COST] == "200"


async def test_a_pod_of_an_older_replicaset_gets_no_cost_from_the_webhook(
    nats_client: Client,
) -> None:
    admission, _ = await admission_for(
        nats_client, [zone_subset("zone-a", 2), zone_subset("zone-b")]
    )
    pod = await create(admission, new_pod("web-old"))
    annotations = pod["metadata"]["annotations"]
    assert json.loads(annotations[MATCHED])["subset"] == "zone-a"
    assert COST not in annotations


async def test_a_subset_with_a_minimum_leaves_the_cost_to_the_planner(nats_client: Client) -> None:
    guarded = {**zone_subset("zone-a", 2), "minReplicas": 1}
    admission, _ = await admission_for(nats_client, [guarded, zone_subset("zone-b")])
    pod = await create(admission, new_pod("web-new"))
    assert json.loads(pod["metadata"]["annotations"][MATCHED])["subset"] == "zone-a"
    assert COST not in pod["metadata"]["annotations"]
