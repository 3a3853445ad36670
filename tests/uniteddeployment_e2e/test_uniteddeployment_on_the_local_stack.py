"""UnitedDeployments on the local stack: kubectl and an HPA drive them, the planner places them.

One stack (kubesim's ``seed-examples`` topology: nodes labelled ``node=zone-a|b|c`` and
``node.kubernetes.io/pool=fixed|elastic``) for the module; each test deletes what it made.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.examples.manifests import EXAMPLES
from tests.uniteddeployment_e2e.united import SUBSET_LABEL, Stack, subset, term, united
from tests.workloadspread_e2e.stack import running_stack, wait_for

pytestmark = pytest.mark.e2e
UNITED = EXAMPLES / "uniteddeployment"
POOL = "node.kubernetes.io/pool"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("ud-stack")
    with running_stack(data_dir, "seed-examples", {}) as (_, api):
        yield Stack(api, data_dir / "kubeconfig")


def test_the_seed_sample_runs_1_3_and_2_pods_in_the_three_zones_and_scales(
    stack: Stack,
) -> None:
    stack.kubectl("apply", "-f", str(UNITED / "statefulset-three-zones.yaml"))
    try:
        stack.settled("sample", "node", {("subset-a", "zone-a"): 1, ("subset-b", "zone-b"): 3,
                                         ("subset-c", "zone-c"): 2})

        def columns() -> dict[str, str] | None:
            header, row = stack.kubectl("get", "ud", "sample-ud").splitlines()
            shown = dict(zip(header.split(), row.split(), strict=True))
            return shown if shown["READY"] == "6" else None

        shown = wait_for("kubectl get ud to show 6 ready", columns, 30)
        assert list(shown) == ["NAME", "DESIRED", "CURRENT", "UPDATED", "READY", "AGE"]
        assert [shown[k] for k in ("DESIRED", "CURRENT", "UPDATED")] == ["6", "6", "6"]

        stack.kubectl("scale", "ud", "sample-ud", "--replicas=8")
        stack.settled("sample", "node", {("subset-a", "zone-a"): 1, ("subset-b", "zone-b"): 4,
                                         ("subset-c", "zone-c"): 3})
        assert stack.subset_replicas("sample-ud") == {"subset-a": 1, "subset-b": 4,
                                                      "subset-c": 3}
    finally:
        stack.delete_ud("sample-ud")


def test_the_max_replicas_example_fills_in_order_and_drains_in_reverse(stack: Stack) -> None:
    stack.kubectl("apply", "-f", str(UNITED / "cloneset-max-replicas.yaml"))
    try:
        steps = [
            (3, {"normal-nodes": 3, "elastic-nodes": 0}),
            (5, {"normal-nodes": 4, "elastic-nodes": 1}),
            (9, {"normal-nodes": 4, "elastic-nodes": 5}),
            (2, {"normal-nodes": 2, "elastic-nodes": 0}),
        ]
        for replicas, wanted in steps:
            stack.kubectl("scale", "ud", "sample-ud", f"--replicas={replicas}")
            stack.settled("sample", POOL, {
                k: v for k, v in {("normal-nodes", "fixed"): wanted["normal-nodes"],
                                  ("elastic-nodes", "elastic"): wanted["elastic-nodes"]}.items()
                if v
            })
            assert stack.subset_replicas("sample-ud") == wanted
    finally:
        stack.delete_ud("sample-ud")


def test_an_hpa_on_the_ud_changes_its_replicas_and_so_its_subset_workloads(
    stack: Stack,
) -> None:
    ud = united("hpa-ud", 5, [subset("a", term("node", "zone-a")),
                              subset("b", term("node", "zone-b"))])
    stack.apply(ud)
    hpa = {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "example-hpa", "namespace": "default"},
        "spec": {"minReplicas": 1, "maxReplicas": 3,
                 "metrics": [{"type": "Resource", "resource": {
                     "name": "cpu", "target": {"type": "Utilization",
                                               "averageUtilization": 2}}}],
                 "scaleTargetRef": {"apiVersion": "apps.kruise.io/v1alpha1",
                                    "kind": "UnitedDeployment", "name": "hpa-ud"}},
    }
    try:
        # The odd replica goes to one of the two subsets (Kruise: the later name on a tie).
        stack.settled("hpa-ud", "node", {("a", "zone-a"): 2, ("b", "zone-b"): 3})
        assert stack.get_ud("hpa-ud")["status"]["labelSelector"] == "app=hpa-ud"
        stack.apply(hpa)
        wait_for("the HPA to scale the UD to its maximum",
                 lambda: stack.get_ud("hpa-ud")["spec"]["replicas"] == 3, 60,
                 lambda: stack.get_ud("hpa-ud")["spec"]["replicas"])
        wait_for("the subset workloads to follow",
                 lambda: sum(stack.subset_replicas("hpa-ud").values()) == 3, 30,
                 lambda: stack.subset_replicas("hpa-ud"))
        running = stack.placement("hpa-ud", "node")
        wait_for("3 pods", lambda: sum(stack.placement("hpa-ud", "node").values()) == 3
                 and len(stack.pods("hpa-ud")) == 3, 60, lambda: running)
    finally:
        stack.kubectl("delete", "hpa", "example-hpa", "--ignore-not-found")
        stack.delete_ud("hpa-ud")


def images(stack: Stack, app: str) -> dict[str, str]:
    """Pod name -> the image of its container."""
    return {p.metadata.name: p.spec.containers[0].image for p in stack.pods(app)}


def test_a_manual_canary_updates_exactly_the_pods_its_partitions_allow(stack: Stack) -> None:
    subsets = [subset(n, term("node", f"zone-{n}"), replicas=2) for n in "abc"]
    ud = united("canary", 6, subsets, template="statefulSetTemplate", image="nginx:1")
    stack.apply(ud)
    try:
        stack.settled("canary", "node", {("a", "zone-a"): 2, ("b", "zone-b"): 2,
                                         ("c", "zone-c"): 2})
        pods = stack.pods("canary")
        workload_of = {p.metadata.labels[SUBSET_LABEL]: p.metadata.name.rsplit("-", 1)[0]
                       for p in pods}
        template = ud["spec"]["template"]["statefulSetTemplate"]
        template["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
        stack.patch_ud("canary", {"spec": {
            "template": ud["spec"]["template"],
            "updateStrategy": {"type": "Manual",
                               "manualUpdate": {"partitions": {"a": 2, "b": 1, "c": 0}}},
        }})
        wanted = {
            f"{workload_of['a']}-0": "nginx:1", f"{workload_of['a']}-1": "nginx:1",
            f"{workload_of['b']}-0": "nginx:1", f"{workload_of['b']}-1": "nginx:2",
            f"{workload_of['c']}-0": "nginx:2", f"{workload_of['c']}-1": "nginx:2",
        }

        def updated() -> bool:
            running = all(p.status.phase == "Running" for p in stack.pods("canary"))
            return running and images(stack, "canary") == wanted

        wait_for("the partitions' pods to be updated", updated, 90,
                 lambda: images(stack, "canary"))
        time.sleep(3)
        assert images(stack, "canary") == wanted, "nothing beyond the partitions moves"
        status = stack.get_ud("canary")["status"]
        assert status["updateStatus"]["currentPartitions"] == {"a": 2, "b": 1, "c": 0}
        assert status["updatedReplicas"] == 3
    finally:
        stack.delete_ud("canary")


def blocker(replicas: int) -> dict[str, Any]:
    """Pods that fill zone-a's nodes (8 CPUs each) so nothing else schedules there."""
    labels = {"app": "blocker"}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "blocker", "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {
                     "nodeSelector": {"node": "zone-a"},
                     "containers": [{"name": "main", "image": "pause",
                                     "resources": {"requests": {"cpu": "7"}}}]}}},
    }


