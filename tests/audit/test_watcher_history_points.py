"""The watcher's audit points: each lifecycle step of a pod once, status changes only when the
status changed."""

from __future__ import annotations

import json
from typing import Any

from events.messages import PodLifecycle, ResourceRef, StatusChange
from services.watcher.history import PodSeen, pod_points, status_change


def pod(*, node: str = "", ready: bool = False, deleting: bool = False,
        rv: str = "1") -> bytes:
    body: dict[str, Any] = {
        "metadata": {"name": "web-1", "namespace": "ns", "uid": "u1", "resourceVersion": rv,
                     "annotations": {"a": "b"},
                     "ownerReferences": [{"kind": "ReplicaSet", "name": "web-x",
                                          "controller": True}]},
        "spec": {"nodeName": node} if node else {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }
    if deleting:
        body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        body["status"]["reason"] = "Evicted"
    return json.dumps(body).encode()


def points(seen: PodSeen | None, event: str, raw: bytes) -> tuple[PodSeen | None, list[str]]:
    after, out = pod_points(seen, event, raw, cluster="c", ts=5.0)
    return after, [p.event.point for p in out if isinstance(p.event, PodLifecycle)]


def test_each_step_of_a_pods_life_is_published_once() -> None:
    seen, names = points(None, "ADDED", pod())
    assert names == ["created"]
    seen, names = points(seen, "MODIFIED", pod(node="n1", rv="2"))
    assert names == ["bound"]
    seen, names = points(seen, "MODIFIED", pod(node="n1", rv="3"))
    assert names == []
    seen, names = points(seen, "MODIFIED", pod(node="n1", ready=True, rv="4"))
    assert names == ["ready"]
    seen, names = points(seen, "MODIFIED", pod(node="n1", ready=True, deleting=True, rv="5"))
    assert names == ["deleting"]
    seen, names = points(seen, "DELETED", pod(node="n1", ready=True, deleting=True, rv="6"))
    assert (seen, names) == (None, ["deleted"])


def test_created_carries_the_placement_and_deleting_its_reason() -> None:
    _, out = pod_points(None, "ADDED", pod(node="n1", ready=True), cluster="c", ts=1.0)
    created = out[0].event
    assert isinstance(created, PodLifecycle)
    assert created.annotations == {"a": "b"}
    assert created.owner == "ReplicaSet/web-x"
    assert [p.event.point for p in out] == ["created", "bound", "ready"]  # type: ignore[union-attr]
    assert out[0].subject == "history.pod.c.ns.web-1"
    _, gone = pod_points(PodSeen("n1", True, False), "MODIFIED", pod(node="n1", deleting=True),
                         cluster="c", ts=2.0)
    reasons = {p.event.point: p.event.reason for p in gone}  # type: ignore[union-attr]
    assert reasons == {"unready": "Evicted", "deleting": "Evicted"}


SPREADS = ResourceRef(group="apps.kruise.io", version="v1alpha1", resource="workloadspreads")


def spread(status: dict[str, Any], rv: str) -> bytes:
    return json.dumps({"metadata": {"name": "ws", "namespace": "ns", "uid": "w1",
                                    "resourceVersion": rv, "generation": 2},
                       "spec": {"x": rv}, "status": status}).encode()


def test_a_status_change_is_published_only_when_the_status_changes() -> None:
    status = {"subsetStatuses": [{"name": "fixed", "replicas": 1}]}
    seen, first = status_change(None, SPREADS, "ADDED", spread(status, "1"), cluster="c", ts=1)
    assert first is not None
    assert isinstance(first.event, StatusChange)
    assert first.event.status == status
    assert first.event.generation == 2
    seen, same = status_change(seen, SPREADS, "MODIFIED", spread(status, "2"), cluster="c", ts=2)
    assert same is None  # the spec changed, the status did not
    grown = {"subsetStatuses": [{"name": "fixed", "replicas": 2}]}
    seen, second = status_change(seen, SPREADS, "MODIFIED", spread(grown, "3"), cluster="c", ts=3)
    assert second is not None
    assert second.subject == (
        "history.status.c.apps%2Ekruise%2Eio.workloadspreads.ns.ws")
    after, gone = status_change(seen, SPREADS, "DELETED", spread(grown, "4"), cluster="c", ts=4)
    assert after is None, "the deleted object is forgotten"
    assert gone is not None
    assert isinstance(gone.event, StatusChange)
    assert (gone.event.deleted, gone.event.ts, gone.event.status) == (True, 4, grown)
    assert gone.msg_id == "status:w1:deleted"
    assert gone.subject == second.subject
    assert isinstance(second.event, StatusChange)
    assert not second.event.deleted
