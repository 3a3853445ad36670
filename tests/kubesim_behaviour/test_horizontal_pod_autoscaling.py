"""HorizontalPodAutoscalers scale Deployments and custom resources on simulated cpu usage.

Pods say what they use with the ``kubesim.spreadbus.io/cpu-usage`` annotation; here it is set in
the pod template, so every pod a scale-up adds uses the same, and a new load is a new template.
HPAs sync every 0.1 s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from kubernetes import client

from kubesim.behaviour.pod_metrics import CPU_USAGE_ANNOTATION, MEMORY_USAGE_ANNOTATION
from tests.fixtures.cluster import SimCluster, is_ready, is_terminating
from tests.kubesim_behaviour.workloads import deployment, statefulset

FAST_HPA = {"hpa_sync_period": 0.1}


def loaded_deployment(name: str, replicas: int, usage: str) -> dict[str, Any]:
    """A Deployment whose pods request 100m of cpu and use ``usage``."""
    body = deployment(name, replicas)
    body["spec"]["template"]["metadata"]["annotations"] = {CPU_USAGE_ANNOTATION: usage}
    return body


def set_usage(cluster: SimCluster, name: str, usage: str) -> None:
    patch = {"spec": {"template": {"metadata": {"annotations": {CPU_USAGE_ANNOTATION: usage}}}}}
    cluster.apps.patch_namespaced_deployment(name, "default", patch)


def hpa_v2(
    name: str, target: dict[str, str], *, minimum: int, maximum: int, utilization: int = 50
) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": target,
            "minReplicas": minimum,
            "maxReplicas": maximum,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": utilization},
                    },
                }
            ],
        },
    }


def hpa_status(cluster: SimCluster, name: str) -> dict[str, Any]:
    raw = client.AutoscalingV2Api(cluster.api_client).read_namespaced_horizontal_pod_autoscaler(
        name, "default", _preload_content=False
    )
    status: dict[str, Any] = json.loads(raw.data)["status"]
    return status


def condition(status: dict[str, Any], type_: str) -> tuple[str, str]:
    for c in status.get("conditions") or ():
        if c["type"] == type_:
            return c["status"], c["reason"]
    return ("", "")


def ready_pods(cluster: SimCluster, app: str) -> int:
    return sum(
        1 for p in cluster.pods(selector=f"app={app}") if is_ready(p) and not is_terminating(p)
    )


def wait_for_replicas(cluster: SimCluster, name: str, replicas: int) -> None:
    cluster.wait_for(
        lambda: cluster.apps.read_namespaced_deployment(name, "default").spec.replicas == replicas,
        what=f"deployment {name} scaled to {replicas}",
    )


def test_kubectl_autoscale_creates_an_hpa_readable_in_v1_and_v2(
    cluster_factory: Callable[..., SimCluster],
) -> None:
    cluster = cluster_factory(**FAST_HPA)
    cluster.apps.create_namespaced_deployment("default", loaded_deployment("web", 2, "100m"))
    cluster.kubectl("autoscale", "deployment", "web", "--min=1", "--max=3", "--cpu-percent=50")

    v1 = client.AutoscalingV1Api(cluster.api_client).read_namespaced_horizontal_pod_autoscaler(
        "web", "default"
    )
    assert (v1.spec.min_replicas, v1.spec.max_replicas) == (1, 3)
    assert v1.spec.target_cpu_utilization_percentage == 50
    assert v1.spec.scale_target_ref.to_dict() == {
        "api_version": "apps/v1",
        "kind": "Deployment",
        "name": "web",
    }
    v2 = client.AutoscalingV2Api(cluster.api_client).read_namespaced_horizontal_pod_autoscaler(
        "web", "default"
    )
    (metric,) = v2.spec.metrics
    assert (metric.type, metric.resource.name) == ("Resource", "cpu")
    assert (metric.resource.target.type, metric.resource.target.average_utilization) == (
        "Utilization",
        50,
    )

    cluster.kubectl(
        "autoscale", "deployment", "web", "--name=web-memory", "--max=3", "--memory=200Mi"
    )
    memory = client.AutoscalingV2Api(cluster.api_client).read_namespaced_horizontal_pod_autoscaler(
        "web-memory", "default"
    )
    assert memory.spec.min_replicas == 1  # the server's default
    assert memory.spec.metrics[0].resource.to_dict() == {
        "name": "memory",
        "target": {
            "type": "AverageValue",
            "average_value": "200Mi",
            "average_utilization": None,
            "value": None,
        },
    }
    client.AutoscalingV2Api(cluster.api_client).delete_namespaced_horizontal_pod_autoscaler(
        "web-memory", "default"
    )

    # 100m used of 100m requested is twice the target: 2 -> 4, capped at 3
    wait_for_replicas(cluster, "web", 3)
    cluster.wait_for(lambda: ready_pods(cluster, "web") == 3, what="three ready pods")
    status = cluster.wait_for(
        lambda: (s := hpa_status(cluster, "web")).get("currentReplicas") == 3 and s,
        what="the HPA to see three replicas",
    )
    assert condition(status, "ScalingLimited") == ("True", "TooManyReplicas")
    assert condition(status, "ScalingActive") == ("True", "ValidMetricFound")
    assert status["currentMetrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "current": {"averageUtilization": 100, "averageValue": "100m"},
            },
        }
    ]
    v1_status = (
        client.AutoscalingV1Api(cluster.api_client)
        .read_namespaced_horizontal_pod_autoscaler("web", "default")
        .status
    )
    assert v1_status.current_cpu_utilization_percentage == 100
    assert v1_status.last_scale_time is not None

    table = cluster.kubectl("get", "hpa").stdout.splitlines()
    assert table[0].split() == [
        "NAME",
        "REFERENCE",
        "TARGETS",
        "MINPODS",
        "MAXPODS",
        "REPLICAS",
        "AGE",
    ]
    assert table[1].split()[:7] == ["web", "Deployment/web", "cpu:", "100%/50%", "1", "3", "3"]
    described = cluster.kubectl("describe", "hpa", "web").stdout
    assert re.search(r"^Reference:\s+Deployment/web$", described, re.MULTILINE)
    assert re.search(r"^\s+ScalingLimited\s+True\s+TooManyReplicas\s", described, re.MULTILINE)
    assert re.search(r"Normal\s+SuccessfulRescale\s.*New size: 3;", described)


def test_a_deployment_scales_up_to_max_and_down_to_min_after_the_stabilization_window(
    cluster_factory: Callable[..., SimCluster],
) -> None:
    # the default window is an hour: a scale-down waits until the HPA's behavior shortens it
    cluster = cluster_factory(hpa_downscale_stabilization=3600, **FAST_HPA)
    cluster.apps.create_namespaced_deployment("default", loaded_deployment("api", 2, "100m"))
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}
    hpas = client.AutoscalingV2Api(cluster.api_client)
    hpas.create_namespaced_horizontal_pod_autoscaler(
        "default", hpa_v2("api", target, minimum=3, maximum=10)
    )

    # twice the target: 2 -> 4 -> 8 -> 10 (at most double, or +4, per sync; max 10)
    wait_for_replicas(cluster, "api", 10)
    status = cluster.wait_for(
        lambda: (s := hpa_status(cluster, "api")).get("desiredReplicas") == 10 and s,
        what="desired replicas 10",
    )
    assert condition(status, "ScalingLimited") == ("True", "TooManyReplicas")

    set_usage(cluster, "api", "10m")
    held = cluster.wait_for(
        lambda: (
            condition(s := hpa_status(cluster, "api"), "AbleToScale")[1] == "ScaleDownStabilized"
            and s
        ),
        what="the scale-down held by the stabilization window",
    )
    assert held["desiredReplicas"] == 10
    assert cluster.apps.read_namespaced_deployment("api", "default").spec.replicas == 10

    hpas.patch_namespaced_horizontal_pod_autoscaler(
        "api", "default", {"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 1}}}}
    )
    # 10% of the target: ceil(0.2 * 10) = 2, raised to minReplicas 3
    wait_for_replicas(cluster, "api", 3)
    status = cluster.wait_for(
        lambda: (s := hpa_status(cluster, "api")).get("desiredReplicas") == 3 and s,
        what="desired replicas 3",
    )
    assert condition(status, "ScalingLimited") == ("True", "TooFewReplicas")
    behavior = hpas.read_namespaced_horizontal_pod_autoscaler("api", "default").spec.behavior
    assert behavior.scale_down.stabilization_window_seconds == 1
    assert [p.to_dict() for p in behavior.scale_up.policies] == [
        {"type": "Pods", "value": 4, "period_seconds": 15},
        {"type": "Percent", "value": 100, "period_seconds": 15},
    ]


WIDGETS = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
            }
        ],
    },
}


def widget_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app": "gears"},
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example/gears:1",
                    "resources": {"requests": {"cpu": "100m"}},
                }
            ]
        },
    }


def test_an_hpa_scales_a_custom_resource_through_its_scale_subresource(
    cluster_factory: Callable[..., SimCluster],
) -> None:
    cluster = cluster_factory(**FAST_HPA)
    crds = client.ApiextensionsV1Api(cluster.api_client)
    crds.create_custom_resource_definition(WIDGETS)
    cluster.wait_for(
        lambda: any(
            c.type == "Established" and c.status == "True"
            for c in crds.read_custom_resource_definition("widgets.example.com").status.conditions
        ),
        what="the CRD established",
    )
    widgets = client.CustomObjectsApi(cluster.api_client)
    widgets.create_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "widgets",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "gears"},
            "spec": {"replicas": 2},
        },
    )
    # nothing runs widgets: the test plays their controller, with two pods and a status
    for i in range(2):
        cluster.core.create_namespaced_pod("default", widget_pod(f"gears-{i}"))
    widgets.patch_namespaced_custom_object_status(
        "example.com",
        "v1",
        "default",
        "widgets",
        "gears",
        {"status": {"replicas": 2, "selector": "app=gears"}},
    )
    cluster.wait_for(lambda: ready_pods(cluster, "gears") == 2, what="two ready pods")
    for i in range(2):
        cluster.set_pod_usage("default", f"gears-{i}", cpu="150m")

    target = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "gears"}
    client.AutoscalingV2Api(cluster.api_client).create_namespaced_horizontal_pod_autoscaler(
        "default", hpa_v2("gears", target, minimum=1, maximum=20)
    )

    # 150% against 50% on two pods: ceil(3 * 2) = 6, in two steps (a sync at most doubles)
    def spec_replicas() -> int:
        widget = widgets.get_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", "gears"
        )
        return int(widget["spec"]["replicas"])

    cluster.wait_for(lambda: spec_replicas() == 6, what="the widget scaled to 6")
    status = cluster.wait_for(
        lambda: (s := hpa_status(cluster, "gears")).get("currentReplicas") == 6 and s,
        what="the HPA to see 6 replicas",
    )
    assert status["desiredReplicas"] == 6
    assert condition(status, "ScalingActive") == ("True", "ValidMetricFound")
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 150
    rescales = [
        e.message
        for e in cluster.core.list_namespaced_event(
            "default", field_selector="involvedObject.name=gears,reason=SuccessfulRescale"
        ).items
    ]
    assert sorted(rescales) == [
        "New size: 4; reason: cpu resource utilization (percentage of request) above target",
        "New size: 6; reason: cpu resource utilization (percentage of request) above target",
    ]


def test_an_hpa_says_why_it_cannot_scale(cluster_factory: Callable[..., SimCluster]) -> None:
    cluster = cluster_factory(**FAST_HPA)
    hpas = client.AutoscalingV2Api(cluster.api_client)
    missing = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nowhere"}
    hpas.create_namespaced_horizontal_pod_autoscaler(
        "default", hpa_v2("lost", missing, minimum=1, maximum=3)
    )
    unknown = {"apiVersion": "example.com/v1", "kind": "Gizmo", "name": "g"}
    hpas.create_namespaced_horizontal_pod_autoscaler(
        "default", hpa_v2("odd", unknown, minimum=1, maximum=3)
    )
    body = deployment("bare", 1)
    del body["spec"]["template"]["spec"]["containers"][0]["resources"]
    cluster.apps.create_namespaced_deployment("default", body)
    bare = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "bare"}
    hpas.create_namespaced_horizontal_pod_autoscaler(
        "default", hpa_v2("bare", bare, minimum=1, maximum=3)
    )
    cluster.apps.create_namespaced_deployment("default", deployment("twin", 1))
    twin = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "twin"}
    for name in ("twin-a", "twin-b"):
        hpas.create_namespaced_horizontal_pod_autoscaler(
            "default", hpa_v2(name, twin, minimum=1, maximum=3)
        )

    def false_condition(name: str, type_: str, saying: str) -> dict[str, Any] | None:
        for c in hpa_status(cluster, name).get("conditions") or ():
            if c["type"] == type_ and c["status"] == "False" and saying in c["message"]:
                return dict(c)
        return None

    lost = cluster.wait_for(
        lambda: false_condition("lost", "AbleToScale", "not found"), what="lost: no scale"
    )
    assert lost["reason"] == "FailedGetScale"
    assert lost["message"] == (
        "the HPA controller was unable to get the target's current scale: "
        'deployments.apps "nowhere" not found'
    )
    odd = cluster.wait_for(
        lambda: false_condition("odd", "AbleToScale", "no matches"), what="odd: no kind"
    )
    assert odd["message"].endswith('no matches for kind "Gizmo" in group "example.com"')
    no_request = cluster.wait_for(
        lambda: false_condition("bare", "ScalingActive", "missing request"),
        what="bare: no cpu request",
    )
    assert no_request["reason"] == "FailedGetResourceMetric"
    assert no_request["message"].startswith(
        "the HPA was unable to compute the replica count: failed to get cpu utilization: "
        "missing request for cpu in container app of Pod bare-"
    )
    for name in ("twin-a", "twin-b"):
        ambiguous = cluster.wait_for(
            lambda name=name: false_condition(name, "ScalingActive", "multiple HPAs"),
            what=f"{name}: ambiguous selector",
        )
        assert ambiguous["reason"] == "AmbiguousSelector"
        assert ambiguous["message"] == (
            "pods by selector app=twin are controlled by multiple HPAs: "
            "[default/twin-a default/twin-b]"
        )


def test_an_average_memory_value_target_scales_a_statefulset(
    cluster_factory: Callable[..., SimCluster],
) -> None:
    cluster = cluster_factory(**FAST_HPA)
    body = statefulset("cache", 2, podManagementPolicy="Parallel")
    body["spec"]["template"]["metadata"]["annotations"] = {MEMORY_USAGE_ANNOTATION: "300Mi"}
    cluster.apps.create_namespaced_stateful_set("default", body)
    target = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "cache"}
    hpa = hpa_v2("cache", target, minimum=1, maximum=3)
    hpa["spec"]["metrics"] = [
        {
            "type": "Resource",
            "resource": {
                "name": "memory",
                "target": {"type": "AverageValue", "averageValue": "100Mi"},
            },
        }
    ]
    client.AutoscalingV2Api(cluster.api_client).create_namespaced_horizontal_pod_autoscaler(
        "default", hpa
    )

    # three times the target on two pods asks for six; maxReplicas is 3
    cluster.wait_for(
        lambda: cluster.apps.read_namespaced_stateful_set("cache", "default").spec.replicas == 3,
        what="the statefulset scaled to 3",
    )
    status = cluster.wait_for(
        lambda: (s := hpa_status(cluster, "cache")).get("currentReplicas") == 3 and s,
        what="the HPA to see 3 replicas",
    )
    # upstream prints the mean as a plain decimal quantity: 300Mi is 314572800
    assert status["currentMetrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "memory", "current": {"averageValue": "314572800"}},
        }
    ]
    row = cluster.kubectl("get", "hpa", "cache").stdout.splitlines()[1].split()
    assert row[:4] == ["cache", "StatefulSet/cache", "memory:", "314572800/100Mi"]
