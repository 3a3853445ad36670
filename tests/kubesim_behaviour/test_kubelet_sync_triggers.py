"""Which pod changes make the kubelet sync a pod: its spec, status, deletion, steering notes."""

from __future__ import annotations

import copy
from typing import Any

from kubesim.behaviour.kubelet import READY_ANNOTATION, RESTARTS_ANNOTATION, kubelet_acts_on


def running_pod() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "uid": "u-1",
            "resourceVersion": "10",
            "labels": {"app": "web"},
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def changed(pod: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    out["metadata"].update(metadata, resourceVersion="11")
    return out


def test_a_deletion_cost_or_a_label_written_on_a_running_pod_does_not_sync_it() -> None:
    before = running_pod()
    costed = changed(before, annotations={"controller.kubernetes.io/pod-deletion-cost": "100"})
    assert not kubelet_acts_on(before, costed)
    assert not kubelet_acts_on(costed, changed(costed, labels={"app": "web", "tier": "a"}))


def test_a_new_pod_and_spec_or_status_changes_sync_it() -> None:
    before = running_pod()
    assert kubelet_acts_on(None, before)
    moved = copy.deepcopy(before)
    moved["spec"]["containers"][0]["image"] = "app:2"
    assert kubelet_acts_on(before, moved)
    not_ready = copy.deepcopy(before)
    not_ready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert kubelet_acts_on(before, not_ready)


def test_a_deletion_or_a_steering_annotation_syncs_it() -> None:
    before = running_pod()
    assert kubelet_acts_on(before, changed(before, deletionTimestamp="2026-01-01T00:00:00Z",
                                           deletionGracePeriodSeconds=30))
    assert kubelet_acts_on(before, changed(before, annotations={READY_ANNOTATION: "false"}))
    assert kubelet_acts_on(before, changed(before, annotations={RESTARTS_ANNOTATION: "2"}))
    replaced = changed(before, uid="u-2")
    assert kubelet_acts_on(before, replaced)
