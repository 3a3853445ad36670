"""Advanced StatefulSets (Kruise's ``apps.kruise.io``) create, remove and update pods by ordinal.

Driven through the official client's custom objects API and kubectl; pods are followed by a
watch over HTTP, so the order of creations and deletions is the API's.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from tests.fixtures.cluster import SimCluster, is_ready, is_terminating
from tests.kubesim_behaviour.pod_history import PodHistory
from tests.kubesim_behaviour.workloads import advanced_statefulset

GROUP, VERSION, PLURAL = "apps.kruise.io", "v1beta1", "statefulsets"
REVISION = "controller-revision-hash"


def objects(cluster: SimCluster) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(cluster.api_client)


def create(cluster: SimCluster, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = objects(cluster).create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, body
    )
    return created


def read(cluster: SimCluster, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = objects(cluster).get_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, name
    )
    return obj


def patch(cluster: SimCluster, name: str, spec: dict[str, Any]) -> None:
    cluster.kubectl("patch", "asts", name, "--type", "merge", "-p", json.dumps({"spec": spec}))


def live(cluster: SimCluster, app: str) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p
        for p in cluster.pods(selector=f"app={app}")
        if not is_terminating(p)
    }


def all_ready(cluster: SimCluster, app: str, names: list[str]) -> dict[str, dict[str, Any]] | None:
    pods = live(cluster, app)
    everyone = cluster.pods(selector=f"app={app}")
    if sorted(pods) != sorted(names) or len(everyone) != len(names):
        return None
    return pods if all(is_ready(p) for p in pods.values()) else None


def settled(cluster: SimCluster, name: str) -> dict[str, Any] | None:
    """The set's status once it has seen its latest spec (its round has acted on it)."""
    obj = read(cluster, name)
    status: dict[str, Any] = obj.get("status") or {}
    return status if status.get("observedGeneration") == obj["metadata"]["generation"] else None


def image(name: str, tag: int) -> dict[str, Any]:
    return {"template": {"spec": {"containers": [{"name": "app", "image": f"{name}:{tag}"}]}}}


def test_ordered_ready_creates_ordinals_in_order_and_kubectl_scale_removes_from_the_highest(
    cluster: SimCluster,
) -> None:
    with PodHistory(cluster.core, "app=db") as history:
        created = create(cluster, advanced_statefulset("db", 3))
        pods = cluster.wait_for(lambda: all_ready(cluster, "db", ["db-0", "db-1", "db-2"]))
        assert history.first("ADDED") == ["db-0", "db-1", "db-2"]
        assert history.peak_unavailable == 1, "OrderedReady waits for each pod to be ready"
        for name, pod in pods.items():
            labels = pod["metadata"]["labels"]
            assert labels["statefulset.kubernetes.io/pod-name"] == name
            assert labels["apps.kubernetes.io/pod-index"] == name.rsplit("-", 1)[1]
            assert labels["lifecycle.apps.kruise.io/state"] == "Normal"
            assert labels[REVISION].startswith("db-")
            assert pod["spec"]["hostname"] == name
            assert pod["spec"]["subdomain"] == "db"
            (owner,) = pod["metadata"]["ownerReferences"]
            assert owner["apiVersion"] == "apps.kruise.io/v1beta1"
            assert (owner["kind"], owner["name"], owner["uid"]) == (
                "StatefulSet",
                "db",
                created["metadata"]["uid"],
            )
            assert owner["controller"] is True
        cluster.kubectl("scale", "statefulsets.apps.kruise.io", "db", "--replicas=1")
        cluster.wait_for(lambda: all_ready(cluster, "db", ["db-0"]), what="only db-0 left")
        assert history.first("MODIFIED", terminating=True) == ["db-2", "db-1"]
    status = cluster.wait_for(
        lambda: (s := settled(cluster, "db")) and s["replicas"] == 1 and s, what="status"
    )
    assert status["readyReplicas"] == status["availableReplicas"] == 1
    assert status["currentReplicas"] == status["updatedReplicas"] == 1
    assert status["updatedReadyReplicas"] == 1
    assert status["currentRevision"] == status["updateRevision"]
    assert status["labelSelector"] == "app=db"


def test_parallel_creates_every_ordinal_without_waiting_for_any(cluster: SimCluster) -> None:
    body = advanced_statefulset("par", 4, podManagementPolicy="Parallel")
    body["spec"]["template"]["metadata"]["annotations"] = {"kubesim.spreadbus.io/ready": "false"}
    create(cluster, body)
    cluster.wait_for(
        lambda: sorted(live(cluster, "par")) == ["par-0", "par-1", "par-2", "par-3"],
        what="4 pods while none is ready",
    )
    assert not any(is_ready(p) for p in live(cluster, "par").values())


