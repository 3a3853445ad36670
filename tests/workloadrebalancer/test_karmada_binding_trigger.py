"""A WorkloadRebalancer naming a workload that only a Karmada ResourceBinding places, over the
planner's projection, as Karmada's controller runs it: the trigger (the rebalancer's
creationTimestamp) is written on the binding named for the workload, only when the binding has
none or an older one; the entry is ``Successful`` once the binding holds it or a later one, and
``Failed``/``ReferencedBindingNotFound`` without a binding. The actuator writes only the trigger
the rebalancer, as read, asks for."""

from __future__ import annotations

from typing import Any

from events import codec, subjects
from events.messages import Observation
from spreadbus.features.workloadrebalancer.core.binding_trigger import trigger_follows
from tests.workloadrebalancer.test_rule_on_the_projection import (
    T0,
    World,
    deployment,
    rebalancer,
    verbs,
)

RB = ("work.karmada.io", "v1alpha2", "resourcebindings")


def put_binding(world: World, trigger: str | None = None) -> dict[str, Any]:
    world.seq += 1
    spec: dict[str, Any] = {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                         "namespace": "default", "name": "web"}}
    if trigger:
        spec["rescheduleTriggeredAt"] = trigger
    obj = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
           "metadata": {"name": "web-deployment", "namespace": "default", "uid": "rb1",
                        "resourceVersion": str(world.seq)}, "spec": spec}
    message = Observation(cluster="c1", group=RB[0], version=RB[1], resource=RB[2],
                          event="MODIFIED", object=obj)
    world.view.apply(world.seq, subjects.observation("c1", RB[0], RB[2], "default",
                                                     "web-deployment"), codec.encode(message))
    return obj


def result(desired: Any) -> list[dict[str, Any]]:
    return next(d.patch["status"]["observedWorkloads"] for d in desired
            if d.verb == "patch_status")


def test_the_trigger_is_written_on_the_binding_then_the_entry_succeeds() -> None:
    world = World()
    world.put(deployment())
    put_binding(world)
    world.put(rebalancer("demo", "u1", "2025-03-01T09:59:59Z", ttl=None))
    first = world.round(T0)
    assert verbs(first) == [("patch_status", "workloadrebalancers"),
                            ("patch", "resourcebindings")]
    trigger = first[1]
    assert trigger.patch == {"spec": {"rescheduleTriggeredAt": "2025-03-01T09:59:59Z"}}
    assert trigger.target.name == "web-deployment"
    assert trigger.precondition == "resource_version"
    assert "result" not in result(first)[0]  # waiting for the binding to hold it
    put_binding(world, "2025-03-01T09:59:59Z")
    done = world.round(T0 + 1)
    assert result(done)[0]["result"] == "Successful"
    assert "finishTime" in done[0].patch["status"]


def test_a_binding_holding_a_later_trigger_is_not_written_and_succeeds() -> None:
    world = World()
    world.put(deployment())
    put_binding(world, "2025-03-01T10:30:00Z")
    world.put(rebalancer("demo", "u1", "2025-03-01T09:59:59Z", ttl=None))
    first = world.round(T0)
    assert verbs(first) == [("patch_status", "workloadrebalancers")]
    assert result(first)[0]["result"] == "Successful"


def test_without_a_binding_the_entry_fails_for_good() -> None:
    world = World()
    world.put(deployment())
    world.put(rebalancer("demo", "u1", "2025-03-01T09:59:59Z", ttl=None))
    first = world.round(T0)
    assert result(first)[0] == {"workload": {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "web", "namespace": "default"},
                                "result": "Failed", "reason": "ReferencedBindingNotFound"}


def test_the_actuator_writes_only_the_trigger_the_rebalancer_asks_for() -> None:
    wr = rebalancer("demo", "u1", "2025-03-01T09:59:59Z", ttl=None)
    asked = {"spec": {"rescheduleTriggeredAt": "2025-03-01T09:59:59Z"}}
    assert trigger_follows(wr, asked, {"spec": {}}) == ""
    forged = {"spec": {"rescheduleTriggeredAt": "2030-01-01T00:00:00Z"}}
    assert "created at 2025-03-01T09:59:59Z" in trigger_follows(wr, forged, {"spec": {}})
    # Never moves a binding's trigger back.
    newer = {"spec": {"rescheduleTriggeredAt": "2025-03-01T10:30:00Z"}}
    assert "already holds" in trigger_follows(wr, asked, newer)
