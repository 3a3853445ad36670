"""HorizontalPodAutoscalers scale Kruise's CloneSet and Advanced StatefulSet like any workload.

The HPA controller knows neither kind: it finds them through discovery and reads and writes
their ``scale`` subresource, whose selector is the workload's ``status.labelSelector``. Each
scenario loads the pods through the template's ``kubesim.spreadbus.io/cpu-usage`` annotation
(100m used of 100m requested, twice a 50% target), so every pod a scale-up adds is loaded
alike; then idles the pods it ended with by annotating each, so the workload's template, and
with it the pods, stay as they are. The scale-down is first seen held by the stabilization
window, then happens: for the HPA kubectl creates, once the cluster's window of a few seconds
has passed (the window of an HPA without ``behavior``); for the v2 ones, on an hour's window,
once the HPA's own ``behavior`` shortens it. HPAs sync every 0.1 s.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from kubesim.behaviour.pod_metrics import CPU_USAGE_ANNOTATION
from tests.fixtures.cluster import SimCluster, is_ready, is_terminating
from tests.kubesim_behaviour.test_horizontal_pod_autoscaling import (
    FAST_HPA,
    condition,
    hpa_status,
    hpa_v2,
)
from tests.kubesim_behaviour.workloads import advanced_statefulset, cloneset

HELD = {"hpa_downscale_stabilization": 3600, **FAST_HPA}
"""The upstream default window is five minutes; an hour holds until the HPA shortens it."""
SHORT = {"hpa_downscale_stabilization": 5, **FAST_HPA}
"""Long enough for the hold to be seen, short enough to wait out."""


@dataclass(frozen=True)
class Workload:
    """A Kruise workload as the HPA's ``scaleTargetRef`` names it and the API serves it."""

    api_version: str
    kind: str
    plural: str
    name: str

    @property
    def ref(self) -> dict[str, str]:
        return {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}

    def create(self, cluster: SimCluster, body: dict[str, Any]) -> None:
        group, version = self.api_version.split("/")
        custom: Any = client.CustomObjectsApi(cluster.api_client)
        custom.create_namespaced_custom_object(group, version, "default", self.plural, body)

    def replicas(self, cluster: SimCluster) -> int:
        group, version = self.api_version.split("/")
        custom: Any = client.CustomObjectsApi(cluster.api_client)
        found = custom.get_namespaced_custom_object(
            group, version, "default", self.plural, self.name
        )
        return int(found["spec"]["replicas"])


CLONESET = Workload("apps.kruise.io/v1alpha1", "CloneSet", "clonesets", "web")
ADVANCED_STATEFULSET = Workload("apps.kruise.io/v1beta1", "StatefulSet", "statefulsets", "db")


def loaded(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with pods that use all of the 100m of cpu they request."""
    body["spec"]["template"]["metadata"]["annotations"] = {CPU_USAGE_ANNOTATION: "100m"}
    return body


def ready_pods(cluster: SimCluster, app: str) -> list[str]:
    return sorted(
        p["metadata"]["name"]
        for p in cluster.pods(selector=f"app={app}")
        if is_ready(p) and not is_terminating(p)
    )


def scaled_to(cluster: SimCluster, workload: Workload, replicas: int) -> list[str]:
    """The workload's ready pods, once it asks for ``replicas`` and has exactly that many."""

    def reached() -> list[str] | None:
        pods = ready_pods(cluster, workload.name)
        live = [p for p in cluster.pods(selector=f"app={workload.name}") if not is_terminating(p)]
        done = workload.replicas(cluster) == replicas and len(pods) == len(live) == replicas
        return pods if done else None

    return cluster.wait_for(
        reached, timeout=60, what=f"{workload.kind} {workload.name} at {replicas} ready pods"
    )


def rescales(cluster: SimCluster, hpa: str) -> list[str]:
    return sorted(
        str(e.message)
        for e in cluster.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={hpa},reason=SuccessfulRescale"
        ).items
    )


