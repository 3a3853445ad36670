"""An eviction refused by a PodDisruptionBudget leaves its pod's slot taken.

The API server admits an eviction before it checks the budget, so admission cannot know whether
the pod will go (the installed configuration does not even send evictions to the webhook; the
webhook records nothing for one either). Here the budget refuses (429) and the workload grows:
the new pod must not be steered into the full subset next to the pod that stayed. The local
stack runs every part for real (kubesim with its disruption controller, the four services).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.workloadspread_e2e.stack import (
    VIRTUAL_NODE_TOLERATIONS,
    create_spread,
    deployment,
    live_pods,
    local_stack,
    split,
    spread,
    wait_for,
    zone_term,
)

pytestmark = pytest.mark.e2e
NS = "budget"
APP = "web"

WORKLOADSPREAD = spread("ws-budget", APP, [
    {"name": "ACK", "requiredNodeSelectorTerm": zone_term("ack"), "maxReplicas": 2},
    {"name": "ECI", "requiredNodeSelectorTerm": zone_term("eci"),
     "tolerations": VIRTUAL_NODE_TOLERATIONS},
])


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    data_dir: Path = tmp_path_factory.mktemp("budget-stack")
    with local_stack(data_dir, "elastic", {}) as api:
        yield api


def test_a_new_pod_does_not_take_the_slot_of_a_pod_whose_eviction_was_refused(
    api: client.ApiClient,
) -> None:
    create_spread(api, NS, WORKLOADSPREAD)
    apps: Any = client.AppsV1Api(api)
    core: Any = client.CoreV1Api(api)
    policy: Any = client.PolicyV1Api(api)
    apps.create_namespaced_deployment(NS, deployment(APP, 2))
    policy.create_namespaced_pod_disruption_budget(NS, {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": APP},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": APP}}},
    })

    def running_in_ack() -> Any:
        pods = live_pods(api, NS, APP)
        return pods if split(pods, running=True) == {"ACK": 2} else None

    pods = wait_for("2 pods running in ACK", running_in_ack, 60,
                    lambda: split(live_pods(api, NS, APP)))

    def budget_spent() -> Any:
        pdb = policy.read_namespaced_pod_disruption_budget(APP, NS)
        status = pdb.status
        settled = (status is not None and status.observed_generation == pdb.metadata.generation
                   and status.current_healthy == 2 and status.disruptions_allowed == 0)
        return pdb if settled else None

    wait_for("the budget to allow no disruption", budget_spent, 30)
    kept = pods[0].metadata.name
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction(kept, NS, {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": kept, "namespace": NS},
        })
    assert refused.value.status == 429

    apps.patch_namespaced_deployment(APP, NS, {"spec": {"replicas": 3}})

    def three() -> Any:
        pods = live_pods(api, NS, APP)
        return pods if len(pods) == 3 else None

    grown = wait_for("a third pod", three, 60, lambda: split(live_pods(api, NS, APP)))
    assert kept in {p.metadata.name for p in grown}, "the refused eviction left its pod"
    assert split(grown) == {"ACK": 2, "ECI": 1}
