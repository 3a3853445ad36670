"""PriorityClasses, pod priority and preemption on a running kubesim, over HTTP with the
official client: a high-priority Deployment takes the node a low-priority one fills, as
kube-scheduler's preemption makes room, and the low-priority pods wait."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.fixtures.cluster import SimCluster, is_ready

ONE_NODE = {"name": "one", "groups": [{
    "name": "one", "count": 1, "labels": {"topology.kubernetes.io/zone": "zone-a"},
    "allocatable": {"cpu": "1", "memory": "8Gi", "pods": 110}}]}


@pytest.fixture
def one_node(cluster_factory: Callable[..., SimCluster], tmp_path: Path) -> SimCluster:
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(ONE_NODE))
    return cluster_factory(topology=str(path))


def priority_class(name: str, value: int, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, **fields}


def deployment(name: str, replicas: int, cpu: str, priority_class_name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"priorityClassName": priority_class_name,
                                           "containers": [{
                                               "name": "main", "image": "nginx:alpine",
                                               "resources": {"requests": {"cpu": cpu}}}]}}}}


def test_priority_classes_are_served_validated_and_resolved_into_pods(one_node: SimCluster) -> None:
    scheduling = client.SchedulingV1Api(one_node.api_client)
    scheduling.create_priority_class(priority_class("high", 1000, globalDefault=False))
    stored = scheduling.read_priority_class("high")
    assert (stored.value, stored.preemption_policy) == (1000, "PreemptLowerPriority")
    scheduling.create_priority_class(
        priority_class("fallback", 7, globalDefault=True, preemptionPolicy="Never"))

    with pytest.raises(ApiException) as refused:
        scheduling.create_priority_class(priority_class("huge", 2_000_000_000))
    assert refused.value.status == 422
    assert "maximum allowed value of a user defined priority is 1000000000" in refused.value.body
    with pytest.raises(ApiException) as refused:
        scheduling.create_priority_class(priority_class("second", 1, globalDefault=True))
    assert refused.value.status == 403
    assert "PriorityClass fallback is already marked as default" in refused.value.body
    with pytest.raises(ApiException) as refused:
        scheduling.patch_priority_class("high", {"value": 5})
    assert refused.value.status == 422
    assert "value: Forbidden" in refused.value.body

    for bad, field in (({"value": "high"}, "value"), ({"preemptionPolicy": "Sometimes"},
                                                      "preemptionPolicy"),
                       ({"globalDefault": "yes"}, "globalDefault")):
        refused_class = one_node.kubectl("create", "-f", "-", check=False, stdin=yaml.safe_dump(
            {**priority_class("bad", 1), **bad}))
        assert refused_class.returncode != 0
        assert f'The PriorityClass "bad" is invalid: {field}: ' in (
            refused_class.stderr), refused_class.stderr
    table = one_node.kubectl("get", "pc").stdout.split("\n")
    assert table[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    assert [line.split()[:3] + line.split()[4:] for line in table[1:] if line] == [
        ["fallback", "7", "true", "Never"], ["high", "1000", "false", "PreemptLowerPriority"]]

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"priorityClassName": "high",
                    "containers": [{"name": "c", "image": "nginx:alpine"}]}}
    created = one_node.core.create_namespaced_pod("default", pod)
    assert (created.spec.priority, created.spec.preemption_policy) == (1000, "PreemptLowerPriority")
    # An update that leaves the resolved fields out keeps them, as the admission plugin does.
    unscheduled = one_node.core.create_namespaced_pod("default", {
        **pod, "metadata": {"name": "held"},
        "spec": {**pod["spec"], "schedulerName": "nobody"}})  # no component writes it
    body = one_node.api_client.sanitize_for_serialization(unscheduled)
    del body["spec"]["priority"], body["spec"]["preemptionPolicy"]
    replaced = one_node.core.replace_namespaced_pod("held", "default", body)
    assert (replaced.spec.priority, replaced.spec.preemption_policy) == (
        1000, "PreemptLowerPriority")
    plain = one_node.core.create_namespaced_pod("default", {
        **pod, "metadata": {"name": "plain"}, "spec": {"containers": pod["spec"]["containers"]}})
    assert (plain.spec.priority_class_name, plain.spec.priority,
            plain.spec.preemption_policy) == ("fallback", 7, "Never")

    with pytest.raises(ApiException) as refused:
        one_node.core.create_namespaced_pod("default", {
            **pod, "metadata": {"name": "q"},
            "spec": {**pod["spec"], "priorityClassName": "missing"}})
    assert refused.value.status == 403
    body = yaml.safe_load(refused.value.body)
    assert body["message"] == 'pods "q" is forbidden: no PriorityClass with name missing was found'
    assert body["details"]["causes"][0]["field"] == "spec.priorityClassName"
    with pytest.raises(ApiException) as refused:
        one_node.core.create_namespaced_pod("default", {
            **pod, "metadata": {"name": "r"}, "spec": {**pod["spec"], "priority": 3}})
    assert refused.value.status == 403
    assert "the integer value of priority (3)" in refused.value.body


def test_a_high_priority_deployment_preempts_the_low_priority_pods_in_its_way(
    one_node: SimCluster,
) -> None:
    scheduling = client.SchedulingV1Api(one_node.api_client)
    scheduling.create_priority_class(priority_class("low", 10))
    scheduling.create_priority_class(priority_class("high", 1000))
    one_node.apps.create_namespaced_deployment("default", deployment("low", 3, "300m", "low"))
    one_node.wait_for(lambda: sum(is_ready(p) for p in one_node.pods(selector="app=low")) == 3,
                      what="3 low-priority pods ready")
    before = {p["metadata"]["name"] for p in one_node.pods(selector="app=low")}

    one_node.apps.create_namespaced_deployment("default", deployment("high", 1, "500m", "high"))
    one_node.wait_for(lambda: [p for p in one_node.pods(selector="app=high") if is_ready(p)],
                      what="the high-priority pod running")
    # 1 cpu: the high pod's 500m leaves room for one low pod of 300m; the two others were
    # preempted and their replacements wait, unschedulable, preempting nothing.
    low = one_node.wait_for(
        lambda: (pods := one_node.pods(selector="app=low")) and len(
            [p for p in pods if not p["metadata"].get("deletionTimestamp")]) == 3 and pods,
        what="the low-priority Deployment's pods replaced")
    running = [p for p in low if p["spec"].get("nodeName")]
    assert len(running) == 1
    assert running[0]["metadata"]["name"] in before
    pending = [p for p in low if not p["spec"].get("nodeName")]
    assert len(pending) == 2
    assert not {p["metadata"]["name"] for p in pending} & before
    for waiting in pending:
        condition = one_node.wait_for(
            lambda w=waiting: next((c for c in (one_node.core.read_namespaced_pod(
                w["metadata"]["name"], "default").status.conditions or ())
                if c.type == "PodScheduled" and c.status == "False"), None),
            what="the replacement's PodScheduled=False")
        assert condition.reason == "Unschedulable"
        assert condition.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    (high,) = one_node.pods(selector="app=high")
    assert high["spec"]["nodeName"] == "one-1"
    events = one_node.core.list_namespaced_event(
        "default", field_selector="reason=Preempted").items
    assert len(events) == 2
    assert {e.involved_object.name for e in events} == before - {running[0]["metadata"]["name"]}
    assert all(e.message == f"Preempted by pod {high['metadata']['uid']} on node one-1"
               for e in events)

    # The high-priority workload goes: the low one gets its room back.
    one_node.apps.delete_namespaced_deployment("high", "default")
    one_node.wait_for(lambda: sum(is_ready(p) for p in one_node.pods(selector="app=low")) == 3,
                      what="3 low-priority pods ready again", timeout=30)