def test_a_partitioned_rolling_update_moves_the_ordinals_at_or_above_it_then_all_of_them(
    cluster: SimCluster,
) -> None:
    body = advanced_statefulset(
        "part", 5, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 3}}
    )
    create(cluster, body)
    names = [f"part-{i}" for i in range(5)]
    before = cluster.wait_for(lambda: all_ready(cluster, "part", names), what="5 ready")
    old = {before[n]["metadata"]["labels"][REVISION] for n in names}
    assert len(old) == 1
    with PodHistory(cluster.core, "app=part") as history:
        patch(cluster, "part", image("part", 2))

        def moved() -> dict[str, dict[str, Any]] | None:
            pods = all_ready(cluster, "part", names)
            if pods is None or (s := settled(cluster, "part")) is None:
                return None
            if s["updatedReadyReplicas"] != 2:
                return None
            return pods

        after = cluster.wait_for(moved, what="ordinals 3 and 4 updated")
        assert history.first("MODIFIED", terminating=True) == ["part-4", "part-3"]
    revisions = {n: after[n]["metadata"]["labels"][REVISION] for n in names}
    status = settled(cluster, "part")
    assert status is not None
    assert [revisions[n] in old for n in names] == [True, True, True, False, False]
    assert revisions["part-3"] == revisions["part-4"] == status["updateRevision"]
    assert status["currentRevision"] in old
    assert (status["currentReplicas"], status["updatedReplicas"]) == (3, 2)
    assert after["part-4"]["spec"]["containers"][0]["image"] == "part:2"
    assert after["part-0"]["spec"]["containers"][0]["image"] == "registry.example/part:1"

    patch(cluster, "part", {"updateStrategy": {"rollingUpdate": {"partition": 0}}})
    done = cluster.wait_for(
        lambda: (s := settled(cluster, "part")) and s["updatedReadyReplicas"] == 5 and s,
        what="every ordinal updated",
    )
    assert done["currentRevision"] == done["updateRevision"]
    assert done["currentReplicas"] == 5
    pods = cluster.wait_for(lambda: all_ready(cluster, "part", names), what="5 ready")
    assert {p["metadata"]["labels"][REVISION] for p in pods.values()} == {done["updateRevision"]}
    revisions_kept = cluster.kubectl(
        "get", "controllerrevisions", "-l", "app=part", "-o", "jsonpath={.items[*].metadata.name}"
    ).stdout.split()
    assert sorted(revisions_kept) == sorted({*old, done["updateRevision"]})


def test_a_parallel_rolling_update_replaces_up_to_max_unavailable_pods_at_once(
    cluster: SimCluster,
) -> None:
    body = advanced_statefulset(
        "wide",
        6,
        podManagementPolicy="Parallel",
        updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}},
    )
    create(cluster, body)
    names = [f"wide-{i}" for i in range(6)]
    cluster.wait_for(lambda: all_ready(cluster, "wide", names), what="6 ready")
    with PodHistory(cluster.core, "app=wide") as history:
        patch(cluster, "wide", image("wide", 2))
        cluster.wait_for(
            lambda: (s := settled(cluster, "wide")) and s["updatedReadyReplicas"] == 6,
            what="all updated",
        )
    assert history.peak_unavailable == 2
    assert history.first("MODIFIED", terminating=True)[:2] == ["wide-5", "wide-4"]


def test_a_paused_rolling_update_replaces_nothing_until_resumed(cluster: SimCluster) -> None:
    body = advanced_statefulset(
        "paused", 3, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"paused": True}}
    )
    create(cluster, body)
    names = ["paused-0", "paused-1", "paused-2"]
    cluster.wait_for(lambda: all_ready(cluster, "paused", names), what="3 ready")
    patch(cluster, "paused", image("paused", 2))
    status = cluster.wait_for(lambda: settled(cluster, "paused"), what="the new template seen")
    pods = live(cluster, "paused")
    assert len(cluster.pods(selector="app=paused")) == 3, "no pod is being replaced"
    assert {p["metadata"]["labels"][REVISION] for p in pods.values()} == {status["currentRevision"]}
    assert status["updateRevision"] != status["currentRevision"]
    assert status["updatedReplicas"] == 0
    patch(cluster, "paused", {"updateStrategy": {"rollingUpdate": {"paused": False}}})
    cluster.wait_for(
        lambda: (s := settled(cluster, "paused")) and s["updatedReadyReplicas"] == 3,
        what="resumed update done",
    )


