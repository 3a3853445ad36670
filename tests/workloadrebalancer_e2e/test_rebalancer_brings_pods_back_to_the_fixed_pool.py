"""Seed 004's first scenario inside one cluster, on the local stack, and its simplest case.

The elastic WorkloadSpread puts the workload in the fixed pool first and the elastic pool after.
The fixed pool's nodes are lost: their pods are evicted by the taint manager, their replacements
stay pending there, and Adaptive scheduling moves them to the elastic pool. The nodes come back
and nothing moves by itself (a spread never moves running pods on its own). A WorkloadRebalancer
then asks for a fresh placement: the pods go back to the fixed pool one at a time, never with
more of the workload unavailable than the budget allows (sampled continuously while they move),
and the rebalancer is deleted by its TTL. Simplest case: raising the fixed pool's maxReplicas
moves nothing by itself, and a rebalancer fills it from the elastic pool.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from spreadbus.cli.local_stack import Stack
from tests.workloadspread_e2e.stack import (
    FAST_ACTUATOR,
    FAST_KUBELET,
    VIRTUAL_NODE_TOLERATIONS,
    create_namespace,
    create_spread,
    deployment,
    forbidden_plans,
    live_pods,
    node_zones,
    split,
    spread,
    spread_status,
    subset_field,
    wait_for,
    zone_subset,
    zone_term,
)

pytestmark = pytest.mark.e2e
REPLICAS = 6
BUDGET = 1
"""max(1, 25% of 6): the default limit of unavailable replicas while a rebalance moves pods."""
RECOVER_SECONDS = 6.0
CRITICAL_SECONDS = 3
TTL_SECONDS = 3
REQUEST = "rebalance.spreadbus.io/request"
HANDLED = "rebalance.spreadbus.io/handled"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    data_dir: Path = tmp_path_factory.mktemp("rebalance-stack")
    stack = Stack(data_dir=data_dir, cluster="local",
                  kubesim_args=["--topology=elastic", *FAST_KUBELET,
                                "--default-toleration-seconds=1"],
                  service_env={**FAST_ACTUATOR,
                               "SPREADBUS_ADAPTIVE_RECOVER_SECONDS": str(RECOVER_SECONDS)})
    try:
        stack.start(120.0)
        api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(data_dir / "kubeconfig"))
        with api:
            yield api
        forbidden = forbidden_plans(stack)
        assert not forbidden, "the actuator refused plans:\n" + "\n".join(forbidden[:20])
    finally:
        stack.stop()


def elastic_spread(name: str, target: str, fixed_max: int, *,
                   adaptive: bool = False) -> dict[str, Any]:
    elastic = zone_subset("elastic", "eci")
    elastic["tolerations"] = VIRTUAL_NODE_TOLERATIONS
    strategy = ({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": CRITICAL_SECONDS}}
                if adaptive else None)
    return spread(name, target, [zone_subset("fixed", "ack", fixed_max), elastic], strategy)


def rebalancer(name: str, namespace: str, target: str) -> dict[str, Any]:
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": name},
            "spec": {"ttlSecondsAfterFinished": TTL_SECONDS,
                     "workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": target, "namespace": namespace}]}}


class UnavailableSampler:
    """Counts the workload's replicas without a ready, live pod, every few tens of ms."""

    def __init__(self, api: client.ApiClient, namespace: str, app: str) -> None:
        self.core: Any = client.CoreV1Api(api)
        self.namespace, self.app = namespace, app
        self.worst = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            pods = self.core.list_namespaced_pod(self.namespace,
                                                 label_selector=f"app={self.app}").items
            ready = sum(1 for p in pods if p.metadata.deletion_timestamp is None
                        and any(c.type == "Ready" and c.status == "True"
                                for c in (p.status.conditions or [])))
            self.worst = max(self.worst, REPLICAS - ready)
            self.samples += 1
            time.sleep(0.03)

    def __enter__(self) -> UnavailableSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)


