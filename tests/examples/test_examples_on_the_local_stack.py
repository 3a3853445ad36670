"""Every example in examples/ applied with kubectl to the local stack, showing what it is for.

One stack per module on kubesim's ``seed-examples`` topology, files applied with kubectl as a
user would: unchanged, or, for the examples written for hundreds of pods, with their replicas and
maxReplicas scaled down; each test deletes its example again, since several share names (as the
documents they come from do). The CloneSet examples run once kubesim serves CloneSets and are
skipped until then; the UnitedDeployment examples run their subset workloads' pods where they say.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.examples.manifests import (
    EXAMPLES,
    Target,
    example_id,
    objects,
    scaled_down,
    target_of,
)
from tests.workloadspread_e2e.stack import (
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
SPREADS = EXAMPLES / "workloadspread"
UNITED = EXAMPLES / "uniteddeployment"
JSON = dict[str, Any]


class Cluster:
    """The stack's API: the official client and kubectl with the stack's kubeconfig."""

    def __init__(self, api: client.ApiClient, kubeconfig: Path) -> None:
        self.api = api
        self.kubeconfig = kubeconfig

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        return kubectl(self.kubeconfig, *args, stdin=stdin)

    def serves(self, group: str, resource: str) -> bool:
        listed = self.kubectl("api-resources", f"--api-group={group}", "-o", "name")
        return f"{resource}.{group}" in listed.split()

    @contextmanager
    def applied(self, path: Path, text: str | None = None) -> Iterator[None]:
        """The file applied for the block (or ``text``, a scaled-down copy of it), then deleted.

        The deletion is waited for through the API rather than by ``kubectl delete --wait``,
        whose watch of the deleted objects could outlast its timeout on kubesim.
        """
        if text is None:
            self.kubectl("apply", "-f", str(path))
        else:
            self.kubectl("apply", "-f", "-", stdin=text)
        try:
            yield
        finally:
            self.kubectl("delete", "-f", str(path), "--wait=false", "--ignore-not-found")
            try:
                wait_for(f"{example_id(path)} to be deleted", lambda: not self.left_of(path),
                         30, lambda: self.left_of(path))
            except AssertionError:
                # Seen a few times on a loaded host: a WorkloadSpread still listed long after
                # its delete was accepted. Show it, then delete again, so one slow deletion
                # does not fail every later example on this stack.
                print(self.kubectl("get", "-f", str(path), "--ignore-not-found", "-o", "yaml"))
                self.kubectl("delete", "-f", str(path), "--wait=false", "--ignore-not-found")
                wait_for(f"{example_id(path)} to be deleted", lambda: not self.left_of(path),
                         60, lambda: self.left_of(path))

    def left_of(self, path: Path) -> list[str]:
        """The file's objects still in the API, and the pods of its workloads still live."""
        out = self.kubectl("get", "-f", str(path), "--ignore-not-found", "-o", "name")
        left = out.split()
        for obj in objects(path):
            labels = ((obj.get("spec") or {}).get("template") or {}).get("metadata", {}).get(
                "labels") or {}
            if "app" in labels:
                namespace = obj["metadata"].get("namespace", "default")
                left += [f"pod/{p.metadata.name}" for p in live_pods(self.api, namespace,
                                                                     labels["app"])]
        return left

    def pods(self, target: Target) -> list[Any]:
        return live_pods(self.api, target.namespace, target.app)

    def running(self, target: Target, count: int) -> list[Any]:
        """The target's live pods, once exactly ``count`` of them run and none more are live."""

        def settled() -> list[Any] | None:
            pods = self.pods(target)
            return pods if len(pods) == count and all(
                p.status.phase == "Running" for p in pods
            ) else None

        return wait_for(f"{count} running pods of {target.name}", settled, 90,
                        lambda: Counter(p.status.phase for p in self.pods(target)))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data_dir = tmp_path_factory.mktemp("examples-stack")
    with running_stack(data_dir, "seed-examples", {}) as (_, api):
        yield Cluster(api, data_dir / "kubeconfig")


def needs_target_kind(cluster: Cluster, path: Path) -> Target:
    """The file's target; the test is skipped when kubesim does not serve its kind yet."""
    target = target_of(path)
    if target.kind == "CloneSet" and not cluster.serves("apps.kruise.io", "clonesets"):
        pytest.skip(f"{example_id(path)} needs CloneSet, which kubesim does not serve yet")
    return target


