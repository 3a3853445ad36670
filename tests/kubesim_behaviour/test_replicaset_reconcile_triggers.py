"""Which pod changes wake a pod's ReplicaSet: every one it counts, none it never reads."""

from __future__ import annotations

from typing import Any

from kubesim.behaviour.replicaset import counts_for_replicaset


def pod(**metadata: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "web-1",
        "namespace": "default",
        "resourceVersion": "10",
        "labels": {"app": "web"},
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "controller": True}],
        **metadata,
    }
    return {
        "metadata": meta,
        "spec": {"nodeName": "node-1"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_a_deletion_cost_written_on_a_pod_does_not_wake_its_replicaset() -> None:
    before = pod()
    after = pod(
        resourceVersion="11",
        annotations={"controller.kubernetes.io/pod-deletion-cost": "100"},
    )
    assert not counts_for_replicaset(before, after)


def test_creations_and_deletions_wake_the_replicaset() -> None:
    assert counts_for_replicaset(None, pod())
    assert counts_for_replicaset(pod(), None)


def test_label_owner_deletion_and_finalizer_changes_wake_the_replicaset() -> None:
    before = pod()
    assert counts_for_replicaset(before, pod(labels={"app": "other"}))
    assert counts_for_replicaset(before, pod(ownerReferences=[]))
    assert counts_for_replicaset(before, pod(deletionTimestamp="2026-01-01T00:00:00Z"))
    assert counts_for_replicaset(before, pod(finalizers=["example.com/hold"]))


def test_readiness_and_placement_changes_wake_the_replicaset() -> None:
    before = pod()
    not_ready = pod()
    not_ready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert counts_for_replicaset(before, not_ready)
    moved = pod()
    moved["spec"] = {"nodeName": "node-2"}
    assert counts_for_replicaset(before, moved)