def adaptive_ud(name: str, *, reserve: bool, critical: int, window: int) -> dict[str, Any]:
    """3 replicas filling zone-a first (at most 3), then zone-b; each pod asks for 2 CPUs."""
    ud = united(name, 3, [subset("a", term("node", "zone-a"), maxReplicas=3),
                          subset("b", term("node", "zone-b"))], cpu="2")
    adaptive: dict[str, Any] = {"rescheduleCriticalSeconds": critical,
                                "unschedulableDuration": window}
    if reserve:
        adaptive["reserveUnschedulablePods"] = True
    ud["spec"]["topology"]["scheduleStrategy"] = {"type": "Adaptive", "adaptive": adaptive}
    return ud


def first_created(stack: Stack, app: str, subset_name: str) -> datetime | None:
    stamps = [p.metadata.creation_timestamp for p in stack.pods(app)
              if p.metadata.labels.get(SUBSET_LABEL) == subset_name]
    return min(stamps) if stamps else None


def schedulable(stack: Stack, name: str, subset_name: str) -> list[str]:
    statuses = stack.get_ud(name)["status"].get("subsetStatuses") or []
    return [c["status"] for s in statuses if s["name"] == subset_name
            for c in s.get("conditions") or () if c["type"] == "Schedulable"]


def test_adaptive_moves_stuck_pods_to_the_next_subset_and_opens_it_again_after_the_window(
    stack: Stack,
) -> None:
    critical, window = 2, 12
    stack.apply(blocker(2))
    stack.settled("blocker", "node", {("?", "zone-a"): 2})
    try:
        stack.apply(adaptive_ud("adaptive", reserve=False, critical=critical, window=window))
        created = wait_for("subset a's pods", lambda: first_created(stack, "adaptive", "a"), 30)
        stack.settled("adaptive", "node", {("b", "zone-b"): 3}, timeout=critical + 30)
        moved = datetime.now(UTC)
        # creationTimestamp has second precision: one more second of slack.
        assert (moved - created).total_seconds() <= critical + 5 + 1
        # The status that says so may trail the pods it moved by a planner round.
        wait_for("subset a marked unschedulable",
                 lambda: schedulable(stack, "adaptive", "a") == ["False"], 30,
                 lambda: schedulable(stack, "adaptive", "a"))

        stack.kubectl("delete", "deployment", "blocker", "--wait=false")
        stack.settled("blocker", "node", {})
        time.sleep(2)
        assert schedulable(stack, "adaptive", "a") == ["False"], "closed for its window"
        wait_for("subset a to be schedulable again after the window",
                 lambda: schedulable(stack, "adaptive", "a") == ["True"], window + 10,
                 lambda: schedulable(stack, "adaptive", "a"))
        assert (datetime.now(UTC) - moved).total_seconds() >= window - critical - 5 - 1
        # Running pods are kept where they run (Kruise); new replicas fill subset a first again.
        stack.kubectl("scale", "ud", "adaptive", "--replicas=5")
        stack.settled("adaptive", "node", {("a", "zone-a"): 2, ("b", "zone-b"): 3})
    finally:
        stack.kubectl("delete", "deployment", "blocker", "--ignore-not-found", "--wait=false")
        stack.delete_ud("adaptive")