def zones_of(cluster: Cluster, pods: list[Any]) -> dict[str, set[str]]:
    """Subset name -> the zones its pods run in."""
    zones = node_zones(cluster.api)
    out: dict[str, set[str]] = {}
    for pod in pods:
        out.setdefault(subset_of(pod), set()).add(zones[pod.spec.node_name])
    return out


def labels_of(pods: list[Any], key: str) -> dict[str, set[str | None]]:
    """Subset name -> the values of label ``key`` its pods carry (None: not carried)."""
    out: dict[str, set[str | None]] = {}
    for pod in pods:
        out.setdefault(subset_of(pod), set()).add((pod.metadata.labels or {}).get(key))
    return out


def status_replicas(cluster: Cluster, namespace: str, name: str, wanted: dict[str, int]) -> None:
    wait_for(
        f"{name}'s status to count {wanted}",
        lambda: subset_field(spread_status(cluster.api, namespace, name), "replicas") == wanted,
        30,
        lambda: subset_field(spread_status(cluster.api, namespace, name), "replicas"),
    )


def test_the_demo_puts_three_labelled_pods_in_zone_a_and_the_rest_in_zone_b(
    cluster: Cluster,
) -> None:
    path = SPREADS / "demo-deployment.yaml"
    target = target_of(path)
    with cluster.applied(path):
        pods = cluster.running(target, 5)
        assert split(pods) == {"subset-a": 3, "subset-b": 2}
        assert zones_of(cluster, pods) == {"subset-a": {"zone-a"}, "subset-b": {"zone-b"}}
        assert labels_of(pods, "xxx-specific-label") == {"subset-a": {"xxx"}, "subset-b": {None}}
        for pod in pods:
            affinity = pod.spec.affinity.node_affinity
            preferred = [
                e.key for t in affinity.preferred_during_scheduling_ignored_during_execution or []
                for e in t.preference.match_expressions
            ]
            assert preferred == (["another-node-label-key"] if subset_of(pod) == "subset-a"
                                 else [])
        status_replicas(cluster, "default", "workloadspread-demo", {"subset-a": 3, "subset-b": 2})


@pytest.mark.parametrize("name", ["elastic-deployment.yaml", "elastic-cloneset.yaml"])
def test_the_elastic_example_fills_ack_to_its_maximum_and_scales_in_from_eci(
    cluster: Cluster, name: str
) -> None:
    """Scaled down from 100 in ACK of 150 to 4 of 6; the file is applied so in the README test."""
    path = SPREADS / name
    target = needs_target_kind(cluster, path)
    with cluster.applied(path, scaled_down(path, replicas=6, max_replicas=4)):
        pods = cluster.running(target, 6)
        assert split(pods) == {"ACK": 4, "ECI": 2}
        assert zones_of(cluster, pods) == {"ACK": {"ack"}, "ECI": {"eci"}}
        assert labels_of(pods, "deploy/zone") == {"ACK": {"ack"}, "ECI": {None}}
        status_replicas(cluster, "deploy", "ws-demo", {"ACK": 4, "ECI": 2})

        cluster.kubectl("scale", "-n", target.namespace, target.resource, "--replicas=3")
        pods = cluster.running(target, 3)
        assert split(pods) == {"ACK": 3}, "the elastic pods go first"
        status_replicas(cluster, "deploy", "ws-demo", {"ACK": 3, "ECI": 0})


@pytest.mark.parametrize("name", ["multi-domain-deployment.yaml", "multi-domain-cloneset.yaml"])
def test_the_multi_domain_example_keeps_its_split_through_a_rolling_update(
    cluster: Cluster, name: str
) -> None:
    """Scaled down from 100 per zone of 200 to 3 per zone of 6."""
    path = SPREADS / name
    target = needs_target_kind(cluster, path)
    with cluster.applied(path, scaled_down(path, replicas=6, max_replicas=3)):
        before = cluster.running(target, 6)
        assert split(before) == {"subset-a": 3, "subset-b": 3}
        assert zones_of(cluster, before) == {"subset-a": {"zone-a"}, "subset-b": {"zone-b"}}
        assert labels_of(before, "deploy/zone") == {"subset-a": {"zone-a"},
                                                    "subset-b": {"zone-b"}}

        old = {p.metadata.name for p in before}
        template = {"spec": {"template": {"metadata": {"annotations": {"example/rollout": "2"}}}}}
        cluster.kubectl("patch", "-n", target.namespace, target.resource, "--type=merge",
                        "-p", json.dumps(template))

        def rolled() -> list[Any] | None:
            pods = cluster.pods(target)
            done = len(pods) == 6 and not old & {p.metadata.name for p in pods} and all(
                p.status.phase == "Running" for p in pods
            )
            return pods if done else None

        after = wait_for("every pod replaced by the rollout", rolled, 90,
                         lambda: split(cluster.pods(target)))
        assert split(after) == {"subset-a": 3, "subset-b": 3}
        assert zones_of(cluster, after) == {"subset-a": {"zone-a"}, "subset-b": {"zone-b"}}


