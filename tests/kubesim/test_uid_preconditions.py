"""A uid in a write's body: a precondition for updates (409), an immutable field for patches (422).

Upstream takes a non-empty ``metadata.uid`` in an update's body as a storage precondition, so an
update written for an object that was deleted and re-created under the same name is refused as a
conflict in the storage layer's words. A patch carries no precondition, but the uid is immutable:
a patch naming another uid (the way controllers guard their patches) is refused as invalid, after
mutating webhooks ran (tests/kubesim/test_admission_webhooks.py shows the order).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from kubesim import errors
from tests.kubesim.conftest import deployment, pod


def _status(e: ApiException) -> dict[str, Any]:
    status: dict[str, Any] = json.loads(e.body)
    return status


def _recreated(core: client.CoreV1Api) -> tuple[str, dict[str, Any]]:
    """A pod deleted and created again under its name: (the first uid, the second pod)."""
    first = core.create_namespaced_pod("default", pod("p"))
    core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    second = core.api_client.sanitize_for_serialization(
        core.create_namespaced_pod("default", pod("p"))
    )
    return str(first.metadata.uid), second


def _eviction(**preconditions: str) -> client.V1Eviction:
    """An eviction of pod ``p`` under ``preconditions`` (uid, resourceVersion)."""
    return client.V1Eviction(
        metadata=client.V1ObjectMeta(name="p"),
        delete_options=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(**preconditions)
        ),
    )


def test_an_update_carrying_a_replaced_objects_uid_is_a_409_precondition_failure(
    core: client.CoreV1Api,
) -> None:
    old_uid, current = _recreated(core)
    body = {**current, "metadata": {**current["metadata"], "uid": old_uid}}
    body["metadata"]["labels"] = {"changed": "yes"}
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_pod("p", "default", body)
    status = _status(info.value)
    assert (info.value.status, status["reason"]) == (409, "Conflict")
    assert status["message"] == (
        'Operation cannot be fulfilled on pods "p": StorageError: invalid object, Code: 4, '
        "Key: /registry/pods/default/p, ResourceVersion: 0, AdditionalErrorMsg: Precondition "
        f"failed: UID in precondition: {old_uid}, UID in object meta: {current['metadata']['uid']}"
    )
    assert status["details"] == {"name": "p", "kind": "pods"}
    assert "changed" not in (core.read_namespaced_pod("p", "default").metadata.labels or {})


def test_an_update_carrying_the_stored_uid_or_none_applies(core: client.CoreV1Api) -> None:
    created = core.api_client.sanitize_for_serialization(
        core.create_namespaced_pod("default", pod("p"))
    )
    created["metadata"]["labels"] = {"a": "1"}
    core.replace_namespaced_pod("p", "default", created)
    without_uid = core.api_client.sanitize_for_serialization(
        core.read_namespaced_pod("p", "default")
    )
    del without_uid["metadata"]["uid"]
    without_uid["metadata"]["labels"] = {"a": "2"}
    updated = core.replace_namespaced_pod("p", "default", without_uid)
    assert (updated.metadata.labels, updated.metadata.uid) == (
        {"a": "2"},
        created["metadata"]["uid"],
    )


def test_updating_a_missing_object_with_a_uid_is_a_409_naming_no_stored_uid(
    core: client.CoreV1Api,
) -> None:
    body = pod("ghost")
    body["metadata"]["uid"] = "1234"
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_pod("ghost", "default", body)
    assert info.value.status == 409
    assert _status(info.value)["message"].endswith(
        "Precondition failed: UID in precondition: 1234, UID in object meta: "
    )


def test_a_status_update_and_a_scale_update_check_the_uid_too(
    core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    old_uid, current = _recreated(core)
    status_body = {**current, "metadata": {**current["metadata"], "uid": old_uid}}
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_pod_status("p", "default", status_body)
    assert info.value.status == 409
    apps.create_namespaced_deployment("default", deployment("web"))
    scale = {
        "metadata": {"name": "web", "namespace": "default", "uid": "other"},
        "spec": {"replicas": 3},
    }
    with pytest.raises(ApiException) as info:
        apps.replace_namespaced_deployment_scale("web", "default", scale)
    assert info.value.status == 409
    assert "Key: /registry/deployments/default/web" in _status(info.value)["message"]
    assert apps.read_namespaced_deployment("web", "default").spec.replicas != 3


@pytest.mark.parametrize("patch_type", ["merge", "strategic"])
def test_a_patch_naming_another_uid_is_refused_as_an_immutable_field(
    core: client.CoreV1Api, patch_type: str
) -> None:
    old_uid, current = _recreated(core)
    content_type = {
        "merge": "application/merge-patch+json",
        "strategic": "application/strategic-merge-patch+json",
    }[patch_type]
    patch = {"metadata": {"uid": old_uid, "annotations": {"cost": "5"}}}
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("p", "default", patch, _content_type=content_type)
    status = _status(info.value)
    assert (info.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        f'Pod "p" is invalid: metadata.uid: Invalid value: "{old_uid}": field is immutable'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "{old_uid}": field is immutable',
            "field": "metadata.uid",
        }
    ]
    assert core.read_namespaced_pod("p", "default").metadata.annotations is None

    patch["metadata"]["uid"] = current["metadata"]["uid"]
    patched = core.patch_namespaced_pod("p", "default", patch, _content_type=content_type)
    assert patched.metadata.annotations == {"cost": "5"}


def test_a_json_patch_replacing_the_uid_is_invalid_and_one_removing_it_keeps_it(
    core: client.CoreV1Api,
) -> None:
    uid = core.create_namespaced_pod("default", pod("p")).metadata.uid
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod(
            "p", "default", [{"op": "replace", "path": "/metadata/uid", "value": "other"}]
        )
    assert info.value.status == 422
    assert 'metadata.uid: Invalid value: "other"' in _status(info.value)["message"]
    # upstream's BeforeUpdate fills an empty uid in from the stored object
    patched = core.patch_namespaced_pod(
        "p",
        "default",
        [
            {"op": "remove", "path": "/metadata/uid"},
            {"op": "add", "path": "/metadata/labels", "value": {"kept": "uid"}},
        ],
    )
    assert (patched.metadata.uid, patched.metadata.labels) == (uid, {"kept": "uid"})


def test_an_eviction_whose_uid_precondition_names_a_replaced_pod_is_a_409(
    core: client.CoreV1Api,
) -> None:
    old_uid, current = _recreated(core)
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod_eviction("p", "default", _eviction(uid=old_uid))
    assert info.value.status == 409
    assert (
        f"the UID in the precondition ({old_uid}) does not match" in _status(info.value)["message"]
    )
    assert core.read_namespaced_pod("p", "default").metadata.uid == current["metadata"]["uid"]
    core.create_namespaced_pod_eviction("p", "default", _eviction(uid=current["metadata"]["uid"]))
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_pod("p", "default")
    assert gone.value.status == 404


def test_storage_keys_follow_upstreams_layout() -> None:
    assert errors.storage_key("pods", "", "ns", "p", custom=False) == "/registry/pods/ns/p"
    assert errors.storage_key("nodes", "", "", "n1", custom=False) == "/registry/minions/n1"
    assert (
        errors.storage_key("workloadspreads", "apps.kruise.io", "ns", "ws", custom=True)
        == "/registry/apps.kruise.io/workloadspreads/ns/ws"
    )


def test_a_dry_run_eviction_checks_its_preconditions_and_changes_nothing(
    core: client.CoreV1Api,
) -> None:
    old_uid, current = _recreated(core)
    uid, version = current["metadata"]["uid"], current["metadata"]["resourceVersion"]

    def evict(**preconditions: str) -> None:
        core.create_namespaced_pod_eviction(
            "p", "default", _eviction(**preconditions), dry_run="All"
        )

    with pytest.raises(ApiException) as info:
        evict(uid=old_uid)
    assert info.value.status == 409
    assert f"the UID in the precondition ({old_uid}) does not match" in (
        _status(info.value)["message"]
    )
    with pytest.raises(ApiException) as info:
        evict(resourceVersion="1")
    assert info.value.status == 409
    assert "the ResourceVersion in the precondition (1) does not match" in (
        _status(info.value)["message"]
    )
    evict(uid=uid, resourceVersion=version)
    still = core.read_namespaced_pod("p", "default")
    assert (still.metadata.uid, still.metadata.resource_version) == (uid, version)
    assert still.metadata.deletion_timestamp is None