def test_on_delete_updates_a_pod_only_when_it_is_deleted(cluster: SimCluster) -> None:
    create(cluster, advanced_statefulset("od", 2, updateStrategy={"type": "OnDelete"}))
    cluster.wait_for(lambda: all_ready(cluster, "od", ["od-0", "od-1"]), what="2 ready")
    patch(cluster, "od", image("od", 2))
    status = cluster.wait_for(lambda: settled(cluster, "od"), what="the new template seen")
    assert status["updatedReplicas"] == 0
    assert len(cluster.pods(selector="app=od")) == 2
    cluster.core.delete_namespaced_pod("od-1", "default")
    pods = cluster.wait_for(
        lambda: (
            (p := all_ready(cluster, "od", ["od-0", "od-1"]))
            and p["od-1"]["metadata"]["labels"][REVISION] == status["updateRevision"]
            and p
        ),
        what="od-1 recreated at the update revision",
    )
    assert pods["od-0"]["metadata"]["labels"][REVISION] == status["currentRevision"]


def test_reserved_ordinals_are_skipped_and_their_pods_removed(cluster: SimCluster) -> None:
    create(cluster, advanced_statefulset("res", 3, podManagementPolicy="Parallel"))
    cluster.wait_for(lambda: all_ready(cluster, "res", ["res-0", "res-1", "res-2"]), what="3")
    patch(cluster, "res", {"reserveOrdinals": [1, "3-4"]})
    cluster.wait_for(
        lambda: all_ready(cluster, "res", ["res-0", "res-2", "res-5"]),
        what="res-1 moved past the reserved 3-4",
    )


def test_a_disruption_budget_expects_the_advanced_statefulsets_replicas(
    cluster: SimCluster,
) -> None:
    create(cluster, advanced_statefulset("guarded", 4, podManagementPolicy="Parallel"))
    names = [f"guarded-{i}" for i in range(4)]
    cluster.wait_for(lambda: all_ready(cluster, "guarded", names), what="4 ready")
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        stdin=json.dumps(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "guarded"},
                "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "guarded"}}},
            }
        ),
    )
    status = cluster.wait_for(
        lambda: (
            (s := cluster.policy.read_namespaced_pod_disruption_budget("guarded", "default").status)
            and s.expected_pods == 4
            and s
        ),
        what="the budget's expected pods from the set's scale",
    )
    assert (status.desired_healthy, status.disruptions_allowed) == (2, 2)


def test_min_ready_seconds_holds_the_next_ordinal_until_the_previous_pod_is_available(
    cluster: SimCluster,
) -> None:
    body = advanced_statefulset(
        "patient",
        2,
        updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"minReadySeconds": 2}},
    )
    create(cluster, body)
    status = cluster.wait_for(
        lambda: (s := settled(cluster, "patient")) and s["availableReplicas"] == 2 and s,
        what="2 available pods",
    )
    assert status["readyReplicas"] == 2
    pods = live(cluster, "patient")
    ready_at = next(
        c["lastTransitionTime"]
        for c in pods["patient-0"]["status"]["conditions"]
        if c["type"] == "Ready"
    )
    # the cluster's own timestamps (whole seconds, truncated, which keeps a true difference of
    # 2 at least 2): patient-1 was created no sooner than 2 s after patient-0 turned Ready
    created = pods["patient-1"]["metadata"]["creationTimestamp"]
    assert seconds(created) - seconds(ready_at) >= 2


def seconds(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def test_deleting_the_set_collects_its_pods(cluster: SimCluster) -> None:
    create(cluster, advanced_statefulset("gone", 2, podManagementPolicy="Parallel"))
    cluster.wait_for(lambda: all_ready(cluster, "gone", ["gone-0", "gone-1"]), what="2 ready")
    assert "deleted" in cluster.kubectl("delete", "asts", "gone").stdout
    cluster.wait_for(lambda: not cluster.pods(selector="app=gone"), what="pods collected")


def test_revisions_beyond_the_history_limit_are_deleted_once_no_pod_uses_them(
    cluster: SimCluster,
) -> None:
    create(cluster, advanced_statefulset("hist", 2, revisionHistoryLimit=1))
    cluster.wait_for(lambda: all_ready(cluster, "hist", ["hist-0", "hist-1"]), what="2 ready")
    for tag in (2, 3, 4):
        patch(cluster, "hist", image("hist", tag))
        cluster.wait_for(
            lambda: (
                (s := settled(cluster, "hist"))
                and s["currentRevision"] == s["updateRevision"]
                and s["updatedReadyReplicas"] == 2
            ),
            what=f"version {tag} rolled out",
        )
    status = settled(cluster, "hist")
    assert status is not None

    def kept() -> list[str] | None:
        names = cluster.kubectl(
            "get",
            "controllerrevisions",
            "-l",
            "app=hist",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ).stdout.split()
        return names if len(names) == 2 else None

    names = cluster.wait_for(kept, what="the current revision and one of history")
    assert status["updateRevision"] in names
