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
retrying it for about 6 s, so each refusal reaches the planner. ``make chaos`` also runs it at
the elastic example's size: 150 pods, 50 of them moved back under ``maxUnavailable: 10``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
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
APP, SPREAD = "web", "ws"


@dataclass(frozen=True)
class Size:
    """The workload's replicas, how many start in the elastic pool, and the budget."""

    replicas: int
    elastic: int
    max_unavailable: int

    @property
    def ns(self) -> str:
        return f"tight-{self.replicas}"

    @property
    def seconds(self) -> float:
        """Time allowed for the pods to start or move: more pods, more steps of the budget."""
        return 60 + 2 * self.replicas


SIZES = [
    pytest.param(Size(20, 10, 2), id="20-pods"),
    pytest.param(Size(150, 50, 10), id="150-pods",
                 marks=[pytest.mark.slow, pytest.mark.chaos, pytest.mark.chaos_only]),
]
SETTINGS = {"SPREADBUS_MAX_ATTEMPTS": "1", "SPREADBUS_PUB_MIN_INTERVAL_SECONDS": "2"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, client.ApiClient]]:
    data_dir: Path = tmp_path_factory.mktemp("tight-budget-stack")
    with running_stack(data_dir, "elastic", SETTINGS) as running:
        yield running


def budget(size: Size) -> dict[str, Any]:
    return {"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": f"{APP}-pub"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": APP},
                     "maxUnavailable": size.max_unavailable}}


def budget_status(api: client.ApiClient, ns: str) -> dict[str, Any]:
    custom: Any = client.CustomObjectsApi(api)
    obj = custom.get_namespaced_custom_object("policy.kruise.io", "v1alpha1", ns,
                                              "podunavailablebudgets", f"{APP}-pub")
    return dict(obj.get("status") or {})


def rebalancer(name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": name},
            "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": APP, "namespace": ns}]}}


def refused_evictions(stack: Stack) -> int:
    """Evictions the actuator answered ``failed`` with the budget's 429, from its log."""
    lines = [line for child in stack.services if child.name.startswith("actuator")
             and child.log_path.exists()
             for line in child.log_path.read_text(errors="replace").splitlines()]
    return sum(1 for line in lines if '"outcome"' in line and '"failed"' in line
               and "status=429" in line)


def placed(api: client.ApiClient, size: Size) -> dict[str, int]:
    """Ready pods by subset, once the workload has all its replicas and no other pods."""
    pods = live_pods(api, size.ns, APP)
    if len(pods) != size.replicas or not all(ready(p) for p in pods):
        return {}
    return dict(split(pods, running=True))


@pytest.mark.parametrize("size", SIZES)
def test_a_rebalance_refused_by_a_budget_completes_within_it(
    stack: tuple[Stack, client.ApiClient], size: Size,
) -> None:
    stack_, api = stack
    custom: Any = client.CustomObjectsApi(api)
    ns, fixed = size.ns, size.replicas - size.elastic
    create_spread(api, ns, elastic_spread(SPREAD, APP, fixed))
    custom.create_namespaced_custom_object("policy.kruise.io", "v1alpha1", ns,
                                           "podunavailablebudgets", budget(size))
    client.AppsV1Api(api).create_namespaced_deployment(ns, deployment(APP, size.replicas))
    start = {"ACK": fixed, "ECI": size.elastic}
    wait_for(f"{start} ready", lambda: placed(api, size) == start, size.seconds,
             lambda: placed(api, size))
    wait_for(f"the budget to allow {size.max_unavailable}",
             lambda: budget_status(api, ns).get("unavailableAllowed") == size.max_unavailable,
             60, lambda: budget_status(api, ns))
    raised = elastic_spread(SPREAD, APP, size.replicas)
    custom.patch_namespaced_custom_object("apps.kruise.io", "v1alpha1", ns, "workloadspreads",
                                          SPREAD, {"spec": {"subsets": raised["spec"]["subsets"]}})
    wait_for(f"the fixed pool to show room for {size.elastic}",
             lambda: subset_field(spread_status(api, ns, SPREAD),
                                  "missingReplicas").get("ACK") == size.elastic, 30,
             lambda: spread_status(api, ns, SPREAD))
    with DisruptionWatch(api, ns, APP) as watch:
        custom.create_cluster_custom_object("apps.karmada.io", "v1alpha1",
                                            "workloadrebalancers", rebalancer(ns, ns))
        wait_for(f"every pod in the fixed pool ({size.replicas}/0)",
                 lambda: placed(api, size) == {"ACK": size.replicas}, size.seconds,
                 lambda: (placed(api, size) or dict(split(live_pods(api, ns, APP))),
                          budget_status(api, ns), f"{refused_evictions(stack_)} refused"))
    assert refused_evictions(stack_) > 0, "the budget never refused an eviction: nothing tested"
    assert watch.samples >= 10, "too few samples to judge"
    assert watch.held(size.max_unavailable), watch.report()
