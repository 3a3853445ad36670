"""The WorkloadSpread rule on the projection: a round costs what changed, decisions stay whole.

Objects are folded into a :class:`KubeProjection` as the watcher publishes them. After a burst of
pods, each later round hands out only the pods whose observation or wanted cost changed, and a
fresh rule that is offered every key (a restore, a new leader) wants exactly the writes the
incremental one has handed out and that are not yet observed.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from events import codec, subjects
from events.messages import Observation
from spreadbus.features.workloadspread.core import reconcile
from spreadbus.features.workloadspread.core.model import DELETION_COST_ANNOTATION as DELETION_COST
from spreadbus.features.workloadspread.core.model import format_time
from spreadbus.features.workloadspread.planning import spread_tally
from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired

T0 = 1_800_000_000.0
MATCHED = "apps.kruise.io/matched-workloadspread"
KINDS = {"Pod": ("", "pods"), "Deployment": ("apps", "deployments"),
         "ReplicaSet": ("apps", "replicasets"), "WorkloadSpread": ("apps.kruise.io",
                                                                    "workloadspreads"),
         "Node": ("", "nodes")}


class World:
    def __init__(self) -> None:
        self.view = KubeProjection()
        self.rule = WorkloadSpreadRule("c1", min_interval_seconds=0.0)
        self.seq = 0
        self.objects: dict[str, dict[str, Any]] = {}

    def put(self, obj: dict[str, Any]) -> None:
        self.seq += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.seq)
        group, resource = KINDS[obj["kind"]]
        message = Observation(cluster="c1", group=group, version="v1", resource=resource,
                              event="MODIFIED", object=obj)
        subject = subjects.observation("c1", group, resource, meta.get("namespace", ""),
                                       meta["name"])
        self.view.apply(self.seq, subject, codec.encode(message))
        self.objects[f"{obj['kind']}/{meta['name']}"] = obj

    def round(self, at: float) -> list[Desired]:
        """One round of the rule over what changed since the last one."""
        return self.rule.desired(self.view, self.view.take_changed(), at)

    def every_key(self) -> set[tuple[str, str]]:
        return {(rkey, okey) for rkey, bucket in self.view.state.objects.items()
                for okey in bucket}


def pod_costs(desired: list[Desired]) -> dict[str, str]:
    return {d.target.name: d.patch["metadata"]["annotations"][DELETION_COST]
            for d in desired if d.verb == "patch" and d.target.resource == "pods"}


def setup() -> World:
    world = World()
    world.put({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default", "uid": "d-uid"},
               "spec": {"replicas": 6, "template": {"metadata": {"labels": {"app": "web"}}}}})
    world.put({"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "web-h1", "namespace": "default", "uid": "rs-uid",
                            "labels": {"pod-template-hash": "h1"},
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                 "name": "web", "uid": "d-uid",
                                                 "controller": True}]},
               "spec": {"template": {"metadata": {"labels": {"app": "web"}}}}})
    world.put({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
               "metadata": {"name": "ws", "namespace": "default", "uid": "ws-uid",
                            "generation": 1},
               "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                      "name": "web"},
                        "subsets": [{"name": "a", "maxReplicas": 2}, {"name": "b"}]}})
    return world


def pod(name: str, subset: str, cost: str | None = None) -> dict[str, Any]:
    annotations = {MATCHED: json.dumps({"name": "ws", "subset": subset})}
    if cost is not None:
        annotations[DELETION_COST] = cost
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "labels": {"app": "web", "pod-template-hash": "h1"},
                         "annotations": annotations,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "web-h1", "uid": "rs-uid",
                                              "controller": True}]},
            "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}


def test_after_a_burst_a_round_hands_out_only_the_pods_that_changed() -> None:
    world = setup()
    for i in range(6):
        world.put(pod(f"p{i}", "a" if i < 2 else "b"))
    first = pod_costs(world.round(T0))
    assert first == {"p0": "200", "p1": "200", "p2": "100", "p3": "100", "p4": "100",
                     "p5": "100"}

    world.put(pod("p4", "b", cost="100"))  # one write landed
    assert pod_costs(world.round(T0 + 1)) == {}

    # A third pod in "a" (limit 2): one of the three goes first now (p0, first in key order
    # among equals); p1 keeps the value it was handed and is not handed out again.
    world.put(pod("p6", "a"))
    third = pod_costs(world.round(T0 + 2))
    assert third == {"p0": "-100", "p6": "200"}


def test_a_fresh_rule_offered_every_key_wants_what_the_incremental_rule_handed_out() -> None:
    world = setup()
    handed: dict[str, str] = {}
    steps: list[tuple[str, str, str | None]] = [
        ("p0", "a", None), ("p1", "b", None), ("p2", "a", None), ("p0", "a", "200"),
        ("p3", "a", None), ("p1", "b", "100"), ("p4", "b", "-100"), ("p2", "a", "999"),
    ]
    for step, (name, subset, cost) in enumerate(steps):
        world.put(pod(name, subset, cost))
        handed.update(pod_costs(world.round(T0 + step)))
        fresh = WorkloadSpreadRule("c1", min_interval_seconds=0.0)
        wanted = pod_costs(fresh.desired(world.view, world.every_key(), T0 + step))
        for who, value in wanted.items():
            assert handed.get(who) == value, (step, who)
        observed = {n: o["metadata"]["annotations"].get(DELETION_COST)
                    for n, o in ((k.split("/")[1], v) for k, v in world.objects.items()
                                 if k.startswith("Pod/"))}
        still_wanted = {who: v for who, v in handed.items() if observed.get(who) != v}
        assert still_wanted == wanted, step


def test_a_spec_change_recounts_every_pod_of_the_workloadspread() -> None:
    world = setup()
    for i in range(3):
        world.put(pod(f"p{i}", "a" if i < 2 else "b"))
    first = pod_costs(world.round(T0))
    assert first == {"p0": "200", "p1": "200", "p2": "100"}
    for name, cost in first.items():  # the writes land
        world.put(pod(name, "a" if name != "p2" else "b", cost=cost))
    assert pod_costs(world.round(T0 + 0.5)) == {}
    spread = world.objects["WorkloadSpread/ws"]
    spread["spec"]["subsets"][0]["maxReplicas"] = 1  # subset "a" now holds one pod too many
    spread["metadata"]["generation"] = 2
    world.put(spread)
    assert pod_costs(world.round(T0 + 1)) == {
        "p0": "-100"}


@pytest.mark.parametrize("shape", ["plain", "adaptive", "deleting"])
@pytest.mark.parametrize("pods", [10, 300])
def test_a_round_after_one_pod_changed_reads_that_pod_only_whatever_the_size(
    pods: int, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also for an Adaptive WorkloadSpread with a pod pending unschedulable past its deadline,
    and with a deletion in flight in the status the planner wrote (Kruise's ``deletingPods``)."""
    world = setup()
    world.objects["Deployment/web"]["spec"]["replicas"] = pods
    world.put(world.objects["Deployment/web"])
    spread = world.objects["WorkloadSpread/ws"]
    if shape == "adaptive":
        spread["spec"]["scheduleStrategy"] = {
            "type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}}
    if shape == "deleting":
        at = format_time(datetime.fromtimestamp(T0, UTC))
        spread["status"] = {"versionedSubsetStatuses": {"h1": [
            {"name": "b", "replicas": pods, "missingReplicas": -1,
             "deletingPods": {"p3": at}}]}}
    world.put(spread)
    for i in range(pods):
        world.put(pod(f"p{i}", "b", cost="100"))
    if shape == "adaptive":
        stuck = pod("stuck", "a", cost="200")
        stuck["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
        stuck["spec"] = {}
        stuck["status"] = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
        world.put(stuck)
    assert pod_costs(world.round(T0)) == {}

    read: list[str] = []
    recounts: list[str] = []
    facts = spread_tally._facts
    full = reconcile.plan_workloadspread

    def counted_facts(ws: Any, names: Any, obj: dict[str, Any]) -> Any:
        read.append(obj["metadata"]["name"])
        return facts(ws, names, obj)

    def counted_full(*args: Any, **kwargs: Any) -> Any:
        recounts.append("full")
        return full(*args, **kwargs)

    monkeypatch.setattr(spread_tally, "_facts", counted_facts)
    monkeypatch.setattr(reconcile, "plan_workloadspread", counted_full)
    world.put(pod("p7", "b"))  # its cost annotation was removed
    desired = world.round(T0 + 1)
    assert pod_costs(desired) == {"p7": "100"}
    assert read == ["p7"]
    assert recounts == []
    statuses = [d.patch["status"] for d in desired if d.verb == "patch_status"]
    assert len(statuses) == 1
    if shape == "adaptive":
        condition = statuses[0]["subsetStatuses"][0]["conditions"][0]
        assert (condition["type"], condition["status"]) == ("Schedulable", "False")
    if shape == "deleting":
        b = statuses[0]["versionedSubsetStatuses"]["h1"][1]
        assert list(b["deletingPods"]) == ["p3"]


def test_a_node_that_comes_matches_the_pods_made_before_the_spread_that_run_on_it() -> None:
    world = setup()
    made_before = pod("old", "a")
    del made_before["metadata"]["annotations"][MATCHED]
    made_before["spec"]["nodeName"] = "n9"
    world.put(made_before)
    first = world.round(T0)
    assert [d for d in first if d.verb == "patch" and MATCHED in json.dumps(d.patch)] == []

    world.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"}, "spec": {}})
    second = world.round(T0 + 1)
    matched = [json.loads(d.patch["metadata"]["annotations"][MATCHED]) for d in second
               if d.verb == "patch" and d.target.name == "old"]
    assert matched == [{"name": "ws", "subset": "a"}]