def set_ready(api: client.ApiClient, node: str, ready: bool) -> None:
    """Post the node's Ready condition as its kubelet would (Unknown: it stopped posting)."""
    core: Any = client.CoreV1Api(api)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status, reason = ("True", "KubeletReady") if ready else ("Unknown", "NodeStatusUnknown")
    core.patch_node_status(node, {"status": {"conditions": [{
        "type": "Ready", "status": status, "reason": reason, "message": "",
        "lastHeartbeatTime": now, "lastTransitionTime": now}]}})


def annotations(api: client.ApiClient, namespace: str, name: str) -> dict[str, str]:
    custom: Any = client.CustomObjectsApi(api)
    obj = custom.get_namespaced_custom_object("apps.kruise.io", "v1alpha1", namespace,
                                              "workloadspreads", name)
    return dict(obj["metadata"].get("annotations") or {})


def read_spread(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    custom: Any = client.CustomObjectsApi(api)
    obj: dict[str, Any] = custom.get_namespaced_custom_object(
        "apps.kruise.io", "v1alpha1", namespace, "workloadspreads", name)
    return {"annotations": obj["metadata"].get("annotations"),
            "generation": obj["metadata"].get("generation"),
            "maxReplicas": [s.get("maxReplicas") for s in obj["spec"]["subsets"]],
            "status": obj.get("status")}


def read_rebalancer(api: client.ApiClient, name: str) -> dict[str, Any] | None:
    custom: Any = client.CustomObjectsApi(api)
    try:
        found: dict[str, Any] = custom.get_cluster_custom_object(
            "apps.karmada.io", "v1alpha1", "workloadrebalancers", name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def create_rebalancer(api: client.ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    custom: Any = client.CustomObjectsApi(api)
    created: dict[str, Any] = custom.create_cluster_custom_object(
        "apps.karmada.io", "v1alpha1", "workloadrebalancers", body)
    return created


def running_split(api: client.ApiClient, namespace: str, app: str) -> dict[str, int]:
    pods = live_pods(api, namespace, app)
    return dict(split(pods, running=True)) if len(pods) == REPLICAS else {}


def rebalance_and_expire(api: client.ApiClient, namespace: str, app: str, spread_name: str,
                         wanted: dict[str, int]) -> int:
    """Create the rebalancer, wait for the pods to reach ``wanted`` and the rebalancer to go;
    the worst unavailability seen meanwhile."""
    name = f"rebalance-{namespace}"
    with UnavailableSampler(api, namespace, app) as sampler:
        created = create_rebalancer(api, rebalancer(name, namespace, app))
        uid = created["metadata"]["uid"]
        status = wait_for("the rebalancer to finish", lambda: (
            (read_rebalancer(api, name) or {}).get("status", {}).get("finishTime")
            and read_rebalancer(api, name)), 30, lambda: read_rebalancer(api, name))
        assert status is not None
        (entry,) = status["status"]["observedWorkloads"]
        assert entry["result"] == "Successful"
        assert annotations(api, namespace, spread_name)[REQUEST] == uid
        wait_for(f"the pods to move to {wanted}",
                 lambda: running_split(api, namespace, app) == wanted, 90,
                 lambda: (running_split(api, namespace, app), read_spread(api, namespace,
                                                                          spread_name)))
        wait_for("the rebalance to be handled",
                 lambda: annotations(api, namespace, spread_name).get(HANDLED) == uid, 30,
                 lambda: annotations(api, namespace, spread_name))
    assert sampler.samples >= 10, "too few samples to judge"
    wait_for("the rebalancer to be deleted by its TTL",
             lambda: read_rebalancer(api, name) is None, TTL_SECONDS + 30)
    return sampler.worst


def test_lost_fixed_nodes_send_pods_to_the_elastic_pool_and_a_rebalancer_brings_them_back(
    api: client.ApiClient,
) -> None:
    ns = "failover"
    create_spread(api, ns, elastic_spread("ws", "web", REPLICAS, adaptive=True))
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(ns, deployment("web", REPLICAS))
    wait_for("every pod in the fixed pool",
             lambda: running_split(api, ns, "web") == {"fixed": REPLICAS}, 60,
             lambda: running_split(api, ns, "web"))
    fixed_nodes = sorted(n for n, zone in node_zones(api).items() if zone == "ack")
    for node in fixed_nodes:
        set_ready(api, node, False)
    wait_for("Adaptive to move every pod to the elastic pool",
             lambda: running_split(api, ns, "web") == {"elastic": REPLICAS}, 90,
             lambda: (running_split(api, ns, "web"),
                      subset_field(spread_status(api, ns, "ws"), "conditions")))
    for node in fixed_nodes:
        set_ready(api, node, True)

    def reopened() -> bool:
        conditions = subset_field(spread_status(api, ns, "ws"), "conditions")["fixed"] or []
        return any(c["type"] == "Schedulable" and c["status"] == "True" for c in conditions)

    wait_for("the fixed subset to be schedulable again", reopened, RECOVER_SECONDS + 60)
    time.sleep(3)
    assert running_split(api, ns, "web") == {"elastic": REPLICAS}, "nothing moves by itself"
    worst = rebalance_and_expire(api, ns, "web", "ws", {"fixed": REPLICAS})
    assert worst <= BUDGET, f"{worst} replicas unavailable at once"


def test_a_raised_max_moves_nothing_until_a_rebalancer_fills_it(
    api: client.ApiClient,
) -> None:
    ns = "raised"
    create_spread(api, ns, elastic_spread("ws", "svc", 2))
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(ns, deployment("svc", REPLICAS))
    wait_for("2 fixed and 4 elastic",
             lambda: running_split(api, ns, "svc") == {"fixed": 2, "elastic": 4}, 60,
             lambda: running_split(api, ns, "svc"))
    custom: Any = client.CustomObjectsApi(api)
    raised = elastic_spread("ws", "svc", 4)
    custom.patch_namespaced_custom_object("apps.kruise.io", "v1alpha1", ns, "workloadspreads",
                                          "ws", {"spec": {"subsets": raised["spec"]["subsets"]}})
    wait_for("the fixed subset to show room for 2",
             lambda: subset_field(spread_status(api, ns, "ws"),
                                  "missingReplicas").get("fixed") == 2,
             30, lambda: read_spread(api, ns, "ws"))
    time.sleep(3)
    assert running_split(api, ns, "svc") == {"fixed": 2, "elastic": 4}, "nothing moves by itself"
    worst = rebalance_and_expire(api, ns, "svc", "ws", {"fixed": 4, "elastic": 2})
    assert worst <= BUDGET, f"{worst} replicas unavailable at once"


UD_WINDOW_SECONDS = 6
"""The UnitedDeployment's unschedulableDuration: how long a subset stays closed once marked."""


def united_failover(name: str) -> dict[str, Any]:
    """An Adaptive UnitedDeployment: the fixed pool first (room for all), the elastic pool after."""
    labels = {"app": name}
    template = deployment(name, REPLICAS)
    return {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {"deploymentTemplate": {
                "metadata": {"labels": labels},
                "spec": {"selector": {"matchLabels": labels},
                         "template": template["spec"]["template"]}}},
            "topology": {
                "subsets": [
                    {"name": "fixed", "nodeSelectorTerm": zone_term("ack"),
                     "maxReplicas": REPLICAS},
                    {"name": "elastic", "nodeSelectorTerm": zone_term("eci"),
                     "tolerations": VIRTUAL_NODE_TOLERATIONS},
                ],
                "scheduleStrategy": {"type": "Adaptive", "adaptive": {
                    "rescheduleCriticalSeconds": CRITICAL_SECONDS,
                    "unschedulableDuration": UD_WINDOW_SECONDS}},
            },
        },
    }


def pools(api: client.ApiClient, namespace: str, app: str) -> dict[str, int]:
    """Running, ready pods of ``app`` by the zone of their node (when all replicas are up)."""
    zones = node_zones(api)
    pods = live_pods(api, namespace, app)
    if len(pods) != REPLICAS:
        return {}
    out: dict[str, int] = {}
    for pod in pods:
        if pod.status.phase != "Running" or not pod.spec.node_name:
            return {}
        zone = zones.get(pod.spec.node_name, "")
        out[zone] = out.get(zone, 0) + 1
    return out


def read_ud(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    custom: Any = client.CustomObjectsApi(api)
    found: dict[str, Any] = custom.get_namespaced_custom_object(
        "apps.kruise.io", "v1alpha1", namespace, "uniteddeployments", name)
    return found


def subset_workload_replicas(api: client.ApiClient, namespace: str) -> dict[str, int]:
    """The replicas each subset's Deployment asks for, by subset name."""
    found = client.AppsV1Api(api).list_namespaced_deployment(
        namespace, label_selector="apps.kruise.io/subset-name").items
    return {d.metadata.labels["apps.kruise.io/subset-name"]: d.spec.replicas for d in found}


def test_the_same_failover_for_an_adaptive_uniteddeployment(api: client.ApiClient) -> None:
    ns, app = "ud-failover", "web-ud"
    create_namespace(api, ns)
    custom: Any = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object("apps.kruise.io", "v1alpha1", ns, "uniteddeployments",
                                           united_failover(app))
    wait_for("every pod in the fixed pool", lambda: pools(api, ns, app) == {"ack": REPLICAS},
             90, lambda: pools(api, ns, app))
    fixed_nodes = sorted(n for n, zone in node_zones(api).items() if zone == "ack")
    for node in fixed_nodes:
        set_ready(api, node, False)
    # The pods alone can show every pod elastic while the fixed workload still asks for its
    # six (its pods evicted, not yet replaced): the nodes return only once it asks for none.
    wait_for("Adaptive to move every pod to the elastic pool",
             lambda: pools(api, ns, app) == {"eci": REPLICAS}
             and subset_workload_replicas(api, ns) == {"fixed": 0, "elastic": REPLICAS}, 120,
             lambda: (pools(api, ns, app), subset_workload_replicas(api, ns)))
    for node in fixed_nodes:
        set_ready(api, node, True)

    def reopened() -> bool:
        statuses = read_ud(api, ns, app).get("status", {}).get("subsetStatuses", [])
        fixed = next((s for s in statuses if s["name"] == "fixed"), {})
        return any(c["type"] == "Schedulable" and c["status"] == "True"
                   for c in fixed.get("conditions", []))

    wait_for("the fixed subset to be schedulable again", reopened, UD_WINDOW_SECONDS + 60,
             lambda: read_ud(api, ns, app).get("status"))
    time.sleep(3)
    assert pools(api, ns, app) == {"eci": REPLICAS}, "nothing moves by itself"

    name = f"rebalance-{ns}"
    body = rebalancer(name, ns, app)
    body["spec"]["workloads"] = [{"apiVersion": "apps.kruise.io/v1alpha1",
                                  "kind": "UnitedDeployment", "name": app, "namespace": ns}]
    with UnavailableSampler(api, ns, app) as sampler:
        uid = create_rebalancer(api, body)["metadata"]["uid"]
        wait_for("the pods back in the fixed pool",
                 lambda: pools(api, ns, app) == {"ack": REPLICAS}, 120,
                 lambda: (pools(api, ns, app), read_ud(api, ns, app).get("status")))
        wait_for("the rebalance to be handled", lambda: (
            read_ud(api, ns, app)["metadata"].get("annotations") or {}).get(HANDLED) == uid, 30,
            lambda: read_ud(api, ns, app)["metadata"].get("annotations"))
    status = read_rebalancer(api, name)
    assert status is None or status["status"]["observedWorkloads"][0]["result"] == "Successful"
    assert sampler.samples >= 10, "too few samples to judge"
    assert sampler.worst <= BUDGET, f"{sampler.worst} replicas unavailable at once"
    wait_for("the rebalancer to be deleted by its TTL",
             lambda: read_rebalancer(api, name) is None, TTL_SECONDS + 30)
