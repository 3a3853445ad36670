"""The webhook's view follows observations and counts active pods per subset."""

from __future__ import annotations

import json
from typing import Any

from events.codec import encode
from events.messages import Observation, SyncMarker, WatchEventType
from services.webhook.view import MATCHED_ANNOTATION, View, matched_of
from tests.webhook.admission_reviews import pod


def matched(spread: str, subset: str, uid: str = "") -> dict[str, str]:
    value: dict[str, str] = {"name": spread, "subset": subset}
    if uid:
        value["uid"] = uid
    return {MATCHED_ANNOTATION: json.dumps(value)}


def observe(view: View, seq: int, event: WatchEventType, obj: dict[str, Any], cluster: str = "c1") -> None:
    message = Observation(
        cluster=cluster,
        group="",
        version="v1",
        resource="pods",
        event=event,
        object=obj,
    )
    view.apply_message(seq, "kube.obs.c1._.pods.default.x", encode(message))


def test_pods_are_counted_in_the_subset_their_annotation_names() -> None:
    view = View(cluster="c1")
    observe(view, 1, "ADDED", pod("a", annotations=matched("ws", "zone-a")))
    observe(view, 2, "ADDED", pod("b", annotations=matched("ws", "zone-a")))
    observe(view, 3, "ADDED", pod("c", annotations=matched("ws", "zone-b")))
    observe(view, 4, "ADDED", pod("d"))
    counts = {s: len(p) for s, p in view.subset_pods("default", "ws").items()}
    assert counts == {"zone-a": 2, "zone-b": 1}
    assert view.seq == 4


def test_a_deleted_or_terminating_pod_frees_its_slot_once() -> None:
    view = View(cluster="c1")
    a = pod("a", annotations=matched("ws", "zone-a"))
    observe(view, 1, "ADDED", a)
    terminating = json.loads(json.dumps(a))
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    observe(view, 2, "MODIFIED", terminating)
    assert view.subset_pods("default", "ws")["zone-a"] == {}
    observe(view, 3, "DELETED", terminating)
    assert view.get("", "pods", "default", "a") is None
    assert view.subset_pods("default", "ws")["zone-a"] == {}


def test_a_pod_created_without_a_name_is_keyed_by_its_reservation_uid() -> None:
    view = View(cluster="c1")
    observe(view, 1, "ADDED", pod("web-x1", annotations=matched("ws", "zone-a", uid="r-1")))
    assert view.pod_counted("default", "ws", "r-1")
    assert not view.pod_counted("default", "ws", "web-x1")


def test_observations_of_other_clusters_and_resources_are_ignored() -> None:
    view = View(cluster="c1")
    observe(view, 1, "ADDED", pod("a", annotations=matched("ws", "s")), cluster="c2")
    node = Observation(
        cluster="c1",
        group="",
        version="v1",
        resource="nodes",
        event="ADDED",
        object={"metadata": {"name": "n1"}},
    )
    view.apply_message(2, "kube.obs.c1._.nodes._.n1", encode(node))
    assert view.subset_pods("default", "ws") == {}
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


def test_matched_annotation_keys_are_read_case_insensitively_like_go() -> None:
    annotated = pod("a", annotations={MATCHED_ANNOTATION: '{"Name":"ws","Subset":"s"}'})
    parsed = matched_of(annotated)
    assert parsed is not None
    assert (parsed.spread, parsed.subset) == ("ws", "s")
    assert matched_of(pod("b", annotations={MATCHED_ANNOTATION: "junk"})) is None
