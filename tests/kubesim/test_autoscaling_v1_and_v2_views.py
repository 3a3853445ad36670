"""One HorizontalPodAutoscaler, two versions: v2 stored, v1 converted as upstream converts it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes import client, watch
from kubernetes.client import ApiException

from kubesim import horizontalpodautoscaler as hpa_api
from kubesim import protobuf

TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


@pytest.fixture
def v1(kube_api_client: client.ApiClient) -> client.AutoscalingV1Api:
    return client.AutoscalingV1Api(kube_api_client)


@pytest.fixture
def v2(kube_api_client: client.ApiClient) -> client.AutoscalingV2Api:
    return client.AutoscalingV2Api(kube_api_client)


def raw(api: Any, name: str) -> dict[str, Any]:
    response = api.read_namespaced_horizontal_pod_autoscaler(
        name, "default", _preload_content=False
    )
    body: dict[str, Any] = json.loads(response.data)
    return body


def resource_metric(name: str, target: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": name, "target": target}}


def test_a_v1_target_percentage_is_stored_as_a_v2_cpu_utilization_metric(
    v1: client.AutoscalingV1Api, v2: client.AutoscalingV2Api
) -> None:
    body = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": TARGET, "maxReplicas": 4, "targetCPUUtilizationPercentage": 70},
    }
    created = v1.create_namespaced_horizontal_pod_autoscaler("default", body)
    assert created.spec.target_cpu_utilization_percentage == 70
    assert (created.status.current_replicas, created.status.desired_replicas) == (0, 0)
    stored = raw(v2, "web")
    assert stored["apiVersion"] == "autoscaling/v2"
    assert stored["spec"]["minReplicas"] == 1
    assert stored["spec"]["metrics"] == [
        resource_metric("cpu", {"type": "Utilization", "averageUtilization": 70})
    ]
    assert stored["status"] == {"desiredReplicas": 0}


def test_a_v1_hpa_without_a_target_gets_the_default_80_percent(
    v1: client.AutoscalingV1Api, v2: client.AutoscalingV2Api
) -> None:
    body = {"metadata": {"name": "plain"}, "spec": {"scaleTargetRef": TARGET, "maxReplicas": 2}}
    v1.create_namespaced_horizontal_pod_autoscaler("default", body)
    assert raw(v1, "plain")["spec"]["targetCPUUtilizationPercentage"] == 80
    assert raw(v2, "plain")["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80


def test_what_v1_cannot_say_rides_in_annotations_and_survives_a_v1_update(
    v1: client.AutoscalingV1Api, v2: client.AutoscalingV2Api
) -> None:
    body = {
        "metadata": {"name": "mixed", "annotations": {"team": "web"}},
        "spec": {
            "scaleTargetRef": TARGET,
            "minReplicas": 2,
            "maxReplicas": 6,
            "metrics": [
                resource_metric("memory", {"type": "AverageValue", "averageValue": "200Mi"}),
                resource_metric("cpu", {"type": "Utilization", "averageUtilization": 60}),
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}},
        },
    }
    v2.create_namespaced_horizontal_pod_autoscaler("default", body)
    old = raw(v1, "mixed")
    assert old["spec"]["targetCPUUtilizationPercentage"] == 60
    annotations = old["metadata"]["annotations"]
    assert annotations["team"] == "web"
    assert json.loads(annotations[hpa_api.METRICS_ANNOTATION]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "200Mi"}}
    ]
    behavior = json.loads(annotations[hpa_api.BEHAVIOR_ANNOTATION])
    assert behavior["ScaleDown"] == {
        "StabilizationWindowSeconds": 30,
        "SelectPolicy": "Max",
        "Policies": [{"Type": "Percent", "Value": 100, "PeriodSeconds": 15}],
    }

    old["spec"]["maxReplicas"] = 9
    old["spec"]["targetCPUUtilizationPercentage"] = 55
    v1.replace_namespaced_horizontal_pod_autoscaler("mixed", "default", old)

    stored = raw(v2, "mixed")
    assert stored["spec"]["maxReplicas"] == 9
    assert stored["spec"]["metrics"] == [
        resource_metric("memory", {"type": "AverageValue", "averageValue": "200Mi"}),
        resource_metric("cpu", {"type": "Utilization", "averageUtilization": 55}),
    ]
    assert stored["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 30
    assert stored["metadata"]["annotations"] == {"team": "web"}


def test_status_written_in_v2_reads_as_v1_current_utilization_and_conditions(
    v1: client.AutoscalingV1Api, v2: client.AutoscalingV2Api
) -> None:
    body = {"metadata": {"name": "seen"}, "spec": {"scaleTargetRef": TARGET, "maxReplicas": 3}}
    v2.create_namespaced_horizontal_pod_autoscaler("default", body)
    current = raw(v2, "seen")
    condition = {
        "type": "AbleToScale",
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "ReadyForNewScale",
        "message": "recommended size matches current size",
    }
    current["status"] = {
        "currentReplicas": 2,
        "desiredReplicas": 2,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageUtilization": 65, "averageValue": "65m"},
                },
            }
        ],
        "conditions": [condition],
    }
    v2.replace_namespaced_horizontal_pod_autoscaler_status("seen", "default", current)
    seen = raw(v1, "seen")
    assert seen["status"] == {
        "currentReplicas": 2,
        "desiredReplicas": 2,
        "currentCPUUtilizationPercentage": 65,
    }
    annotations = seen["metadata"]["annotations"]
    stored_conditions = raw(v2, "seen")["status"]["conditions"]
    assert [c["reason"] for c in stored_conditions] == ["ReadyForNewScale"]
    assert json.loads(annotations[hpa_api.CONDITIONS_ANNOTATION]) == stored_conditions
    assert json.loads(annotations[hpa_api.CURRENT_METRICS_ANNOTATION]) == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "currentAverageUtilization": 65,
                "currentAverageValue": "65m",
            },
        }
    ]


def test_lists_and_watches_in_v1_carry_v1_objects(v1: client.AutoscalingV1Api) -> None:
    for name in ("a", "b"):
        v1.create_namespaced_horizontal_pod_autoscaler(
            "default",
            {
                "metadata": {"name": name},
                "spec": {
                    "scaleTargetRef": TARGET,
                    "maxReplicas": 3,
                    "targetCPUUtilizationPercentage": 40,
                },
            },
        )
    listed = v1.list_namespaced_horizontal_pod_autoscaler("default")
    assert [h.spec.target_cpu_utilization_percentage for h in listed.items] == [40, 40]
    seen = [
        event["object"]
        for event in watch.Watch().stream(
            v1.list_namespaced_horizontal_pod_autoscaler, "default", timeout_seconds=1
        )
    ]
    assert sorted(h.metadata.name for h in seen) == ["a", "b"]
    assert {h.spec.target_cpu_utilization_percentage for h in seen} == {40}


def test_replica_bounds_are_validated(v2: client.AutoscalingV2Api) -> None:
    body = {
        "metadata": {"name": "bad"},
        "spec": {"scaleTargetRef": TARGET, "minReplicas": 5, "maxReplicas": 3},
    }
    with pytest.raises(ApiException) as caught:
        v2.create_namespaced_horizontal_pod_autoscaler("default", body)
    status = json.loads(caught.value.body)
    assert status["code"] == 422
    assert status["message"] == (
        'HorizontalPodAutoscaler.autoscaling "bad" is invalid: spec.maxReplicas: Invalid value: '
        "3: must be greater than or equal to `minReplicas`"
    )


# kubectl 1.37's `autoscale deployment x --min 1 --max 5 --cpu-percent 50`, as it sent it
KUBECTL_AUTOSCALE_BODY = bytes.fromhex(
    "6b 38 73 00 0a 29 0a 0e 61 75 74 6f 73 63 61 6c"
    "69 6e 67 2f 76 32 12 17 48 6f 72 69 7a 6f 6e 74"
    "61 6c 50 6f 64 41 75 74 6f 73 63 61 6c 65 72 12"
    "5d 0a 11 0a 01 78 12 00 1a 00 22 00 2a 00 32 00"
    "38 00 42 00 12 42 0a 18 0a 0a 44 65 70 6c 6f 79"
    "6d 65 6e 74 12 01 78 1a 07 61 70 70 73 2f 76 31"
    "10 01 18 05 22 22 0a 08 52 65 73 6f 75 72 63 65"
    "22 16 0a 03 63 70 75 12 0f 0a 0b 55 74 69 6c 69"
    "7a 61 74 69 6f 6e 20 32 1a 04 18 00 20 00 1a 00"
    "22 00"
)


def test_kubectl_autoscale_protobuf_body_decodes_to_the_v2_object() -> None:
    decoded = protobuf.decode(KUBECTL_AUTOSCALE_BODY)
    assert decoded == {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "x"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "x", "apiVersion": "apps/v1"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [resource_metric("cpu", {"type": "Utilization", "averageUtilization": 50})],
        },
    }


def _pb(field: int, value: bytes | int) -> bytes:
    """One protobuf field: length-delimited bytes, or a small varint."""
    if isinstance(value, int):
        return bytes([field << 3, value])
    return bytes([field << 3 | 2, len(value)]) + value


def test_a_v1_protobuf_body_as_kubectl_falls_back_to_is_decoded_and_served_in_v2(
    kube_api_client: client.ApiClient, v2: client.AutoscalingV2Api
) -> None:
    ref = _pb(1, b"Deployment") + _pb(2, b"web") + _pb(3, b"apps/v1")
    spec = _pb(1, ref) + _pb(2, 2) + _pb(3, 4) + _pb(4, 65)
    raw_object = _pb(1, _pb(1, b"pb")) + _pb(2, spec)
    type_meta = _pb(1, b"autoscaling/v1") + _pb(2, b"HorizontalPodAutoscaler")
    body = protobuf.MAGIC + _pb(1, type_meta) + _pb(2, raw_object)
    response = kube_api_client.rest_client.pool_manager.request(
        "POST",
        kube_api_client.configuration.host
        + "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers",
        body=body,
        headers={
            "Content-Type": protobuf.CONTENT_TYPE,
            "Authorization": kube_api_client.configuration.get_api_key_with_prefix("authorization"),
        },
    )
    assert response.status == 201, response.data
    assert json.loads(response.data)["spec"]["targetCPUUtilizationPercentage"] == 65
    stored = raw(v2, "pb")["spec"]
    assert (stored["minReplicas"], stored["maxReplicas"]) == (2, 4)
    assert stored["metrics"] == [
        resource_metric("cpu", {"type": "Utilization", "averageUtilization": 65})
    ]


# --- conversion round trips --------------------------------------------------------------------

quantities = st.sampled_from(["100m", "250m", "1", "200Mi", "1Gi"])
targets = st.one_of(
    st.builds(lambda u: {"type": "Utilization", "averageUtilization": u}, st.integers(1, 200)),
    st.builds(lambda q: {"type": "AverageValue", "averageValue": q}, quantities),
)
metrics = st.lists(
    st.builds(resource_metric, st.sampled_from(["cpu", "memory"]), targets),
    min_size=1,
    max_size=4,
)
policies = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["Pods", "Percent"]),
            "value": st.integers(1, 100),
            "periodSeconds": st.integers(1, 1800),
        }
    ),
    min_size=1,
    max_size=3,
)
rules = st.fixed_dictionaries(
    {
        "stabilizationWindowSeconds": st.integers(0, 3600),
        "selectPolicy": st.sampled_from(["Max", "Min", "Disabled"]),
        "policies": policies,
    }
)
statuses = st.fixed_dictionaries(
    {"currentReplicas": st.integers(0, 50), "desiredReplicas": st.integers(0, 50)},
    optional={
        "lastScaleTime": st.just("2026-01-01T00:00:00Z"),
        "currentMetrics": st.lists(
            st.builds(
                lambda name, u, v: {
                    "type": "Resource",
                    "resource": {
                        "name": name,
                        "current": {"averageUtilization": u, "averageValue": v},
                    },
                },
                st.sampled_from(["cpu", "memory"]),
                st.integers(0, 300),
                quantities,
            ),
            min_size=1,
            max_size=3,
        ),
        "conditions": st.just(
            [
                {
                    "type": "ScalingActive",
                    "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "reason": "ValidMetricFound",
                    "message": "the HPA was able to successfully calculate a replica count",
                }
            ]
        ),
    },
)


def as_read_back_from_v1(spec_metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """v1 keeps the first cpu utilization metric in its own field and every metric that is not
    a cpu utilization in the annotation; read back, the cpu one comes last. Further cpu
    utilization metrics are lost, as upstream loses them."""
    cpu = [m for m in spec_metrics if hpa_api._is_cpu_utilization(m)]
    others = [m for m in spec_metrics if not hpa_api._is_cpu_utilization(m)]
    return others + cpu[:1]


@given(
    spec_metrics=metrics,
    minimum=st.integers(1, 5),
    behavior=st.one_of(st.none(), st.fixed_dictionaries({"scaleUp": rules, "scaleDown": rules})),
    status=statuses,
    annotations=st.dictionaries(st.sampled_from(["a", "b/c"]), st.text(max_size=5), max_size=2),
)
def test_a_v2_object_survives_the_trip_through_v1(
    spec_metrics: list[dict[str, Any]],
    minimum: int,
    behavior: dict[str, Any] | None,
    status: dict[str, Any],
    annotations: dict[str, str],
) -> None:
    metadata: dict[str, Any] = {"name": "h", "namespace": "default"}
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {
        "scaleTargetRef": TARGET,
        "minReplicas": minimum,
        "maxReplicas": 10,
        "metrics": spec_metrics,
    }
    if behavior is not None:
        spec["behavior"] = behavior
    obj = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }
    as_v1 = hpa_api.convert(obj, hpa_api.V1)
    assert as_v1["apiVersion"] == "autoscaling/v1"
    back = hpa_api.convert(as_v1, hpa_api.V2)
    expected = {**obj, "spec": {**spec, "metrics": as_read_back_from_v1(spec_metrics)}}
    assert back == expected
