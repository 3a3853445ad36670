"""CloneSets on the three-zone cluster, through the official client and kubectl."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client, watch

from kubesim.behaviour.pod_ranking import DELETION_COST
from tests.fixtures.cluster import SimCluster, is_ready, is_terminating
from tests.kubesim_behaviour.workloads import cloneset

GROUP, VERSION, PLURAL = "apps.kruise.io", "v1alpha1", "clonesets"
REVISION = "controller-revision-hash"


def api(cluster: SimCluster) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(cluster.api_client)


def create(cluster: SimCluster, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = api(cluster).create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, body
    )
    return created


def get(cluster: SimCluster, name: str) -> dict[str, Any]:
    found: dict[str, Any] = api(cluster).get_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, name
    )
    return found


def patch(cluster: SimCluster, name: str, body: dict[str, Any]) -> None:
    api(cluster).patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name, body)


def live(cluster: SimCluster, app: str) -> list[dict[str, Any]]:
    return [p for p in cluster.pods(selector=f"app={app}") if not is_terminating(p)]


def settled(cluster: SimCluster, app: str, replicas: int, revision: str | None = None) -> bool:
    """``replicas`` pods, all ready (at ``revision``), none terminating; status caught up."""
    pods = cluster.pods(selector=f"app={app}")
    status = get(cluster, app).get("status") or {}
    return (
        len(pods) == replicas
        and all(is_ready(p) and not is_terminating(p) for p in pods)
        and (revision is None or all(p["metadata"]["labels"][REVISION] == revision for p in pods))
        and status.get("readyReplicas") == replicas
        and status.get("replicas") == replicas
    )


def wait_settled(cluster: SimCluster, app: str, replicas: int) -> dict[str, Any]:
    cluster.wait_for(lambda: settled(cluster, app, replicas), what=f"{replicas} ready {app} pods")
    return get(cluster, app)


@contextmanager
def pod_states(cluster: SimCluster, app: str) -> Iterator[Iterator[dict[str, client.V1Pod]]]:
    """Every state the pods of ``app`` go through: as listed, then after each watch event."""
    listed = cluster.core.list_namespaced_pod("default", label_selector=f"app={app}")
    watcher = watch.Watch()
    events = watcher.stream(
        cluster.core.list_namespaced_pod,
        "default",
        label_selector=f"app={app}",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=60,
    )

    def states() -> Iterator[dict[str, client.V1Pod]]:
        pods = {p.metadata.name: p for p in listed.items}
        yield pods
        for event in events:
            pod = event["object"]
            if event["type"] == "DELETED":
                pods.pop(pod.metadata.name, None)
            else:
                pods[pod.metadata.name] = pod
            yield pods
        pytest.fail(f"the pods of {app} did not reach the awaited state within 60 s")

    sequence = states()
    try:
        yield sequence
    finally:
        sequence.close()
        events.close()


def v1_ready(pod: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or ())


def test_a_cloneset_creates_named_labelled_owned_pods_and_reports_its_status(
    cluster: SimCluster,
) -> None:
    created = create(cluster, cloneset("web", 3))
    spec = created["spec"]
    assert spec["updateStrategy"] == {
        "type": "ReCreate",
        "partition": 0,
        "maxUnavailable": "20%",
        "maxSurge": 0,
    }
    assert spec["revisionHistoryLimit"] == 10
    assert spec["scaleStrategy"] == {}
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    status = wait_settled(cluster, "web", 3)["status"]
    pods = live(cluster, "web")
    revision = status["updateRevision"]
    for pod in pods:
        meta = pod["metadata"]
        instance = meta["labels"]["apps.kruise.io/cloneset-instance-id"]
        assert meta["name"] == f"web-{instance}"
        assert len(instance) == 5
        assert meta["labels"][REVISION] == revision
        assert meta["labels"]["pod-template-hash"] == revision.rsplit("-", 1)[1]
        (owner,) = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("CloneSet", "web", True)
        assert owner["apiVersion"] == "apps.kruise.io/v1alpha1"
    assert status == {
        "observedGeneration": 1,
        "replicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "updatedReplicas": 3,
        "updatedReadyReplicas": 3,
        "updatedAvailableReplicas": 3,
        "expectedUpdatedReplicas": 3,
        "updateRevision": revision,
        "currentRevision": revision,
        "collisionCount": 0,
        "labelSelector": "app=web",
    }
    revisions = cluster.apps.list_namespaced_controller_revision("default").items
    (stored,) = [r for r in revisions if r.metadata.name == revision]
    assert stored.revision == 1
    assert stored.metadata.labels["app"] == "web"
    assert stored.metadata.owner_references[0].kind == "CloneSet"
    assert stored.data["spec"]["template"]["$patch"] == "replace"


def test_a_cloneset_whose_selector_misses_its_template_is_refused(cluster: SimCluster) -> None:
    body = cloneset("bad", 1)
    body["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(client.ApiException) as refused:
        create(cluster, body)
    assert refused.value.status == 422
    message = json.loads(refused.value.body)["message"]
    assert message.startswith(
        'CloneSet.apps.kruise.io "bad" is invalid: spec.template.metadata.labels: Invalid value: '
    )
    assert message.endswith("`selector` does not match template `labels`")
    body = cloneset("bad", 1, updateStrategy={"type": "Rolling"})
    with pytest.raises(client.ApiException) as refused:
        create(cluster, body)
    assert "spec.updateStrategy.type" in json.loads(refused.value.body)["message"]


def test_scaling_through_the_scale_subresource_and_kubectl(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 2))
    wait_settled(cluster, "web", 2)
    scale = api(cluster).patch_namespaced_custom_object_scale(
        GROUP, VERSION, "default", PLURAL, "web", {"spec": {"replicas": 5}}
    )
    assert scale["spec"]["replicas"] == 5
    wait_settled(cluster, "web", 5)
    scale = api(cluster).get_namespaced_custom_object_scale(
        GROUP, VERSION, "default", PLURAL, "web"
    )
    assert scale["status"] == {"replicas": 5, "selector": "app=web"}
    cluster.kubectl("scale", "cloneset/web", "--replicas=1")
    wait_settled(cluster, "web", 1)
    assert get(cluster, "web")["spec"]["replicas"] == 1


def test_kubectl_lists_clonesets_with_kruise_columns_and_describes_their_events(
    cluster: SimCluster,
) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(cloneset("web", 2)))
    wait_settled(cluster, "web", 2)
    header, row = cluster.kubectl("get", "clonesets").stdout.splitlines()
    assert header.split() == [
        "NAME",
        "DESIRED",
        "UPDATED",
        "UPDATED_READY",
        "UPDATED_AVAILABLE",
        "READY",
        "TOTAL",
        "AGE",
    ]
    assert row.split()[:7] == ["web", "2", "2", "2", "2", "2", "2"]
    wide = cluster.kubectl("get", "clone", "web", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[-3:] == ["app", "registry.example/web:1", "app=web"]
    described = cluster.kubectl("describe", "cloneset", "web").stdout
    assert "Kind:         CloneSet" in described
    cluster.wait_for(
        lambda: (
            cluster.kubectl("describe", "cloneset", "web").stdout.count("SuccessfulCreate") == 2
        ),
        what="two SuccessfulCreate events in describe",
    )
    patched = cloneset("web", 3)
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(patched))
    wait_settled(cluster, "web", 3)
    cluster.kubectl("patch", "cloneset", "web", "--type", "merge", "-p", '{"spec":{"replicas":1}}')
    wait_settled(cluster, "web", 1)
    refused = cluster.kubectl(
        "patch", "cloneset", "web", "-p", '{"spec":{"replicas":2}}', check=False
    )
    assert refused.returncode != 0
    assert "application/strategic-merge-patch+json is not supported" in refused.stderr


def test_scale_in_removes_the_pods_with_the_lowest_deletion_cost(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 6))
    wait_settled(cluster, "web", 6)
    names = sorted(p["metadata"]["name"] for p in live(cluster, "web"))
    for cost, name in enumerate(names):
        cluster.core.patch_namespaced_pod(
            name, "default", {"metadata": {"annotations": {DELETION_COST: str(100 - cost)}}}
        )
    patch(cluster, "web", {"spec": {"replicas": 2}})
    wait_settled(cluster, "web", 2)
    assert sorted(p["metadata"]["name"] for p in live(cluster, "web")) == names[:2]


def test_scale_in_takes_not_ready_pods_first_then_the_most_restarted(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 4))
    wait_settled(cluster, "web", 4)
    first, second, third, fourth = sorted(p["metadata"]["name"] for p in live(cluster, "web"))
    cluster.set_pod_ready("default", second, False)
    cluster.restart_containers("default", fourth, 3)
    cluster.wait_for(
        lambda: get(cluster, "web")["status"]["readyReplicas"] == 3, what="one pod not ready"
    )
    cluster.wait_for(
        lambda: any(
            p["metadata"]["name"] == fourth
            and p["status"]["containerStatuses"][0]["restartCount"] == 3
            for p in live(cluster, "web")
        ),
        what="three restarts reported",
    )
    patch(cluster, "web", {"spec": {"replicas": 2}})
    cluster.wait_for(
        lambda: sorted(p["metadata"]["name"] for p in live(cluster, "web")) == [first, third],
        what="the not-ready and the restarted pod removed",
    )


def test_partition_keeps_that_many_pods_at_the_old_revision_until_it_is_lowered(
    cluster: SimCluster,
) -> None:
    create(cluster, cloneset("web", 5, updateStrategy={"partition": 2, "maxUnavailable": 1}))
    old = wait_settled(cluster, "web", 5)["status"]["updateRevision"]
    patch(
        cluster,
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "web:2"}]}}}},
    )

    def revisions() -> dict[str, int]:
        counts: dict[str, int] = {}
        for pod in live(cluster, "web"):
            if is_ready(pod):
                counts[pod["metadata"]["labels"][REVISION]] = (
                    counts.get(pod["metadata"]["labels"][REVISION], 0) + 1
                )
        return counts

    new = cluster.wait_for(
        lambda: (
            (status := get(cluster, "web")["status"])["updatedReadyReplicas"] == 3
            and status["readyReplicas"] == 5
            and status["updateRevision"]
        ),
        what="three pods updated",
    )
    assert new != old
    assert revisions() == {old: 2, new: 3}
    status = get(cluster, "web")["status"]
    assert (status["currentRevision"], status["expectedUpdatedReplicas"]) == (old, 3)
    new_pods = [p for p in live(cluster, "web") if p["metadata"]["labels"][REVISION] == new]
    assert {p["spec"]["containers"][0]["image"] for p in new_pods} == {"web:2"}

    patch(cluster, "web", {"spec": {"updateStrategy": {"partition": 0}}})
    cluster.wait_for(lambda: settled(cluster, "web", 5, new), what="every pod updated")
    cluster.wait_for(
        lambda: get(cluster, "web")["status"]["currentRevision"] == new,
        what="the update revision becoming current",
    )
    numbers = {
        r.metadata.name: r.revision
        for r in cluster.apps.list_namespaced_controller_revision("default").items
    }
    assert numbers == {old: 1, new: 2}


def test_a_percentage_partition_rounds_up_the_pods_kept_old(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 5, updateStrategy={"partition": "30%"}))
    old = wait_settled(cluster, "web", 5)["status"]["updateRevision"]
    patch(cluster, "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    cluster.wait_for(
        lambda: (
            get(cluster, "web")["status"]["updatedReadyReplicas"] == 3
            and settled(cluster, "web", 5)
        ),
        what="three of five pods updated (30% of 5 rounds up to 2 kept)",
    )
    assert sum(p["metadata"]["labels"][REVISION] == old for p in live(cluster, "web")) == 2
    assert get(cluster, "web")["status"]["expectedUpdatedReplicas"] == 3


def test_an_update_never_has_more_pods_unavailable_than_max_unavailable(
    cluster: SimCluster,
) -> None:
    create(cluster, cloneset("web", 5, updateStrategy={"maxUnavailable": 2}))
    wait_settled(cluster, "web", 5)
    most_unavailable = 0
    with pod_states(cluster, "web") as states:
        patch(cluster, "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
        for pods in states:
            alive = [p for p in pods.values() if not p.metadata.deletion_timestamp]
            ready = sum(1 for p in alive if v1_ready(p))
            most_unavailable = max(most_unavailable, 5 - ready)
            assert ready >= 3, f"only {ready} of 5 pods ready during the update"
            if (
                len(pods) == 5
                and ready == 5
                and all(p.metadata.labels.get("v") == "2" for p in pods.values())
            ):
                break
    assert most_unavailable == 2, "the update used its whole unavailability budget"


def test_max_surge_adds_new_pods_before_removing_old_ones(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 3, updateStrategy={"maxSurge": 1, "maxUnavailable": 0}))
    wait_settled(cluster, "web", 3)
    most = 0
    with pod_states(cluster, "web") as states:
        patch(cluster, "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
        for pods in states:
            alive = [p for p in pods.values() if not p.metadata.deletion_timestamp]
            most = max(most, len(alive))
            assert len(alive) <= 4
            assert sum(1 for p in alive if v1_ready(p)) >= 3, "maxUnavailable 0 holds"
            if (
                len(pods) == 3
                and all(v1_ready(p) for p in pods.values())
                and all(p.metadata.labels.get("v") == "2" for p in pods.values())
            ):
                break
    assert most == 4, "one surge pod ran above the three replicas"


def test_paused_cloneset_does_not_update_its_pods(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 2, updateStrategy={"paused": True}))
    old = wait_settled(cluster, "web", 2)["status"]["updateRevision"]
    patch(cluster, "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    cluster.wait_for(
        lambda: get(cluster, "web")["status"]["updateRevision"] != old,
        what="the new update revision",
    )
    patch(cluster, "web", {"spec": {"replicas": 3}})
    wait_settled(cluster, "web", 3)
    status = get(cluster, "web")["status"]
    assert status["updatedReplicas"] == 1, "scaling up while paused creates new-revision pods"
    assert sum(p["metadata"]["labels"][REVISION] == old for p in live(cluster, "web")) == 2
    patch(cluster, "web", {"spec": {"updateStrategy": {"paused": False}}})
    cluster.wait_for(
        lambda: settled(cluster, "web", 3, status["updateRevision"]), what="all updated"
    )


def test_pods_to_delete_are_replaced_and_then_dropped_from_the_list(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 3))
    wait_settled(cluster, "web", 3)
    victim = sorted(p["metadata"]["name"] for p in live(cluster, "web"))[1]
    patch(cluster, "web", {"spec": {"scaleStrategy": {"podsToDelete": [victim]}}})
    cluster.wait_for(
        lambda: (
            victim not in {p["metadata"]["name"] for p in cluster.pods(selector="app=web")}
            and settled(cluster, "web", 3)
        ),
        what=f"{victim} replaced",
    )
    cluster.wait_for(
        lambda: "podsToDelete" not in get(cluster, "web")["spec"]["scaleStrategy"],
        what="the deleted name removed from podsToDelete",
    )


def test_pods_to_delete_with_fewer_replicas_are_not_replaced(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 4))
    wait_settled(cluster, "web", 4)
    names = sorted(p["metadata"]["name"] for p in live(cluster, "web"))
    patch(
        cluster,
        "web",
        {"spec": {"replicas": 2, "scaleStrategy": {"podsToDelete": names[2:]}}},
    )
    wait_settled(cluster, "web", 2)
    assert sorted(p["metadata"]["name"] for p in live(cluster, "web")) == names[:2]


def test_deleting_a_cloneset_collects_its_pods_and_revisions(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 2))
    wait_settled(cluster, "web", 2)
    api(cluster).delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "web")
    cluster.wait_for(lambda: not cluster.pods(selector="app=web"), what="pods collected")
    cluster.wait_for(
        lambda: not cluster.apps.list_namespaced_controller_revision("default").items,
        what="revisions collected",
    )


def test_a_budget_over_cloneset_pods_expects_the_cloneset_scale(cluster: SimCluster) -> None:
    create(cluster, cloneset("web", 3))
    wait_settled(cluster, "web", 3)
    cluster.policy.create_namespaced_pod_disruption_budget(
        "default",
        {
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": "34%", "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    budget = cluster.wait_for(
        lambda: (
            (
                b := cluster.policy.read_namespaced_pod_disruption_budget("web", "default")
            ).status.expected_pods
            == 3
            and b
        ),
        what="the budget's expected pods",
    )
    assert (budget.status.desired_healthy, budget.status.disruptions_allowed) == (1, 2)


def test_scale_in_with_a_zone_spread_constraint_evens_out_the_zones(cluster: SimCluster) -> None:
    zone_c = [f"zone-c-{i}" for i in range(1, 5)]

    def cordon(unschedulable: bool) -> None:
        for node in zone_c:
            cluster.core.patch_node(node, {"spec": {"unschedulable": unschedulable}})

    def zones() -> list[str]:
        nodes = {
            n.metadata.name: n.metadata.labels["topology.kubernetes.io/zone"]
            for n in cluster.core.list_node().items
        }
        return sorted(nodes[p["spec"]["nodeName"]] for p in live(cluster, "web"))

    spread = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    body = cloneset("web", 4)
    body["spec"]["template"]["spec"]["topologySpreadConstraints"] = [spread]
    cordon(True)
    create(cluster, body)
    wait_settled(cluster, "web", 4)
    assert zones() == ["zone-a", "zone-a", "zone-b", "zone-b"]
    cordon(False)
    patch(cluster, "web", {"spec": {"replicas": 5}})
    wait_settled(cluster, "web", 5)
    assert zones() == ["zone-a", "zone-a", "zone-b", "zone-b", "zone-c"]
    # the zone-c pod restarted: without the spread rank (rule 7 after rule 5) it would go first
    (lonely,) = [p for p in live(cluster, "web") if p["spec"]["nodeName"] in zone_c]
    cluster.restart_containers("default", lonely["metadata"]["name"], 5)
    cluster.wait_for(
        lambda: any(
            p["status"]["containerStatuses"][0]["restartCount"] == 5 for p in live(cluster, "web")
        ),
        what="the restarts reported",
    )
    patch(cluster, "web", {"spec": {"replicas": 3}})
    wait_settled(cluster, "web", 3)
    assert zones() == ["zone-a", "zone-b", "zone-c"]
    assert lonely["metadata"]["name"] in {p["metadata"]["name"] for p in live(cluster, "web")}


def test_an_installed_cloneset_crd_replaces_the_built_in_kind_until_it_is_deleted(
    cluster: SimCluster,
) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "clonesets.apps.kruise.io"},
        "spec": {
            "group": GROUP,
            "names": {"kind": "CloneSet", "plural": PLURAL, "singular": "cloneset"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    extensions = client.ApiextensionsV1Api(cluster.api_client)
    extensions.create_custom_resource_definition(crd)
    create(cluster, {**cloneset("bare", 2), "spec": {"replicas": 2}})
    create(cluster, cloneset("web", 2))
    cluster.wait_for(
        lambda: get(cluster, "web").get("metadata", {}).get("resourceVersion"), what="stored"
    )
    # the CRD's schema accepts a spec without a template, and no pods are made for either
    assert "updateStrategy" not in get(cluster, "web")["spec"]
    assert cluster.pods(selector="app in (web, bare)") == []
    extensions.delete_custom_resource_definition("clonesets.apps.kruise.io")
    cluster.wait_for(
        lambda: (
            not api(cluster).list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)[
                "items"
            ]
        ),
        what="the custom resources gone with their CRD",
    )
    create(cluster, cloneset("web", 2))
    wait_settled(cluster, "web", 2)


def test_a_refused_pod_creation_shows_as_a_failed_scale_condition_until_it_succeeds(
    cluster: SimCluster,
) -> None:
    admission = client.AdmissionregistrationV1Api(cluster.api_client)
    admission.create_validating_webhook_configuration(
        {
            "metadata": {"name": "down"},
            "webhooks": [
                {
                    "name": "down.example.com",
                    "clientConfig": {"url": "https://127.0.0.1:1/never"},
                    "rules": [
                        {
                            "operations": ["CREATE"],
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["pods"],
                        }
                    ],
                    "objectSelector": {"matchLabels": {"app": "web"}},
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        }
    )
    create(cluster, cloneset("web", 2))
    (condition,) = cluster.wait_for(
        lambda: (get(cluster, "web").get("status") or {}).get("conditions"),
        what="a FailedScale condition",
    )
    assert (condition["type"], condition["status"]) == ("FailedScale", "True")
    assert 'failed calling webhook "down.example.com"' in condition["message"]
    cluster.wait_for(
        lambda: (
            "FailedCreate"
            in cluster.kubectl(
                "get", "events", "--field-selector", "involvedObject.name=web"
            ).stdout
        ),
        what="a FailedCreate event",
    )
    admission.delete_validating_webhook_configuration("down")
    status = wait_settled(cluster, "web", 2)["status"]
    assert "conditions" not in status


def test_going_back_to_an_earlier_template_reuses_its_revision_with_a_new_number(
    cluster: SimCluster,
) -> None:
    create(cluster, cloneset("web", 2))
    first = wait_settled(cluster, "web", 2)["status"]["updateRevision"]
    patch(cluster, "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    second = cluster.wait_for(
        lambda: (
            (status := get(cluster, "web")["status"])["updateRevision"] != first
            and status["updateRevision"]
        ),
        what="a second revision",
    )
    cluster.wait_for(lambda: settled(cluster, "web", 2, second), what="pods at the second")
    patch(cluster, "web", {"spec": {"template": {"metadata": {"labels": {"v": None}}}}})
    cluster.wait_for(lambda: settled(cluster, "web", 2, first), what="pods back at the first")
    numbers = {
        r.metadata.name: r.revision
        for r in cluster.apps.list_namespaced_controller_revision("default").items
    }
    assert numbers == {first: 3, second: 2}
    assert get(cluster, "web")["status"]["currentRevision"] == first
