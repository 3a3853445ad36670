"""Bus messages for the audit tests: a small elastic spread's story, as the services send it."""

from __future__ import annotations

from events.messages import (
    Admission,
    ObjectRef,
    Outcome,
    Plan,
    PodLifecycle,
    StatusChange,
    SubsetView,
)

MATCHED = "apps.kruise.io/matched-workloadspread"


def admission(i: int, subset: str, fixed: int, *, ts: float) -> Admission:
    reason = (f"fixed has room ({fixed}/2)" if subset == "fixed"
              else f"fixed is full ({fixed}/2); elastic has room (0/unlimited)")
    return Admission(
        cluster="c", namespace="ns", request_uid=f"req-{i}", pod_name=f"key-{i}",
        generate_name="web-", workload="WorkloadSpread/ws", subset=subset, ts=ts,
        reason=reason, target="Deployment/web", replicas=3, replica="webhook-0",
        ledger_revision=i,
        subsets=[SubsetView(name="fixed", occupancy=fixed, limit=2),
                 SubsetView(name="elastic", occupancy=0, limit=None)],
    )


def created(i: int, subset: str, *, ts: float) -> PodLifecycle:
    return PodLifecycle(
        cluster="c", namespace="ns", name=f"web-{i}", uid=f"uid-{i}", point="created",
        owner="ReplicaSet/web-1",
        annotations={MATCHED: f'{{"name":"ws","subset":"{subset}","uid":"key-{i}"}}'}, ts=ts,
    )


def point(i: int, which: str, *, ts: float, node: str = "", reason: str = "") -> PodLifecycle:
    return PodLifecycle(cluster="c", namespace="ns", name=f"web-{i}", uid=f"uid-{i}",
                        point=which, node=node, reason=reason,  # type: ignore[arg-type]
                        owner="ReplicaSet/web-1", ts=ts)


def pod_ref(i: int) -> ObjectRef:
    return ObjectRef(group="", version="v1", resource="pods", namespace="ns", name=f"web-{i}",
                     uid=f"uid-{i}")


def cost_plan(i: int, cost: int, *, ts: float) -> Plan:
    return Plan(id=f"cost-{i}-{cost}", cluster="c", verb="patch", target=pod_ref(i),
                patch={"metadata": {"annotations": {
                    "controller.kubernetes.io/pod-deletion-cost": str(cost)}}},
                rule="workloadspread", reason=f"subset elastic: cost {cost}", ts=ts)


def evict_plan(i: int, *, ts: float) -> Plan:
    return Plan(id=f"evict-{i}", cluster="c", verb="evict", target=pod_ref(i),
                rule="workloadspread", reason="unschedulable for more than 10s in subset elastic",
                ts=ts)


def outcome(plan: Plan, result: str = "applied", *, ts: float) -> Outcome:
    return Outcome(plan_id=plan.id, cluster="c", verb=plan.verb, target=plan.target,
                   result=result, ts=ts)  # type: ignore[arg-type]


def status(fixed: int, elastic: int, *, ts: float) -> StatusChange:
    return StatusChange(
        cluster="c", group="apps.kruise.io", version="v1alpha1", resource="workloadspreads",
        namespace="ns", name="ws", uid="ws-uid", generation=1,
        status={"subsetStatuses": [{"name": "fixed", "replicas": fixed, "missingReplicas": 0},
                                   {"name": "elastic", "replicas": elastic,
                                    "missingReplicas": -1}]},
        ts=ts,
    )


def story() -> list[object]:
    """Three pods: two fill the fixed pool, the third lands in elastic, gets a deletion cost,
    and is evicted."""
    plan = cost_plan(3, -100, ts=17.0)
    evict = evict_plan(3, ts=20.0)
    return [
        admission(1, "fixed", 0, ts=10.0), created(1, "fixed", ts=10.5),
        point(1, "bound", ts=11.0, node="fixed-1"),
        admission(2, "fixed", 1, ts=12.0), created(2, "fixed", ts=12.5),
        point(2, "bound", ts=13.0, node="fixed-2"),
        admission(3, "elastic", 2, ts=14.0), created(3, "elastic", ts=14.5),
        point(3, "bound", ts=15.0, node="elastic-1"), point(3, "ready", ts=16.0),
        status(2, 1, ts=16.5),
        plan, outcome(plan, ts=17.5),
        evict, outcome(evict, ts=20.5),
        point(3, "deleting", ts=20.6, reason="Evicted"), point(3, "deleted", ts=21.0),
        status(2, 0, ts=21.5),
    ]