def test_the_subset_tolerations_example_gives_its_pods_the_toleration(cluster: Cluster) -> None:
    path = SPREADS / "subset-tolerations.yaml"
    target = target_of(path)
    with cluster.applied(path):
        pods = cluster.running(target, 2)
        assert split(pods) == {"subset-a": 2}
        for pod in pods:
            tolerations = [(t.key, t.operator, t.value, t.effect) for t in pod.spec.tolerations]
            assert ("key1", "Equal", "value1", "NoSchedule") in tolerations


def test_the_topology_label_example_labels_its_pods_with_their_zone(cluster: Cluster) -> None:
    path = SPREADS / "patch-topology-label.yaml"
    target = target_of(path)
    with cluster.applied(path):
        pods = cluster.running(target, 2)
        assert zones_of(cluster, pods) == {"subset-a": {"zone-a"}}
        assert labels_of(pods, "topology.application.deploy/zone") == {"subset-a": {"zone-a"}}


def test_the_container_env_example_names_the_zone_in_the_main_container(
    cluster: Cluster,
) -> None:
    path = SPREADS / "patch-container-env.yaml"
    target = target_of(path)
    with cluster.applied(path):
        pods = cluster.running(target, 2)
        assert zones_of(cluster, pods) == {"subset-a": {"zone-a"}}
        for pod in pods:
            (main,) = pod.spec.containers
            assert main.name == "main"
            assert [(e.name, e.value) for e in main.env] == [("K8S_AZ_NAME", "zone-a")]


def test_the_container_resources_example_sets_no_limits_since_it_says_limit(
    cluster: Cluster,
) -> None:
    path = SPREADS / "patch-container-resources.yaml"
    target = target_of(path)
    with cluster.applied(path):
        pods = cluster.running(target, 2)
        assert split(pods) == {"subset-a": 2}
        for pod in pods:
            (main,) = pod.spec.containers
            assert main.resources.limits is None


@pytest.mark.parametrize("path", sorted(UNITED.glob("*.yaml")), ids=example_id)
def test_every_uniteddeployment_example_is_stored_as_the_offline_defaulting_answers(
    cluster: Cluster, path: Path
) -> None:
    # The same look-up that skips the CloneSet examples finds a kind kubesim does serve.
    assert cluster.serves("apps.kruise.io", "uniteddeployments")
    (written,) = objects(path)
    validated = subprocess.run(
        [sys.executable, "-m", "spreadbus", "validate", "-f", str(path), "-o", "json"],
        capture_output=True, text=True, timeout=60, check=False)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    defaulted = json.loads(validated.stdout)["defaulted"]
    assert defaulted["spec"] != written["spec"], "the defaulting webhook adds defaults"
    with cluster.applied(path):
        name = written["metadata"]["name"]
        stored = json.loads(cluster.kubectl("get", "uniteddeployment", name, "-o", "json"))
        assert stored["spec"] == without_nulls(defaulted["spec"])


def without_nulls(value: Any) -> Any:
    """What the API server stores of a custom resource: fields set to null are dropped, as
    fields a structural schema does not mark nullable are (``maxReplicas: null``)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def pods_by_node_label(cluster: Cluster, target: Target, key: str, count: int) -> Counter[str]:
    """Once ``count`` of the target's pods run: how many run on each value of node label key."""
    core: Any = client.CoreV1Api(cluster.api)
    return Counter(
        core.read_node(p.spec.node_name).metadata.labels[key]
        for p in cluster.running(target, count)
    )