def test_reserved_pods_get_substitutes_next_door_and_take_their_place_back(
    stack: Stack,
) -> None:
    critical, window = 2, 6
    stack.apply(blocker(2))
    stack.settled("blocker", "node", {("?", "zone-a"): 2})
    try:
        stack.apply(adaptive_ud("reserving", reserve=True, critical=critical, window=window))
        # The reserved pods stay, pending, beside their running substitutes.
        wait_for("3 substitutes running in zone-b",
                 lambda: stack.placement("reserving", "node") == {("b", "zone-b"): 3}
                 and len(stack.pods("reserving")) == 6, critical + 30,
                 lambda: stack.placement("reserving", "node"))
        pending = [p for p in stack.pods("reserving") if p.status.phase == "Pending"]
        assert {p.metadata.labels[SUBSET_LABEL] for p in pending} == {"a"}
        reserved = "apps.kruise.io/united-deployment-reserved-pod"
        wait_for("the pending pods to be labelled reserved",
                 lambda: {p.metadata.labels.get(reserved) for p in stack.pods("reserving")
                          if p.metadata.labels.get(SUBSET_LABEL) == "a"} == {"true"}, 30)

        stack.kubectl("delete", "deployment", "blocker", "--wait=false")
        wait_for("the reserved pods to run in zone-a",
                 lambda: stack.placement("reserving", "node")[("a", "zone-a")] == 3, 60,
                 lambda: stack.placement("reserving", "node"))
        running = datetime.now(UTC)
        assert stack.placement("reserving", "node")[("b", "zone-b")] == 3, (
            "the substitutes stay until the reserved pods have been Ready for the window"
        )
        stack.settled("reserving", "node", {("a", "zone-a"): 3}, timeout=window + 60)
        assert (datetime.now(UTC) - running).total_seconds() >= window - 2
    finally:
        stack.kubectl("delete", "deployment", "blocker", "--ignore-not-found", "--wait=false")
        stack.delete_ud("reserving")


