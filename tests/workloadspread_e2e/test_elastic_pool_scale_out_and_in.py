"""The seed's elastic example on the local stack: a fixed pool of 100 and an elastic overflow."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from spreadbus.features.workloadspread.core.pod_state import pod_annotations
from tests.fixtures.pod_watch import PodWatch
from tests.workloadspread_e2e.stack import (
    DELETION_COST,
    MATCHED,
    create_namespace,
    create_spread,
    deployment,
    elastic_spread,
    live_pods,
    local_stack,
    node_zones,
    split,
    spread_status,
    subset_field,
    wait_for,
)

pytestmark = pytest.mark.e2e
NS = "elastic"

WORKLOADSPREAD = elastic_spread("ws-demo", "workload-xxx", 100)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    data_dir: Path = tmp_path_factory.mktemp("elastic-stack")
    with local_stack(data_dir, "elastic", {}) as api:
        yield api


def test_the_elastic_example_lands_100_fixed_50_elastic_and_scales_in_elastic_first(
    api: client.ApiClient,
) -> None:
    create_spread(api, NS, WORKLOADSPREAD)
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(NS, deployment("workload-xxx", 0))
    apps.patch_namespaced_deployment("workload-xxx", NS, {"spec": {"replicas": 150}})

    def grown() -> Any:
        pods = live_pods(api, NS, "workload-xxx")
        return pods if split(pods, running=True) == {"ACK": 100, "ECI": 50} else None

    pods = wait_for("150 pods running 100/50", grown, 60,
                    lambda: split(live_pods(api, NS, "workload-xxx")))
    zones = node_zones(api)
    for pod in pods:
        subset = (pod.metadata.labels or {})["deploy/zone"]
        assert zones[pod.spec.node_name] == subset, "each pod runs in its subset's zone"

    def costed() -> Any:
        pods = live_pods(api, NS, "workload-xxx")
        costs = {p.metadata.name: (p.metadata.annotations or {}).get(DELETION_COST) for p in pods}
        return costs if None not in costs.values() else None

    costs = wait_for("every pod's deletion cost", costed, 30)
    by_subset = {p.metadata.name: (p.metadata.labels or {})["deploy/zone"] for p in pods}
    ack = {int(costs[n]) for n, z in by_subset.items() if z == "ack"}
    eci = {int(costs[n]) for n, z in by_subset.items() if z == "eci"}
    assert min(ack) > max(eci), "the elastic pods are cheaper to delete"

    status = wait_for(
        "the status to count 100/50",
        lambda: (lambda s: s if subset_field(s, "replicas") == {"ACK": 100, "ECI": 50} else None)(
            spread_status(api, NS, "ws-demo")
        ),
        30,
    )
    assert subset_field(status, "missingReplicas") == {"ACK": 0, "ECI": -1}

    apps.patch_namespaced_deployment("workload-xxx", NS, {"spec": {"replicas": 80}})

    def shrunk() -> Any:
        pods = live_pods(api, NS, "workload-xxx")
        return split(pods) if len(pods) == 80 else None

    assert wait_for("80 pods", shrunk, 60, lambda: split(live_pods(api, NS, "workload-xxx"))) == {
        "ACK": 80
    }, "the elastic pods went first"
    status = wait_for(
        "the status to count 80/0",
        lambda: (lambda s: s if subset_field(s, "replicas") == {"ACK": 80, "ECI": 0} else None)(
            spread_status(api, NS, "ws-demo")
        ),
        30,
    )
    assert subset_field(status, "missingReplicas")["ACK"] == 20


def test_new_pods_are_created_carrying_their_subsets_deletion_cost(
    api: client.ApiClient,
) -> None:
    """The webhook writes the cost a pod within its subset's limit gets (ACK 200, ECI 100), so the
    planner finds nothing to patch on a scale-out."""
    namespace = "elastic-created"
    fewer = json.loads(json.dumps(WORKLOADSPREAD))
    fewer["spec"]["subsets"][0]["maxReplicas"] = 10
    create_spread(api, namespace, fewer)
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(namespace, deployment("workload-xxx", 0))
    # the stack has followed the WorkloadSpread and its workload (the planner wrote a status)
    wait_for("the first status", lambda: subset_field(spread_status(api, namespace, "ws-demo"),
                                                      "replicas"), 30)
    with PodWatch(client.CoreV1Api(api), namespace, timeout_seconds=120) as watch:
        apps.patch_namespaced_deployment("workload-xxx", namespace, {"spec": {"replicas": 20}})
        created = wait_for("20 pods created", lambda: (lambda s: s if len(s) >= 20 else None)(
            watch.created()), 60, lambda: len(watch.created()))
    as_created = Counter(
        (json.loads(a[MATCHED])["subset"] if MATCHED in a else None, a.get(DELETION_COST))
        for a in map(pod_annotations, created.values())
    )
    assert as_created == {("ACK", "200"): 10, ("ECI", "100"): 10}


def _spreadbus_marks(meta: Any) -> dict[str, str]:
    """Annotations or labels spreadbus (or Kruise, whose keys it writes) may set on an object."""
    marks = {**(meta.annotations or {}), **(meta.labels or {})}
    return {k: v for k, v in marks.items()
            if "spreadbus" in k or "kruise" in k or k == DELETION_COST}


def test_a_deployment_no_workloadspread_targets_gets_nothing_from_spreadbus(
    api: client.ApiClient,
) -> None:
    apps: Any = client.AppsV1Api(api)
    core: Any = client.CoreV1Api(api)
    create_namespace(api, "plain")
    apps.create_namespaced_deployment("plain", deployment("plain", 3))
    wait_for("3 plain pods running", lambda: len([
        p for p in live_pods(api, "plain", "plain") if p.status.phase == "Running"]) == 3, 60)
    # A governed workload created afterwards: once its pods have their deletion costs, the
    # planner has decided on everything observed before them, the plain pods included.
    create_spread(api, "plain", elastic_spread("governed", "governed", 1))
    apps.create_namespaced_deployment("plain", deployment("governed", 2))
    wait_for("the governed pods' deletion costs", lambda: (
        pods := live_pods(api, "plain", "governed")) and len(pods) == 2 and all(
        DELETION_COST in (p.metadata.annotations or {}) for p in pods), 60)

    assert _spreadbus_marks(apps.read_namespaced_deployment("plain", "plain").metadata) == {}
    for rs in apps.list_namespaced_replica_set("plain", label_selector="app=plain").items:
        assert _spreadbus_marks(rs.metadata) == {}
    plain = core.list_namespaced_pod("plain", label_selector="app=plain").items
    assert len(plain) == 3
    for pod in plain:
        assert _spreadbus_marks(pod.metadata) == {}, pod.metadata.name