def scale_up_then_down(
    cluster: SimCluster,
    workload: Workload,
    hpa: str,
    *,
    steps: list[int],
    floor: int,
    shorten_window: bool,
) -> None:
    """Loaded pods scale ``workload`` through ``steps``, one rescale each; idle, it drops to
    ``floor`` once the window has passed, or has been shortened if ``shorten_window``."""
    hpas = client.AutoscalingV2Api(cluster.api_client)
    scaled_to(cluster, workload, steps[-1])
    status = cluster.wait_for(
        lambda: (s := hpa_status(cluster, hpa)).get("currentReplicas") == steps[-1] and s,
        timeout=60,
        what=f"the HPA to see {steps[-1]} replicas",
    )
    assert status["desiredReplicas"] == steps[-1]
    assert condition(status, "ScalingActive") == ("True", "ValidMetricFound")
    assert condition(status, "ScalingLimited") == ("True", "TooManyReplicas")
    assert status["currentMetrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "current": {"averageUtilization": 100, "averageValue": "100m"},
            },
        }
    ]
    reason = "cpu resource utilization (percentage of request) above target"
    up = [m for m in rescales(cluster, hpa) if m.endswith(f"; reason: {reason}")]
    sizes = sorted(int(m.removeprefix("New size: ").partition(";")[0]) for m in up)
    assert len(up) == len(sizes) == len(set(sizes)), up
    if sizes != steps:
        # A loaded host can make a sync count fewer ready pods than the quiet one does: the
        # HPA then climbs in smaller steps, each within its scale-up limit, to the same end.
        assert sizes[-1] == steps[-1], up
        assert sizes[0] <= steps[0], up
        for before, after in itertools.pairwise(sizes):
            assert after <= max(2 * before, before + 4), up

    for pod in scaled_to(cluster, workload, steps[-1]):
        cluster.set_pod_usage("default", pod, cpu="0")

    def held() -> dict[str, Any] | None:
        status = hpa_status(cluster, hpa)
        idle = [m["resource"]["current"].get("averageUtilization")
                for m in status.get("currentMetrics") or ()] == [0]
        stabilized = condition(status, "AbleToScale")[1] == "ScaleDownStabilized"
        return status if idle and stabilized else None

    status = cluster.wait_for(
        held, timeout=60, what="the idle pods' scale-down held by the stabilization window"
    )
    assert status["desiredReplicas"] == steps[-1]
    assert workload.replicas(cluster) == steps[-1]

    if shorten_window:
        patch = {"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 1}}}}
        hpas.patch_namespaced_horizontal_pod_autoscaler(hpa, "default", patch)
    scaled_to(cluster, workload, floor)
    status = cluster.wait_for(
        lambda: (s := hpa_status(cluster, hpa)).get("currentReplicas") == floor and s,
        timeout=60,
        what=f"the HPA to see {floor} replicas",
    )
    assert status["desiredReplicas"] == floor
    assert condition(status, "ScalingLimited") == ("True", "TooFewReplicas")
    assert f"New size: {floor}; reason: All metrics below target" in rescales(cluster, hpa)


def test_kubectl_autoscale_scales_a_cloneset_up_on_load_and_down_once_idle(
    cluster_factory: Callable[..., SimCluster],
) -> None:
    cluster = cluster_factory(**SHORT)
    CLONESET.create(cluster, loaded(cloneset("web", 2)))
    scaled_to(cluster, CLONESET, 2)
    cluster.kubectl("autoscale", "cloneset", "web", "--min", "1", "--max", "6",
                    "--cpu-percent", "50")

    v1 = client.AutoscalingV1Api(cluster.api_client).read_namespaced_horizontal_pod_autoscaler(
        "web", "default"
    )
    assert v1.spec.scale_target_ref.to_dict() == {
        "api_version": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "name": "web",
    }
    assert (v1.spec.min_replicas, v1.spec.max_replicas) == (1, 6)
    assert v1.spec.target_cpu_utilization_percentage == 50

    # twice the target: 2 -> 4 (a sync at most doubles), then 6 (the maximum)
    scale_up_then_down(cluster, CLONESET, "web", steps=[4, 6], floor=1, shorten_window=False)
    v2 = client.AutoscalingV2Api(cluster.api_client).read_namespaced_horizontal_pod_autoscaler(
        "web", "default"
    )
    assert v2.spec.behavior is None, "the cluster's window held it, not the HPA's own"
    row = cluster.kubectl("get", "hpa", "web").stdout.splitlines()[1].split()
    assert row[:7] == ["web", "CloneSet/web", "cpu:", "0%/50%", "1", "6", "1"]
    described = cluster.kubectl("describe", "hpa", "web").stdout
    assert re.search(r"^Reference:\s+CloneSet/web$", described, re.MULTILINE)


def test_a_v2_hpa_scales_a_cloneset_up_to_max_and_down_to_min(
    cluster_factory: Callable[..., SimCluster],
) -> None:
    cluster = cluster_factory(**HELD)
    CLONESET.create(cluster, loaded(cloneset("web", 2)))
    scaled_to(cluster, CLONESET, 2)
    hpas: Any = client.AutoscalingV2Api(cluster.api_client)
    hpas.create_namespaced_horizontal_pod_autoscaler(
        "default", hpa_v2("web", CLONESET.ref, minimum=2, maximum=10)
    )

    # twice the target: 2 -> 4 -> 8 -> 10 (at most double, or +4, per sync; max 10)
    scale_up_then_down(cluster, CLONESET, "web", steps=[4, 8, 10], floor=2, shorten_window=True)
    scale: Any = client.CustomObjectsApi(cluster.api_client).get_namespaced_custom_object_scale(
        "apps.kruise.io", "v1alpha1", "default", "clonesets", "web"
    )
    assert scale["status"] == {"replicas": 2, "selector": "app=web"}


def test_a_v2_hpa_scales_an_advanced_statefulset_through_its_scale_subresource(
    cluster_factory: Callable[..., SimCluster],
) -> None:
    cluster = cluster_factory(**HELD)
    ADVANCED_STATEFULSET.create(
        cluster, loaded(advanced_statefulset("db", 2, podManagementPolicy="Parallel"))
    )
    scaled_to(cluster, ADVANCED_STATEFULSET, 2)
    hpas: Any = client.AutoscalingV2Api(cluster.api_client)
    hpas.create_namespaced_horizontal_pod_autoscaler(
        "default", hpa_v2("db", ADVANCED_STATEFULSET.ref, minimum=1, maximum=5)
    )

    # 2 -> 4 -> 5 (the maximum); idle, down to 1, removing the highest ordinals
    scale_up_then_down(
        cluster, ADVANCED_STATEFULSET, "db", steps=[4, 5], floor=1, shorten_window=True
    )
    assert ready_pods(cluster, "db") == ["db-0"]
    row = cluster.kubectl("get", "hpa", "db").stdout.splitlines()[1].split()
    assert row[:2] == ["db", "StatefulSet/db"]