def test_the_uniteddeployment_sample_runs_1_3_and_2_pods_in_the_three_zones(
    cluster: Cluster,
) -> None:
    path = UNITED / "statefulset-three-zones.yaml"
    target = Target("UnitedDeployment", "sample-ud", "default", "sample")
    with cluster.applied(path):
        assert pods_by_node_label(cluster, target, "node", 6) == {
            "zone-a": 1, "zone-b": 3, "zone-c": 2
        }


def test_the_uniteddeployment_max_replicas_example_puts_4_on_regular_nodes_and_1_elastic(
    cluster: Cluster,
) -> None:
    if not cluster.serves("apps.kruise.io", "clonesets"):
        pytest.skip("its subsets are CloneSets, which kubesim does not serve yet")
    path = UNITED / "cloneset-max-replicas.yaml"
    target = Target("UnitedDeployment", "sample-ud", "default", "sample")
    with cluster.applied(path):
        assert pods_by_node_label(cluster, target, "node.kubernetes.io/pool", 5) == {
            "fixed": 4, "elastic": 1
        }


def test_the_uniteddeployment_adaptive_example_fills_the_regular_pool_then_the_elastic_one(
    cluster: Cluster,
) -> None:
    path = UNITED / "adaptive-elastic-pool.yaml"
    target = Target("UnitedDeployment", "ud-demo", "default", "ud-demo")
    with cluster.applied(path):
        assert pods_by_node_label(cluster, target, "node.kubernetes.io/pool", 5) == {
            "fixed": 3, "elastic": 2
        }


def test_the_uniteddeployment_patch_example_gives_each_subset_its_limits_and_env(
    cluster: Cluster,
) -> None:
    path = UNITED / "subset-patch.yaml"
    target = Target("UnitedDeployment", "sample-ud", "default", "sample")
    with cluster.applied(path):
        core: Any = client.CoreV1Api(cluster.api)
        subset_of_node = {  # node zone-a -> subset-a, zone-b -> subset-b
            n.metadata.name: "subset-" + n.metadata.labels["node"].removeprefix("zone-")
            for n in core.list_node(label_selector="node").items
        }
        pods = cluster.running(target, 6)
        assert Counter(subset_of_node[p.spec.node_name] for p in pods) == {
            "subset-a": 3, "subset-b": 3
        }
        for pod in pods:
            (main,) = pod.spec.containers
            assert main.resources.limits == {"cpu": "2", "memory": "800Mi"}
            env = [(e.name, e.value) for e in main.env]
            assert env == [("subset", subset_of_node[pod.spec.node_name])]


def custom_status(cluster: Cluster, kind: str, name: str, namespace: str = "") -> JSON:
    """The status of a custom object, as kubectl reads it."""
    where = ["-n", namespace] if namespace else []
    found: JSON = json.loads(cluster.kubectl("get", kind, name, *where, "-o", "json"))
    return dict(found.get("status") or {})


def test_the_budget_example_allows_3_of_its_5_pods_unavailable(cluster: Cluster) -> None:
    path = EXAMPLES / "podunavailablebudget" / "web-server-pub.yaml"
    with cluster.applied(path):
        cluster.running(Target("Deployment", "web-server", "web", "web-server"), 5)
        wanted = {"desiredAvailable": 2, "currentAvailable": 5, "totalReplicas": 5,
                  "unavailableAllowed": 3}

        def counted() -> JSON:
            status = custom_status(cluster, "podunavailablebudget", "web-server-pub", "web")
            return {key: status.get(key) for key in wanted}

        wait_for(f"the budget's status to count {wanted}", lambda: counted() == wanted, 60,
                 counted)


def test_the_rebalancer_example_reports_its_workload_rebalanced(cluster: Cluster) -> None:
    path = EXAMPLES / "workloadrebalancer" / "demo.yaml"
    target = target_of(path)
    with cluster.applied(path):
        cluster.running(target, 4)
        wanted = {"zone-a": 2, "zone-b": 2}
        wait_for(f"{wanted} placed", lambda: split(cluster.pods(target)) == wanted, 60,
                 lambda: split(cluster.pods(target)))

        def finished() -> JSON | None:
            status = custom_status(cluster, "workloadrebalancer", "demo")
            return status if status.get("finishTime") else None

        status = wait_for("the rebalancer to finish", finished, 60,
                          lambda: custom_status(cluster, "workloadrebalancer", "demo"))
        assert status["observedGeneration"] == 1
        assert status["observedWorkloads"] == [{
            "result": "Successful",
            "workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo-deploy",
                         "namespace": "default"}}]
