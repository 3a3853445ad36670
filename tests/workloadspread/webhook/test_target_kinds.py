"""Pods of every supported workload kind are steered, with percentages of the workload's own count.

A kind the view does not observe leaves its pods ungoverned (admitted, with a warning) instead of
refusing them; an owner of an observed kind that is missing is refused as Kruise refuses it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from nats.aio.client import Client

from kubesim import jsonpatch
from spreadbus.features.workloadspread.admission.admission import SpreadAdmission
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist, parse_whitelist
from spreadbus.features.workloadspread.core.workload_kinds import workload_kinds
from tests.webhook.admission_reviews import patch_of, request
from tests.workloadspread.webhook.cluster_state import (
    MATCHED,
    deployment,
    owned_pod,
    spread,
    synced_feed,
    targeting,
    workload,
    zone_subset,
)
from tests.workloadspread.webhook.spread_admission import spread_admission

WHITELIST = parse_whitelist(
    json.dumps(
        {
            "workloads": [
                {
                    "Group": "kubeflow.org",
                    "Version": "v1",
                    "Kind": "TFJob",
                    "replicasPath": "spec.tfReplicaSpecs.Worker.replicas",
                }
            ]
        }
    )
)


class Harness:
    def __init__(self, nc: Client, whitelist: Whitelist) -> None:
        self.nc = nc
        self.feed = synced_feed(View(cluster="c1", kinds=workload_kinds(whitelist)))
        self.view = self.feed.view
        self.whitelist = whitelist
        self.admission: SpreadAdmission | None = None

    async def start(self) -> SpreadAdmission:
        self.admission = await spread_admission(
            self.view, self.nc, whitelist=self.whitelist, catch_up_timeout=0.1
        )
        return self.admission

    async def create(self, pod: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The answer, and the subset the patched pod carries."""
        assert self.admission is not None
        body = request(operation="CREATE", resource="pods", obj=pod)
        answer = await self.admission.mutate_pod(body)
        if not answer["response"]["allowed"]:
            return answer, None
        raw = (jsonpatch.apply(pod, patch_of(answer))["metadata"].get("annotations") or {}).get(
            MATCHED
        )
        return answer, None if raw is None else str(json.loads(raw)["subset"])


@pytest.fixture
async def harness(nats_client: Client) -> Harness:
    made = Harness(nats_client, WHITELIST)
    # A Deployment spread in the namespace: before the kind table, any pod whose owner the view
    # could not look up was refused here, whatever spread it belonged to.
    made.feed.put(deployment(replicas=10))
    made.feed.put(spread([zone_subset("zone-a", 1), zone_subset("zone-b")], name="a-web"))
    return made


HALF = [zone_subset("zone-a", "50%"), zone_subset("zone-b")]


@pytest.mark.parametrize(
    ("api_version", "kind", "spec"),
    [
        ("batch/v1", "Job", {"parallelism": 4, "completions": 40}),
        ("apps.kruise.io/v1alpha1", "CloneSet", {"replicas": 4}),
        ("kubeflow.org/v1", "TFJob", {"tfReplicaSpecs": {"Worker": {"replicas": 4}}}),
    ],
)
async def test_pods_of_a_workload_kind_fill_a_percentage_of_its_own_count(
    harness: Harness, api_version: str, kind: str, spec: dict[str, Any]
) -> None:
    harness.feed.sync(kind)
    harness.feed.put(workload(api_version, kind, "train", spec))
    harness.feed.put(targeting(spread(HALF, name="b-train"), api_version, kind, "train"))
    await harness.start()
    subsets = []
    for _ in range(4):
        answer, subset = await harness.create(owned_pod(api_version, kind, "train", {"r": "w"}))
        assert answer["response"]["allowed"] is True, answer
        subsets.append(subset)
    # 50% of 4 is 2: had the workload not been observed, 50% of 0 would put all in zone-b.
    assert subsets == ["zone-a", "zone-a", "zone-b", "zone-b"]


async def test_a_pod_whose_owner_kind_is_not_observed_is_admitted_unsteered_with_a_warning(
    harness: Harness,
) -> None:
    # No CloneSet list ever completed (Kruise not installed): the owner cannot be looked up.
    await harness.start()
    answer, subset = await harness.create(
        owned_pod("apps.kruise.io/v1alpha1", "CloneSet", "cache", {"app": "cache"})
    )
    assert answer["response"]["allowed"] is True
    assert subset is None
    assert "CloneSet.apps.kruise.io default/cache" in answer["response"]["warnings"][0]


async def test_a_missing_owner_of_an_observed_kind_is_refused_like_kruise(
    harness: Harness,
) -> None:
    harness.feed.sync("Job")
    await harness.start()
    answer, _ = await harness.create(owned_pod("batch/v1", "Job", "gone", {"app": "batch"}))
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["code"] == 500
    assert "Job.batch default/gone not found" in answer["response"]["status"]["message"]


async def test_a_relist_does_not_make_an_observed_kind_unobserved(harness: Harness) -> None:
    harness.feed.sync("Job")
    view = harness.view
    view.apply_message(
        view.seq + 1,
        "kube.sync",
        json.dumps(
            {
                "type": "sync",
                "cluster": "c1",
                "group": "batch",
                "version": "v1",
                "resource": "jobs",
                "complete": False,
            }
        ).encode(),
    )
    assert ("batch", "jobs") not in view.synced
    assert view.followed_lookup("default", "batch", "Job", "any")[0]
