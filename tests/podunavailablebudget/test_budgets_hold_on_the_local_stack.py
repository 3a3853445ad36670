"""The seed's three scenarios on the local stack, with three webhook replicas.

Every part runs for real (nats-server, kubesim with its controllers and kubelet, the watcher,
planner, actuator and three webhook replicas behind the webhook Service's endpoints). In each
scenario a background sampler reads the workload's pods continuously; the most pods ever
unavailable must stay within the budget's ``maxUnavailable``:

1. a rollout (the Deployment's template changes) while ``kubectl drain`` empties a node;
2. a scale-down of a WorkloadSpread-governed Deployment while another actor deletes its pods;
3. two actors deleting the same workload's pods at once.

And in-place updates of pods (an image change) are budgeted like deletions.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from spreadbus.cli.local_stack import Stack
from tests.podunavailablebudget.disruption_watch import DisruptionWatch, ready
from tests.workloadspread_e2e.stack import (
    create_namespace,
    create_spread,
    deployment,
    kubectl,
    running_stack,
    spread,
    wait_for,
    zone_subset,
)

pytestmark = pytest.mark.e2e
REPLICAS = 10
MAX_UNAVAILABLE = 2


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, client.ApiClient]]:
    data_dir: Path = tmp_path_factory.mktemp("pub-stack")
    with running_stack(data_dir, "three-zones", {}, webhook_replicas=3) as running:
        yield running


def budget_for(app: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy.kruise.io/v1alpha1",
        "kind": "PodUnavailableBudget",
        "metadata": {"name": f"{app}-pub"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": app},
                 "maxUnavailable": MAX_UNAVAILABLE},
    }


def budget_status(api: client.ApiClient, namespace: str, app: str) -> dict[str, Any]:
    custom: Any = client.CustomObjectsApi(api)
    obj = custom.get_namespaced_custom_object("policy.kruise.io", "v1alpha1", namespace,
                                              "podunavailablebudgets", f"{app}-pub")
    return dict(obj.get("status") or {})


def protected_deployment(api: client.ApiClient, namespace: str, app: str,
                         body: dict[str, Any] | None = None) -> list[Any]:
    """A budget, then its Deployment, all pods ready and linked, the budget settled."""
    create_namespace(api, namespace)
    custom: Any = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object("policy.kruise.io", "v1alpha1", namespace,
                                           "podunavailablebudgets", budget_for(app))
    client.AppsV1Api(api).create_namespaced_deployment(
        namespace, body or deployment(app, REPLICAS))
    return settled(api, namespace, app)


def settled(api: client.ApiClient, namespace: str, app: str) -> list[Any]:
    core: Any = client.CoreV1Api(api)

    def linked_and_ready() -> list[Any] | None:
        pods = [p for p in core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
                if p.metadata.deletion_timestamp is None]
        linked = [p for p in pods if ready(p) and (p.metadata.annotations or {}).get(
            "kruise.io/related-pub") == f"{app}-pub"]
        return pods if len(linked) == len(pods) == REPLICAS else None

    pods = wait_for(f"{REPLICAS} ready pods linked to their budget", linked_and_ready, 90)
    wait_for("the budget to allow 2 disruptions",
             lambda: budget_status(api, namespace, app).get("unavailableAllowed")
             == MAX_UNAVAILABLE, 60, lambda: budget_status(api, namespace, app))
    return pods


def test_kubectl_get_pub_prints_the_budget_columns(stack: tuple[Stack, client.ApiClient]) -> None:
    stack_, api = stack
    protected_deployment(api, "columns", "shop")
    out = kubectl(stack_.data_dir / "kubeconfig", "get", "pub", "-n", "columns")
    header, row = out.strip().splitlines()
    assert header.split() == ["NAME", "ALLOWED", "AVAILABLE", "DESIRED", "TOTAL", "AGE"]
    assert row.split()[:5] == ["shop-pub", "2", "10", "8", "10"]


def test_a_rollout_while_a_node_is_drained_keeps_the_budget(
    stack: tuple[Stack, client.ApiClient],
) -> None:
    stack_, api = stack
    ns, app = "rollout", "web"
    # On its own this rollout takes half the pods down at once, and the drained node holds
    # several: only the budget keeps the disruption at 2.
    body = deployment(app, REPLICAS)
    body["spec"]["strategy"] = {"type": "RollingUpdate",
                                "rollingUpdate": {"maxUnavailable": "50%", "maxSurge": 0}}
    body["spec"]["template"]["spec"]["nodeSelector"] = {"topology.kubernetes.io/zone": "zone-a"}
    pods = protected_deployment(api, ns, app, body)
    counts: dict[str, int] = {}
    for pod in pods:
        counts[pod.spec.node_name] = counts.get(pod.spec.node_name, 0) + 1
    node = max(counts, key=lambda n: counts[n])
    apps: Any = client.AppsV1Api(api)
    kubeconfig = stack_.data_dir / "kubeconfig"
    with DisruptionWatch(api, ns, app) as watch:
        drain = threading.Thread(target=kubectl, args=(
            kubeconfig, "drain", node, "--ignore-daemonsets", "--timeout=180s"))
        drain.start()
        apps.patch_namespaced_deployment(app, ns, {"spec": {"template": {"spec": {
            "containers": [{"name": "app", "image": "nginx:2"}]}}}})
        drain.join(timeout=200)
        assert not drain.is_alive(), "kubectl drain did not finish"

        def rolled_out() -> bool:
            current = [p for p in client.CoreV1Api(api).list_namespaced_pod(
                ns, label_selector=f"app={app}").items if p.metadata.deletion_timestamp is None]
            return (len(current) == REPLICAS and all(ready(p) for p in current)
                    and all(p.spec.containers[0].image == "nginx:2" for p in current)
                    and all(p.spec.node_name != node for p in current))

        wait_for("the rollout to finish off the drained node", rolled_out, 120)
    assert watch.held(MAX_UNAVAILABLE), watch.report()
    assert watch.worst > 0, f"the scenario never disrupted anything: {watch.report()}"


def test_a_spread_workload_scaled_down_while_another_actor_deletes_pods_keeps_the_budget(
    stack: tuple[Stack, client.ApiClient],
) -> None:
    _, api = stack
    ns, app = "spreadscale", "api"
    create_spread(api, ns, spread("api-spread", app, [
        zone_subset("a", "zone-a", 4), zone_subset("b", "zone-b")]))
    protected_deployment(api, ns, app)
    apps: Any = client.AppsV1Api(api)
    core: Any = client.CoreV1Api(api)
    refused = 0
    deleted = 0
    with DisruptionWatch(api, ns, app) as watch:
        apps.patch_namespaced_deployment_scale(app, ns, {"spec": {"replicas": 6}})
        deadline = time.monotonic() + 15
        rng = random.Random(3)
        while time.monotonic() < deadline:
            pods = [p for p in core.list_namespaced_pod(ns, label_selector=f"app={app}").items
                    if ready(p)]
            if pods:
                try:
                    core.delete_namespaced_pod(rng.choice(pods).metadata.name, ns)
                    deleted += 1
                except ApiException as exc:
                    if exc.status not in (403, 404):
                        raise
                    refused += exc.status == 403
            time.sleep(0.05)

        def six_ready() -> bool:
            pods = [p for p in core.list_namespaced_pod(ns, label_selector=f"app={app}").items
                    if p.metadata.deletion_timestamp is None]
            return len(pods) == 6 and all(ready(p) for p in pods)

        wait_for("6 ready pods", six_ready, 60)
    assert watch.held(MAX_UNAVAILABLE), watch.report()
    counts = f"{deleted} deleted, {refused} refused"
    assert deleted > 0, f"the budget must have allowed deletions: {counts}"
    assert refused > 0, f"the budget must have refused deletions: {counts}"


def test_two_actors_deleting_the_same_workloads_pods_keep_the_budget(
    stack: tuple[Stack, client.ApiClient],
) -> None:
    _, api = stack
    ns, app = "twoactors", "db"
    protected_deployment(api, ns, app)
    core: Any = client.CoreV1Api(api)
    tally = {"deleted": 0, "refused": 0}
    lock = threading.Lock()

    def actor(seed: int) -> None:
        rng = random.Random(seed)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            pods = [p for p in core.list_namespaced_pod(ns, label_selector=f"app={app}").items
                    if ready(p)]
            if not pods:
                time.sleep(0.05)
                continue
            try:
                core.delete_namespaced_pod(rng.choice(pods).metadata.name, ns)
                outcome = "deleted"
            except ApiException as exc:
                if exc.status == 404:
                    continue
                if exc.status != 403:
                    raise
                outcome = "refused"
            with lock:
                tally[outcome] += 1

    with DisruptionWatch(api, ns, app) as watch:
        actors = [threading.Thread(target=actor, args=(seed,)) for seed in (1, 2)]
        for thread in actors:
            thread.start()
        for thread in actors:
            thread.join(timeout=60)
    assert watch.held(MAX_UNAVAILABLE), watch.report()
    assert tally["deleted"] >= MAX_UNAVAILABLE, tally
    assert tally["refused"] > 0, tally


def test_in_place_updates_beyond_the_budget_are_refused(
    stack: tuple[Stack, client.ApiClient],
) -> None:
    _, api = stack
    ns, app = "inplace", "cache"
    pods = protected_deployment(api, ns, app)
    core: Any = client.CoreV1Api(api)
    patch = {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}

    def update(name: str) -> str | None:
        """None when the update went through, else the refusal's message."""
        try:
            core.patch_namespaced_pod(name, ns, patch)
        except ApiException as exc:
            if exc.status != 403:
                raise
            return str(json.loads(exc.body)["message"])
        return None

    # A replica whose view still holds a status from before every pod was ready refuses
    # early, as a stale budget should; a controller retries, as here.
    started = time.monotonic()
    for pod in pods[:MAX_UNAVAILABLE]:
        wait_for(f"the budget to let {pod.metadata.name} update",
                 lambda name=pod.metadata.name: update(name) is None, 8)
    assert time.monotonic() - started < 9, "the first records must still be live"
    refusal = update(pods[MAX_UNAVAILABLE].metadata.name)
    assert refusal is not None, "a third in-place update went through a budget of 2"
    assert f'podunavailablebudget.policy.kruise.io "{app}-pub" is forbidden' in refusal, refusal
    # A change of labels only is not the budget's business.
    core.patch_namespaced_pod(pods[-1].metadata.name, ns, {"metadata": {"labels": {"x": "y"}}})
