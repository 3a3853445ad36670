"""A rebalance held back by a PodUnavailableBudget finishes once the budget has room again.

The elastic WorkloadSpread keeps the fixed pool at its maxReplicas and the rest of the workload in
the elastic pool; a PodUnavailableBudget allows few of the workload's pods unavailable at once.
The fixed pool's maxReplicas is raised to the whole workload and a WorkloadRebalancer asks for a
fresh placement: the rebalance reads the budget's allowance from its status, which trails the
webhook's spending of it, so the budget refuses some evictions (429). Each refused eviction is
decided again after a backoff until the budget allows it: every pod ends in the fixed pool, and
the workload never has more pods unavailable than the budget allows (sampled continuously while
they move).

Two settings make refusals certain on a small workload, where the defaults make them rare (a
race between the budget's status and the webhook's spending of it): the budget's status is
planned at most every 2 s, so the rebalance reads an allowance the webhook has already spent, and
the actuator gives a refused eviction up at its first answer (``max_attempts`` 1) instead of
retrying it for about 6 s, so each refusal reaches the planner.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from spreadbus.cli.local_stack import Stack
from tests.podunavailablebudget.disruption_watch import DisruptionWatch, ready
from tests.workloadspread_e2e.stack import (
    create_spread,
    deployment,
    elastic_spread,
    live_pods,
    running_stack,
    split,
    spread_status,
    subset_field,
    wait_for,
)

pytestmark = pytest.mark.e2e
REPLICAS = 20
ELASTIC = 10
MAX_UNAVAILABLE = 2
NS, APP, SPREAD = "tight", "web", "ws"
SETTINGS = {"SPREADBUS_MAX_ATTEMPTS": "1", "SPREADBUS_PUB_MIN_INTERVAL_SECONDS": "2"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, client.ApiClient]]:
    data_dir: Path = tmp_path_factory.mktemp("tight-budget-stack")
    with running_stack(data_dir, "elastic", SETTINGS) as running:
        yield running


def budget() -> dict[str, Any]:
    return {"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": f"{APP}-pub"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": APP},
                     "maxUnavailable": MAX_UNAVAILABLE}}


def budget_status(api: client.ApiClient) -> dict[str, Any]:
    custom: Any = client.CustomObjectsApi(api)
    obj = custom.get_namespaced_custom_object("policy.kruise.io", "v1alpha1", NS,
                                              "podunavailablebudgets", f"{APP}-pub")
    return dict(obj.get("status") or {})


def rebalancer(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": name},
            "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": APP, "namespace": NS}]}}


def refused_evictions(stack: Stack) -> int:
    """Evictions the actuator answered ``failed`` with the budget's 429, from its log."""
    lines = [line for child in stack.services if child.name.startswith("actuator")
             and child.log_path.exists()
             for line in child.log_path.read_text(errors="replace").splitlines()]
    return sum(1 for line in lines if '"outcome"' in line and '"failed"' in line
               and "status=429" in line)


def placed(api: client.ApiClient) -> dict[str, int]:
    """Ready pods by subset, once the workload has all its replicas and no other pods."""
    pods = live_pods(api, NS, APP)
    if len(pods) != REPLICAS or not all(ready(p) for p in pods):
        return {}
    return dict(split(pods, running=True))


def test_a_rebalance_refused_by_a_budget_completes_within_it(
    stack: tuple[Stack, client.ApiClient],
) -> None:
    stack_, api = stack
    custom: Any = client.CustomObjectsApi(api)
    create_spread(api, NS, elastic_spread(SPREAD, APP, REPLICAS - ELASTIC))
    custom.create_namespaced_custom_object("policy.kruise.io", "v1alpha1", NS,
                                           "podunavailablebudgets", budget())
    client.AppsV1Api(api).create_namespaced_deployment(NS, deployment(APP, REPLICAS))
    start = {"ACK": REPLICAS - ELASTIC, "ECI": ELASTIC}
    wait_for(f"{start} ready", lambda: placed(api) == start, 90, lambda: placed(api))
    wait_for(f"the budget to allow {MAX_UNAVAILABLE}",
             lambda: budget_status(api).get("unavailableAllowed") == MAX_UNAVAILABLE, 60,
             lambda: budget_status(api))
    raised = elastic_spread(SPREAD, APP, REPLICAS)
    custom.patch_namespaced_custom_object("apps.kruise.io", "v1alpha1", NS, "workloadspreads",
                                          SPREAD, {"spec": {"subsets": raised["spec"]["subsets"]}})
    wait_for(f"the fixed pool to show room for {ELASTIC}",
             lambda: subset_field(spread_status(api, NS, SPREAD),
                                  "missingReplicas").get("ACK") == ELASTIC, 30,
             lambda: spread_status(api, NS, SPREAD))
    with DisruptionWatch(api, NS, APP) as watch:
        custom.create_cluster_custom_object("apps.karmada.io", "v1alpha1",
                                            "workloadrebalancers", rebalancer("tight"))
        wait_for(f"every pod in the fixed pool ({REPLICAS}/0)",
                 lambda: placed(api) == {"ACK": REPLICAS}, 60,
                 lambda: (placed(api) or dict(split(live_pods(api, NS, APP))),
                          budget_status(api), f"{refused_evictions(stack_)} refused"))
    assert refused_evictions(stack_) > 0, "the budget never refused an eviction: nothing tested"
    assert watch.samples >= 10, "too few samples to judge"
    assert watch.worst <= MAX_UNAVAILABLE, watch.report()
