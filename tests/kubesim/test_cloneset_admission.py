"""CloneSets are defaulted and validated as Kruise's webhooks do, and served as its CRD is."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

GROUP, VERSION, PLURAL = "apps.kruise.io", "v1alpha1", "clonesets"


def cloneset(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CloneSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
            },
            **spec,
        },
    }


@pytest.fixture
def custom(kube_api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube_api_client)


def refusal(custom: client.CustomObjectsApi, body: dict[str, Any]) -> str:
    with pytest.raises(client.ApiException) as refused:
        custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    assert refused.value.status == 422
    return str(json.loads(refused.value.body)["message"])


def test_a_new_cloneset_gets_kruise_defaults_and_zero_counts(
    custom: client.CustomObjectsApi,
) -> None:
    created = custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, cloneset(updateStrategy={"type": "InPlaceIfPossible"})
    )
    spec = created["spec"]
    assert spec["replicas"] == 1
    assert spec["updateStrategy"] == {
        "type": "InPlaceIfPossible",
        "inPlaceUpdateStrategy": {},
        "partition": 0,
        "maxUnavailable": "20%",
        "maxSurge": 0,
    }
    assert spec["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert created["status"] == {
        "replicas": 0,
        "readyReplicas": 0,
        "availableReplicas": 0,
        "updatedReplicas": 0,
        "updatedReadyReplicas": 0,
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"updateStrategy": {"type": "Rolling"}},
            "spec.updateStrategy.type: Invalid value: \"Rolling\": must be 'ReCreate', "
            "InPlaceIfPossible or 'InPlaceOnly'",
        ),
        (
            {"updateStrategy": {"maxUnavailable": 0, "maxSurge": 0}},
            "spec.updateStrategy.maxUnavailable: Invalid value: 0: maxUnavailable and maxSurge "
            "should not both be less than 1",
        ),
        (
            {"updateStrategy": {"partition": "3"}},
            'spec.updateStrategy.partition: Invalid value: "3": failed getValueFromIntOrPercent '
            "for partition",
        ),
        (
            {"updateStrategy": {"type": "InPlaceOnly", "maxSurge": 1}},
            "can not use maxSurge with strategy type InPlaceOnly",
        ),
        ({"replicas": -1}, "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
        ({"selector": {}}, "empty selector is invalid for cloneset"),
    ],
    ids=[
        "type",
        "no-unavailability",
        "partition-not-a-percentage",
        "in-place-surge",
        "replicas",
        "empty-selector",
    ],
)
def test_an_invalid_cloneset_is_refused_in_kruise_words(
    custom: client.CustomObjectsApi, spec: dict[str, Any], message: str
) -> None:
    assert message in refusal(custom, cloneset(**spec))


def test_the_selector_of_a_cloneset_cannot_change(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, cloneset())
    body = cloneset()
    body["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    body["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    with pytest.raises(client.ApiException) as refused:
        custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "web", body)
    assert "spec.selector" in json.loads(refused.value.body)["message"]
    assert "field is immutable" in json.loads(refused.value.body)["message"]


def test_clonesets_are_discovered_with_short_name_and_subresources(
    kube_api_client: client.ApiClient,
) -> None:
    resources = client.CustomObjectsApi(kube_api_client).get_api_resources(GROUP, VERSION)
    names = {r.name: r for r in resources.resources}
    assert names["clonesets"].short_names == ["clone"]
    assert names["clonesets"].kind == "CloneSet"
    assert names["clonesets"].namespaced
    assert {"clonesets/status", "clonesets/scale"} <= set(names)


def test_pods_to_delete_must_name_live_pods_of_this_cloneset(
    custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, cloneset())
    owner = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CloneSet",
        "name": "web",
        "uid": created["metadata"]["uid"],
        "controller": True,
    }
    for name, owners in (("mine", [owner]), ("stray", [])):
        core.create_namespaced_pod(
            "default",
            {
                "metadata": {"name": name, "ownerReferences": owners},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
            },
        )

    def listing(names: list[str]) -> str:
        body = {"spec": {"scaleStrategy": {"podsToDelete": names}}}
        with pytest.raises(client.ApiException) as refused:
            custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "web", body)
        assert refused.value.status == 422
        return str(json.loads(refused.value.body)["message"])

    assert 'find pod gone failed: pods "gone" not found' in listing(["gone"])
    assert "find pod stray owner is not this CloneSet" in listing(["stray"])
    assert "duplicated items [mine]" in listing(["mine", "mine"])
    accepted = custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "web",
        {"spec": {"scaleStrategy": {"podsToDelete": ["mine"]}}},
    )
    assert accepted["spec"]["scaleStrategy"]["podsToDelete"] == ["mine"]
