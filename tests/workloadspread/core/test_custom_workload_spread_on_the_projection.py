"""A WorkloadSpread targeting a whitelisted custom workload, planned on the planner's projection.

The rule follows the same kind table as the watcher and the webhook: a whitelisted kind's replicas
(its ``replicasPath``) drive percentages and its pods are counted; a kind nobody streams is not
planned at all rather than written with every subset at zero.
"""

from __future__ import annotations

import json
from typing import Any

from events import codec, subjects
from events.messages import Observation
from spreadbus.features.workloadspread.core.custom_workloads import parse_whitelist
from spreadbus.features.workloadspread.core.workload_kinds import default_plural
from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired

T0 = 1_800_000_000.0
MATCHED = "apps.kruise.io/matched-workloadspread"
WHITELIST = parse_whitelist(json.dumps({"workloads": [
    {"Group": "kubeflow.org", "Version": "v1", "Kind": "TFJob",
     "replicasPath": "spec.tfReplicaSpecs.Worker.replicas"},
]}))


def observe(view: KubeProjection, seq: int, obj: dict[str, Any]) -> None:
    api_version = obj["apiVersion"]
    group = api_version.split("/")[0] if "/" in api_version else ""
    resource = default_plural(obj["kind"])
    meta = obj["metadata"]
    meta["resourceVersion"] = str(seq)
    message = Observation(cluster="c1", group=group, version=api_version.split("/")[-1],
                          resource=resource, event="MODIFIED", object=obj)
    view.apply(seq, subjects.observation("c1", group, resource, meta.get("namespace", ""),
                                         meta["name"]), codec.encode(message))


def tfjob(kind: str = "TFJob", workers: int = 4) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": kind,
            "metadata": {"name": "train", "namespace": "ml", "uid": "job-uid"},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers}}}}


def spread(kind: str = "TFJob") -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "ml", "uid": "ws-uid", "generation": 1},
            "spec": {"targetRef": {"apiVersion": "kubeflow.org/v1", "kind": kind,
                                   "name": "train"},
                     "subsets": [{"name": "a", "maxReplicas": "50%"}, {"name": "b"}]}}


def pod(name: str, subset: str, kind: str = "TFJob", *, controller: bool = True) -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": kind, "name": "train",
                           "uid": "job-uid"}
    if controller:
        ref["controller"] = True
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}",
                         "annotations": {MATCHED: json.dumps({"name": "ws", "subset": subset})},
                         "ownerReferences": [ref]},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Pending"}}


def plan(rule: WorkloadSpreadRule, objects: list[dict[str, Any]]) -> list[Desired]:
    view = KubeProjection()
    for seq, obj in enumerate(objects, start=1):
        observe(view, seq, obj)
    return rule.desired(view, view.take_changed(), T0)


def statuses(desired: list[Desired]) -> dict[str, dict[str, Any]]:
    (status,) = [d for d in desired if d.verb == "patch_status"]
    return {s["name"]: s for s in status.patch["status"]["subsetStatuses"]}


def test_a_whitelisted_kind_counts_its_pods_against_its_replicas_path() -> None:
    rule = WorkloadSpreadRule("c1", whitelist=WHITELIST)
    desired = plan(rule, [tfjob(workers=4), spread(), pod("w0", "a"), pod("w1", "b")])
    got = statuses(desired)
    # 50% of the 4 workers the replicas path names: room for 2 in subset a, one there already.
    assert got["a"]["replicas"] == 1
    assert got["a"]["missingReplicas"] == 1
    assert got["b"]["missingReplicas"] == -1
    # Kruise writes deletion costs only for ReplicaSets, Deployments and CloneSets.
    assert [d for d in desired if d.verb == "patch"] == []


def test_the_replicas_path_follows_the_workload_as_it_scales() -> None:
    rule = WorkloadSpreadRule("c1", whitelist=WHITELIST)
    got = statuses(plan(rule, [tfjob(workers=9), spread(), pod("w0", "a")]))
    assert got["a"]["missingReplicas"] == 4  # 50% of 9 rounds up to 5, as in Kruise


def test_a_target_kind_outside_the_whitelist_is_deferred_not_written_with_zeros() -> None:
    rule = WorkloadSpreadRule("c1", whitelist=WHITELIST)
    desired = plan(rule, [tfjob(kind="PyTorchJob"), spread(kind="PyTorchJob"),
                          pod("w0", "a", kind="PyTorchJob")])
    assert desired == []
    assert rule.next_wake() is None


def test_without_a_whitelist_the_custom_kind_is_not_planned() -> None:
    rule = WorkloadSpreadRule("c1")
    assert plan(rule, [tfjob(), spread(), pod("w0", "a")]) == []


def test_pods_the_custom_workload_owns_without_controller_count_in_its_subsets() -> None:
    """Kruise lists a custom target's pods by any owner reference to its uid (``GetPodsForRef``,
    pkg/util/controllerfinder/pods_finder.go, index ``ownerRefUID`` of every reference in
    pkg/util/fieldindex/register.go), ``controller: true`` or not."""
    rule = WorkloadSpreadRule("c1", whitelist=WHITELIST)
    got = statuses(plan(rule, [tfjob(workers=4), spread(), pod("w0", "a", controller=False),
                               pod("w1", "a", controller=False), pod("w2", "b")]))
    assert got["a"]["replicas"] == 2
    assert got["a"]["missingReplicas"] == 0
    assert got["b"]["missingReplicas"] == -1


def test_a_pod_owned_without_controller_by_another_custom_workload_is_not_counted() -> None:
    rule = WorkloadSpreadRule("c1", whitelist=WHITELIST)
    other = pod("x0", "a", controller=False)
    other["metadata"]["ownerReferences"][0]["name"] = "other"
    got = statuses(plan(rule, [tfjob(workers=4), spread(), other, pod("w0", "a")]))
    assert got["a"]["missingReplicas"] == 1
