"""The webhook's view follows observations and indexes active pods per subset."""

from __future__ import annotations

import json
from typing import Any

from events.codec import encode
from events.messages import Observation, SyncMarker, WatchEventType
from spreadbus.features.workloadspread.admission.view import View
from tests.webhook.admission_reviews import pod

MATCHED = "apps.kruise.io/matched-workloadspread"


def matched(spread: str, subset: str, uid: str = "") -> dict[str, str]:
    value: dict[str, str] = {"name": spread, "subset": subset}
    if uid:
        value["uid"] = uid
    return {MATCHED: json.dumps(value)}


def observe(
    view: View,
    seq: int,
    event: WatchEventType,
    obj: dict[str, Any],
    *,
    cluster: str = "c1",
    group: str = "",
    resource: str = "pods",
) -> None:
    message = Observation(
        cluster=cluster, group=group, version="v1", resource=resource, event=event, object=obj
    )
    view.apply_message(seq, f"kube.obs.{cluster}", encode(message))


def counts(view: View, spread: str) -> dict[str, int]:
    return {subset: len(names) for (_, subset), names in view.slots_of("default", spread).items()}


def test_pods_are_counted_in_the_subset_their_annotation_names() -> None:
    view = View(cluster="c1")
    observe(view, 1, "ADDED", pod("a", annotations=matched("ws", "zone-a")))
    observe(view, 2, "ADDED", pod("b", annotations=matched("ws", "zone-a")))
    observe(view, 3, "ADDED", pod("c", annotations=matched("ws", "zone-b")))
    observe(view, 4, "ADDED", pod("d"))
    assert counts(view, "ws") == {"zone-a": 2, "zone-b": 1}
    assert view.seq == 4


def test_a_terminating_pod_leaves_its_subset_but_stays_seen_until_deleted() -> None:
    view = View(cluster="c1")
    a = pod("a", annotations=matched("ws", "zone-a"))
    observe(view, 1, "ADDED", a)
    terminating = json.loads(json.dumps(a))
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    observe(view, 2, "MODIFIED", terminating)
    assert counts(view, "ws") == {"zone-a": 0}
    assert view.seen("default", "a")
    assert not view.active("default", "a")
    observe(view, 3, "DELETED", terminating)
    assert view.get("", "pods", "default", "a") is None
    assert not view.seen("default", "a")


def test_a_pod_admitted_without_a_name_is_seen_under_its_reservation_uid() -> None:
    view = View(cluster="c1")
    observe(view, 1, "ADDED", pod("web-x1", annotations=matched("ws", "zone-a", uid="r-1")))
    assert view.seen("default", "r-1")
    assert not view.seen("default", "web-x1")


def test_a_pod_moving_between_versions_is_counted_once_in_its_new_slot() -> None:
    view = View(cluster="c1")
    old = pod("a", annotations=matched("ws", "s"), labels={"pod-template-hash": "v1"})
    observe(view, 1, "ADDED", old)
    new = pod("a", annotations=matched("ws", "s"), labels={"pod-template-hash": "v2"})
    observe(view, 2, "MODIFIED", new)
    slots = {slot: len(names) for slot, names in view.slots_of("default", "ws").items()}
    assert slots == {("v1", "s"): 0, ("v2", "s"): 1}


def test_workloadspreads_are_decoded_once_per_change() -> None:
    view = View(cluster="c1")
    spread = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [{"name": "a", "maxReplicas": 3}, {"name": "b"}],
        },
    }
    observe(view, 1, "ADDED", spread, group="apps.kruise.io", resource="workloadspreads")
    (model,) = view.spreads_in("default")
    assert [s.name for s in model.subsets] == ["a", "b"]
    assert view.spread_objects_in("default") == [spread]
    observe(view, 2, "DELETED", spread, group="apps.kruise.io", resource="workloadspreads")
    assert view.spreads_in("default") == []


def test_owner_lookups_find_workloads_by_group_and_kind() -> None:
    view = View(cluster="c1")
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-1", "namespace": "default"},
    }
    observe(view, 1, "ADDED", rs, group="apps", resource="replicasets")
    assert view.lookup("default", "apps", "ReplicaSet", "web-1") == rs
    assert view.lookup("default", "apps", "Deployment", "web-1") is None
    assert view.lookup("default", "example.com", "Widget", "web-1") is None


def test_observations_of_other_clusters_and_resources_are_ignored() -> None:
    view = View(cluster="c1")
    observe(view, 1, "ADDED", pod("a", annotations=matched("ws", "s")), cluster="c2")
    observe(view, 2, "ADDED", {"metadata": {"name": "n1"}}, resource="nodes")
    assert counts(view, "ws") == {}
    assert view.objects.get(("", "nodes")) is None
    assert view.seq == 2


def test_sync_markers_tell_when_a_resource_is_listed_completely() -> None:
    view = View(cluster="c1")
    for seq, complete in ((1, False), (2, True)):
        marker = SyncMarker(
            cluster="c1", group="", version="v1", resource="pods", complete=complete
        )
        view.apply_message(seq, "kube.sync.c1._.pods", encode(marker))
        assert (("", "pods") in view.synced) is complete


def test_unreadable_messages_are_skipped_and_counted() -> None:
    view = View(cluster="c1")
    view.apply_message(1, "kube.obs.c1._.pods.default.x", b"{not json")
    assert view.skipped == 1
    assert view.seq == 1
