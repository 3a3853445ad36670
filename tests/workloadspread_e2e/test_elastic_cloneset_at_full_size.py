"""The seed's elastic example at its own size, over the CloneSet it names, on the local stack.

The objects are those of ``examples/workloadspread/elastic-cloneset.yaml`` (the seed's
WorkloadSpread unchanged) on the ``seed-examples`` topology, whose untainted elastic pool the
seed's ECI subset needs. The CloneSet starts at zero and is scaled through its scale
subresource, once by kubectl and once by the official client: 150 replicas fill ACK to its
maximum of 100 and put 50 in ECI; 80 leave ACK's 80 and nothing in ECI. What removes the ECI
pods is the CloneSet controller's own scale-in order reading the pod-deletion-cost spreadbus
wrote, not spreadbus deleting anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.examples.manifests import EXAMPLES, objects, target_of
from tests.workloadspread_e2e.stack import (
    DELETION_COST,
    kubectl,
    live_pods,
    node_zones,
    running_stack,
    split,
    spread_status,
    subset_field,
    subset_of,
    wait_for,
)

pytestmark = pytest.mark.e2e
EXAMPLE = EXAMPLES / "workloadspread" / "elastic-cloneset.yaml"
TARGET = target_of(EXAMPLE)


class Stack:
    """The stack's API, through the official client and through kubectl."""

    def __init__(self, api: client.ApiClient, kubeconfig: Path) -> None:
        self.api = api
        self.kubeconfig = kubeconfig

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        return kubectl(self.kubeconfig, *args, stdin=stdin)

    def pods(self) -> list[Any]:
        return live_pods(self.api, TARGET.namespace, TARGET.app)

    def cloneset(self) -> dict[str, Any]:
        custom: Any = client.CustomObjectsApi(self.api)
        found: dict[str, Any] = custom.get_namespaced_custom_object(
            "apps.kruise.io", "v1alpha1", TARGET.namespace, "clonesets", TARGET.name
        )
        return found


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("elastic-cloneset-stack")
    with running_stack(data_dir, "seed-examples", {}) as (_, api):
        yield Stack(api, data_dir / "kubeconfig")


def at_zero_replicas() -> str:
    """The example's objects as YAML, its CloneSet at 0 replicas for the test to scale."""
    found = objects(EXAMPLE)
    for obj in found:
        if obj["kind"] == "CloneSet":
            obj["spec"]["replicas"] = 0
    return yaml.safe_dump_all(found, sort_keys=False)


def status_with(stack: Stack, replicas: dict[str, int]) -> dict[str, Any]:
    """The WorkloadSpread's status, once its subsets count ``replicas``."""

    def counted() -> dict[str, Any] | None:
        status = spread_status(stack.api, TARGET.namespace, "ws-demo")
        return status if subset_field(status, "replicas") == replicas else None

    return wait_for(f"the status to count {replicas}", counted, 60,
                    lambda: subset_field(spread_status(stack.api, TARGET.namespace, "ws-demo"),
                                         "replicas"))


def test_150_replicas_fill_ack_to_100_and_scaling_to_80_removes_the_50_eci_pods_first(
    stack: Stack,
) -> None:
    stack.kubectl("apply", "-f", "-", stdin=at_zero_replicas())
    # the planner has followed the WorkloadSpread and its CloneSet once it writes a status
    status_with(stack, {"ACK": 0, "ECI": 0})

    stack.kubectl("scale", "-n", TARGET.namespace, TARGET.resource, "--replicas=150")

    def grown() -> list[Any] | None:
        pods = stack.pods()
        return pods if split(pods, running=True) == {"ACK": 100, "ECI": 50} else None

    pods = wait_for("150 pods running, 100 in ACK and 50 in ECI", grown, 120,
                    lambda: split(stack.pods()))
    zones = node_zones(stack.api)
    for pod in pods:
        expected = "ack" if subset_of(pod) == "ACK" else "eci"
        assert zones[pod.spec.node_name] == expected, "each pod runs in its subset's zone"
        assert (pod.metadata.labels or {}).get("deploy/zone") == (
            "ack" if expected == "ack" else None
        ), "only the ACK subset's patch labels its pods"
        (owner,) = pod.metadata.owner_references
        assert (owner.kind, owner.name) == ("CloneSet", TARGET.name)

    def costed() -> dict[str, int] | None:
        costs = {p.metadata.name: (p.metadata.annotations or {}).get(DELETION_COST)
                 for p in stack.pods()}
        if len(costs) != 150 or None in costs.values():
            return None
        return {name: int(cost) for name, cost in costs.items() if cost is not None}

    costs = wait_for("every pod's deletion cost", costed, 60)
    subset = {p.metadata.name: subset_of(p) for p in pods}
    ack = {costs[n] for n, s in subset.items() if s == "ACK"}
    eci = {costs[n] for n, s in subset.items() if s == "ECI"}
    assert min(ack) > max(eci), "the elastic pods are the cheaper ones to delete"

    status = status_with(stack, {"ACK": 100, "ECI": 50})
    assert subset_field(status, "missingReplicas") == {"ACK": 0, "ECI": -1}

    custom: Any = client.CustomObjectsApi(stack.api)
    scale = custom.patch_namespaced_custom_object_scale(
        "apps.kruise.io", "v1alpha1", TARGET.namespace, "clonesets", TARGET.name,
        {"spec": {"replicas": 80}},
    )
    assert scale["spec"]["replicas"] == 80

    def shrunk() -> list[Any] | None:
        pods = stack.pods()
        return pods if len(pods) == 80 and all(p.status.phase == "Running" for p in pods) else None

    left = wait_for("80 running pods", shrunk, 120, lambda: split(stack.pods()))
    assert split(left) == {"ACK": 80}, "the elastic pods went first"
    ack_before = {n for n, s in subset.items() if s == "ACK"}
    assert {p.metadata.name for p in left} <= ack_before, "the survivors are ACK pods that ran"

    status = status_with(stack, {"ACK": 80, "ECI": 0})
    assert subset_field(status, "missingReplicas") == {"ACK": 20, "ECI": -1}
    cloneset = wait_for(
        "the CloneSet's status to count 80",
        lambda: (cs := stack.cloneset()).get("status", {}).get("readyReplicas") == 80 and cs,
        60,
    )
    assert cloneset["spec"]["replicas"] == 80
    assert cloneset["status"]["replicas"] == 80