def test_a_ud_sample_status_is_what_kubectl_shows_as_json(stack: Stack) -> None:
    ud = united("shown", 2, [subset("a", term("node", "zone-a"))])
    stack.apply(ud)
    try:
        stack.settled("shown", "node", {("a", "zone-a"): 2})

        def listed() -> dict[str, Any] | None:
            """The UD as `kubectl get ud -o json` lists it, once its status counts the pods
            (written after them: it may trail the placement by a planner round)."""
            items = json.loads(stack.kubectl("get", "ud", "-o", "json"))["items"]
            (ud,) = [u for u in items if u["metadata"]["name"] == "shown"]
            found: dict[str, Any] = ud
            return found if found.get("status", {}).get("readyReplicas") == 2 else None

        shown = wait_for("the status to count both pods", listed, 30)
        assert shown["status"]["subsetReplicas"] == {"a": 2}
        assert shown["status"]["observedGeneration"] == shown["metadata"]["generation"]
    finally:
        stack.delete_ud("shown")


def test_a_workloadrebalancer_moves_an_adaptive_ud_to_its_fresh_placement(stack: Stack) -> None:
    """Adaptive keeps running pods where they run: a raised maxReplicas moves nothing by itself,
    and a WorkloadRebalancer naming the UD moves it, step by step, to the placement it would get
    if created now; the UD records the request as handled."""
    ud = united("rebalanced", 4, [subset("a", term("node", "zone-a"), maxReplicas=2),
                                  subset("b", term("node", "zone-b"))])
    ud["spec"]["topology"]["scheduleStrategy"] = {"type": "Adaptive"}
    stack.apply(ud)
    rebalancer = {
        "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
        "metadata": {"name": "back-to-a"},
        "spec": {"workloads": [{"apiVersion": "apps.kruise.io/v1alpha1",
                                "kind": "UnitedDeployment", "name": "rebalanced",
                                "namespace": "default"}]},
    }
    try:
        stack.settled("rebalanced", "node", {("a", "zone-a"): 2, ("b", "zone-b"): 2})
        subsets = stack.get_ud("rebalanced")["spec"]["topology"]["subsets"]
        subsets[0]["maxReplicas"] = 4
        stack.patch_ud("rebalanced", {"spec": {"topology": {"subsets": subsets}}})
        time.sleep(3)
        assert stack.placement("rebalanced", "node") == {("a", "zone-a"): 2, ("b", "zone-b"): 2}

        stack.apply(rebalancer)
        stack.settled("rebalanced", "node", {("a", "zone-a"): 4})
        uid = json.loads(stack.kubectl("get", "workloadrebalancer", "back-to-a", "-o",
                                       "json"))["metadata"]["uid"]
        wait_for("the request to be handled", lambda: (stack.get_ud("rebalanced")["metadata"]
                 .get("annotations") or {}).get("rebalance.spreadbus.io/handled") == uid, 30,
                 lambda: stack.get_ud("rebalanced")["metadata"].get("annotations"))
    finally:
        stack.kubectl("delete", "workloadrebalancer", "back-to-a", "--ignore-not-found",
                      "--wait=false")
        stack.delete_ud("rebalanced")
