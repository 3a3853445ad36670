"""The WorkloadRebalancer rule over the planner's projection: the request is delivered to the
governing object before the entry succeeds, the TTL deletes, a newer request subsumes an older."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from events import codec, subjects
from events.messages import Observation
from spreadbus.features.workloadrebalancer.core.model import REQUEST_ANNOTATION
from spreadbus.features.workloadrebalancer.planning.rule import WorkloadRebalancerRule
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired

T0 = datetime(2025, 3, 1, 10, 0, 0, tzinfo=UTC).timestamp()
KINDS = {"Deployment": ("apps", "v1", "deployments"),
         "WorkloadSpread": ("apps.kruise.io", "v1alpha1", "workloadspreads"),
         "UnitedDeployment": ("apps.kruise.io", "v1alpha1", "uniteddeployments"),
         "WorkloadRebalancer": ("apps.karmada.io", "v1alpha1", "workloadrebalancers"),
         "ResourceBinding": ("work.karmada.io", "v1alpha2", "resourcebindings")}


class World:
    def __init__(self) -> None:
        self.view = KubeProjection()
        self.rule = WorkloadRebalancerRule("c1")
        self.seq = 0

    def put(self, obj: dict[str, Any]) -> None:
        self.seq += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.seq)
        group, version, resource = KINDS[obj["kind"]]
        message = Observation(cluster="c1", group=group, version=version, resource=resource,
                              event="MODIFIED", object=obj)
        subject = subjects.observation("c1", group, resource, meta.get("namespace", ""),
                                       meta["name"])
        self.view.apply(self.seq, subject, codec.encode(message))

    def round(self, at: float) -> list[Desired]:
        return self.rule.desired(self.view, self.view.take_changed() | self.rule.due(at), at)


def deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "d1"}, "spec": {}}


def spread(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "default", "uid": "s1",
                         "annotations": annotations or {}},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                   "name": "web"}}}


def rebalancer(name: str, uid: str, created: str, ttl: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                           "name": "web", "namespace": "default"}]}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": name, "uid": uid, "generation": 1,
                         "creationTimestamp": created}, "spec": spec}


def verbs(desired: list[Desired]) -> list[tuple[str, str]]:
    return [(d.verb, d.target.resource) for d in desired]


def test_the_request_lands_first_then_the_entry_succeeds_and_the_ttl_deletes() -> None:
    world = World()
    world.put(deployment())
    world.put(spread())
    wr = rebalancer("demo", "u1", "2025-03-01T09:59:59Z", ttl=0)
    world.put(wr)
    first = world.round(T0)
    assert verbs(first) == [("patch_status", "workloadrebalancers"),
                            ("patch", "workloadspreads")]
    assert first[0].patch == {"status": {"observedGeneration": 1, "observedWorkloads": [
        {"workload": wr["spec"]["workloads"][0]}]}}
    assert first[1].patch == {"metadata": {"annotations": {REQUEST_ANNOTATION: "u1"}}}
    assert first[1].target.name == "ws"
    assert first[1].target.uid == "s1"
    wr["status"] = first[0].patch["status"]
    world.put(wr)
    # Until the request is seen the rule keeps wanting it (the planner sends an equal intent
    # once), and the status waits.
    assert [d.patch for d in world.round(T0 + 1)] == [first[1].patch]
    world.put(spread({REQUEST_ANNOTATION: "u1"}))
    second = world.round(T0 + 2.5)
    assert verbs(second) == [("patch_status", "workloadrebalancers"),
                             ("delete", "workloadrebalancers")]
    status = second[0].patch["status"]
    assert status["observedWorkloads"][0]["result"] == "Successful"
    assert status["finishTime"] == "2025-03-01T10:00:02Z"


def test_a_ttl_wakes_the_rule_without_any_event() -> None:
    world = World()
    world.put(deployment())
    world.put(spread({REQUEST_ANNOTATION: "u1"}))
    wr = rebalancer("demo", "u1", "2025-03-01T09:59:59Z", ttl=30)
    world.put(wr)
    (write,) = world.round(T0)
    wr["status"] = write.patch["status"]
    world.put(wr)
    assert world.round(T0 + 1) == []
    assert world.rule.next_wake() == T0 + 30
    assert world.round(T0 + 29.9) == []
    (delete,) = world.round(T0 + 30)
    assert (delete.verb, delete.target.name, delete.target.uid) == ("delete", "demo", "u1")


def test_a_newer_request_on_the_spread_subsumes_an_older_rebalancer() -> None:
    world = World()
    world.put(deployment())
    world.put(spread({REQUEST_ANNOTATION: "u-new"}))
    world.put(rebalancer("new", "u-new", "2025-03-01T09:59:59Z", ttl=None))
    world.put(rebalancer("old", "u-old", "2025-03-01T09:00:00Z", ttl=None))
    desired = world.round(T0)
    assert verbs(desired) == [("patch_status", "workloadrebalancers")] * 2
    for d in desired:
        assert d.patch["status"]["observedWorkloads"][0]["result"] == "Successful"


def test_an_older_request_on_the_spread_is_replaced() -> None:
    world = World()
    world.put(deployment())
    world.put(spread({REQUEST_ANNOTATION: "u-old"}))
    world.put(rebalancer("old", "u-old", "2025-03-01T09:00:00Z", ttl=None))
    world.put(rebalancer("new", "u-new", "2025-03-01T09:59:59Z", ttl=None))
    patches = [d for d in world.round(T0) if d.verb == "patch"]
    assert [p.patch for p in patches] == [
        {"metadata": {"annotations": {REQUEST_ANNOTATION: "u-new"}}}]


def test_a_uniteddeployment_is_its_own_placement() -> None:
    world = World()
    world.put({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
               "metadata": {"name": "ud", "namespace": "default", "uid": "ud1"}, "spec": {}})
    wr = rebalancer("demo", "u1", "2025-03-01T09:59:59Z", ttl=None)
    wr["spec"]["workloads"] = [{"apiVersion": "apps.kruise.io/v1alpha1",
                                "kind": "UnitedDeployment", "name": "ud",
                                "namespace": "default"}]
    world.put(wr)
    patches = [d for d in world.round(T0) if d.verb == "patch"]
    assert [(p.target.resource, p.target.name) for p in patches] == [("uniteddeployments", "ud")]


def test_the_status_is_written_as_its_difference_so_a_key_left_out_is_removed() -> None:
    # An edited rebalancer whose stored finishTime cannot be read (so it is not carried over)
    # while a request waits: the new status has no finishTime, and a merge patch of the whole
    # status would leave the unreadable one standing for good.
    world = World()
    world.put(deployment())
    world.put(spread())
    wr = rebalancer("demo", "u1", "2025-03-01T09:59:59Z", ttl=None)
    wr["metadata"]["generation"] = 2
    wr["status"] = {"observedGeneration": 1, "finishTime": "not a time",
                    "observedWorkloads": [{"workload": wr["spec"]["workloads"][0]}]}
    world.put(wr)
    (status, _request) = world.round(T0)
    assert status.verb == "patch_status"
    assert status.patch == {"status": {"observedGeneration": 2, "finishTime": None}}


def test_a_uniteddeployment_a_binding_propagates_is_rescheduled_through_its_binding() -> None:
    world = World()
    world.put({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
               "metadata": {"name": "ud", "namespace": "default", "uid": "ud1"}, "spec": {}})
    world.put({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
               "metadata": {"name": "ud-uniteddeployment", "namespace": "default",
                            "uid": "rb1"}, "spec": {}})
    wr = rebalancer("demo", "u1", "2025-03-01T09:59:59Z", ttl=None)
    wr["spec"]["workloads"] = [{"apiVersion": "apps.kruise.io/v1alpha1",
                                "kind": "UnitedDeployment", "name": "ud",
                                "namespace": "default"}]
    world.put(wr)
    patches = [d for d in world.round(T0) if d.verb == "patch"]
    assert [(p.target.resource, p.target.name) for p in patches] == [
        ("resourcebindings", "ud-uniteddeployment")]
    assert patches[0].patch == {"spec": {"rescheduleTriggeredAt": "2025-03-01T09:59:59Z"}}
