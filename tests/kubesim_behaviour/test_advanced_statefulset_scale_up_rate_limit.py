"""Seed 001: an Advanced StatefulSet with ``scaleStrategy.maxUnavailable`` scales up at a rate.

With ``podManagementPolicy: Parallel`` Kruise creates pods without waiting for each other, but
never lets more than ``scaleStrategy.maxUnavailable`` of them (a number, or a percentage of
replicas rounded down) be unavailable at once while it creates them. Every state the pods pass
through is followed by a watch over HTTP, so the peak is the true one, not a sample's.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.fixtures.cluster import SimCluster, is_ready
from tests.kubesim_behaviour.pod_history import PodHistory
from tests.kubesim_behaviour.workloads import advanced_statefulset

GROUP, VERSION, PLURAL = "apps.kruise.io", "v1beta1", "statefulsets"


def create(cluster: SimCluster, body: dict[str, object]) -> None:
    client.CustomObjectsApi(cluster.api_client).create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, body
    )


def ready_count(cluster: SimCluster, app: str) -> int:
    return sum(1 for p in cluster.pods(selector=f"app={app}") if is_ready(p))


@pytest.mark.parametrize("limit", [3, "25%"], ids=["number", "percent-of-12"])
def test_scaling_up_from_zero_never_has_more_unavailable_pods_than_the_limit(
    cluster: SimCluster, limit: int | str
) -> None:
    create(
        cluster,
        advanced_statefulset(
            "rated", 0, podManagementPolicy="Parallel", scaleStrategy={"maxUnavailable": limit}
        ),
    )
    with PodHistory(cluster.core, "app=rated") as history:
        cluster.kubectl("scale", "asts", "rated", "--replicas=12")
        cluster.wait_for(lambda: ready_count(cluster, "rated") == 12, what="12 ready pods")
    assert history.peak_unavailable == 3, "the limit is used, and never exceeded"
    assert len(history.first("ADDED")) == 12


def test_without_a_limit_a_parallel_scale_up_makes_many_pods_unavailable_at_once(
    cluster: SimCluster,
) -> None:
    create(cluster, advanced_statefulset("burst", 0, podManagementPolicy="Parallel"))
    with PodHistory(cluster.core, "app=burst") as history:
        cluster.kubectl("scale", "asts", "burst", "--replicas=12")
        cluster.wait_for(lambda: ready_count(cluster, "burst") == 12, what="12 ready pods")
    assert history.peak_unavailable > 3


def test_a_pod_held_unready_spends_the_whole_limit_and_holds_back_the_scale_up(
    cluster: SimCluster,
) -> None:
    body = advanced_statefulset(
        "held", 1, podManagementPolicy="Parallel", scaleStrategy={"maxUnavailable": 1}
    )
    create(cluster, body)
    cluster.wait_for(lambda: ready_count(cluster, "held") == 1, what="held-0 ready")
    cluster.set_pod_ready("default", "held-0", False)
    cluster.wait_for(lambda: ready_count(cluster, "held") == 0, what="held-0 not ready")
    with PodHistory(cluster.core, "app=held") as history:
        cluster.kubectl("scale", "asts", "held", "--replicas=4")
        # the round that saw the new replicas has written its status: it created nothing
        cluster.wait_for(
            lambda: _status(cluster, "held").get("observedGeneration") == 2,
            what="the scale observed",
        )
        assert [p["metadata"]["name"] for p in cluster.pods(selector="app=held")] == ["held-0"]
        cluster.set_pod_ready("default", "held-0", True)
        cluster.wait_for(lambda: ready_count(cluster, "held") == 4, what="4 ready pods")
    assert history.peak_unavailable == 1
    assert history.first("ADDED") == ["held-1", "held-2", "held-3"]


def _status(cluster: SimCluster, name: str) -> dict[str, object]:
    obj = client.CustomObjectsApi(cluster.api_client).get_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, name
    )
    return dict(obj.get("status") or {})
