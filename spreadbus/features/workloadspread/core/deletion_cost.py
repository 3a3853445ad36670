"""``controller.kubernetes.io/pod-deletion-cost`` values that make scale-in follow the subsets.

The workload controller (ReplicaSet, CloneSet) deletes pods with the lowest cost first. Kruise's
values, for ``n`` subsets and subset position ``idx``:

* pods a subset holds within its limit (or all of them when unlimited): ``100 x (n - idx)``;
* pods beyond the limit, chosen with Kubernetes' ``ActivePods.Less`` order (unassigned, pending,
  not ready, recently ready, restarting, newest go first; a stable sort): ``-100 x (idx + 1)``;
* pods in no subset: ``-100 x (n + 1)``.

So the fake bucket goes first, then overflow (from the later subsets first), then the last subset,
then the one before it. Costs are computed per pod version; for the workload's latest version
``idx`` is the subset's position, for older versions it is reversed (``n - 1 - position``), so a
rolling update removes old pods from the first subsets first and the new pods fill them back.
Only Deployment, ReplicaSet and CloneSet targets get costs; inactive pods are left alone.

``minReplicas`` (spreadbus): the pods that keep a subset at its minimum (the last ``min`` of its
positive pods in that order) get ``100 x n + 100 x (n - idx)``, above every unprotected pod, so
scale-in never takes a subset below its minimum while another subset has pods above its own.
Without minimums every value is exactly Kruise's.

At admission (spreadbus; Kruise's webhook writes no cost): a pod the webhook steers into a subset
within its limit will get the positive value of its subset from the planner, so the webhook writes
it in its admission patch (:func:`admission_cost`) and the planner's diff finds nothing to change:
no annotation patch per new pod, racing the pods' own start-up. The planner stays the authority;
it corrects the value when the pod ends up beyond a limit, the workload's version moves on or the
subsets are reordered. The webhook writes nothing where the value depends on what it cannot see
at admission: a subset with a minimum (whether the new pod is one of the protected ones depends
on the order of every pod of the subset), or a pod whose version cannot be told.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubesemantics import pod_status
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import (
    DELETION_COST_ANNOTATION,
    FAKE_SUBSET,
    WorkloadSpread,
)
from spreadbus.features.workloadspread.core.occupancy import (
    minimum_within,
    subset_limit,
    subset_minimum,
)
from spreadbus.features.workloadspread.core.pod_state import Pod

COST_UNIT = 100
KINDS_WITH_COST = frozenset({"ReplicaSet", "Deployment", "CloneSet"})


def applies_to(ws: WorkloadSpread) -> bool:
    return ws.target_ref is not None and ws.target_ref.kind in KINDS_WITH_COST


def subset_values(n: int, position: int, *, latest: bool) -> tuple[int, int, int]:
    """(beyond its limit, within it, protected by its minimum): the values of the pods of the
    subset at ``position`` among ``n``, for the latest version or an older one."""
    return _values(n, _rank(n, position, latest=latest))


def _rank(n: int, position: int, *, latest: bool) -> int:
    """``idx``: the subset's position for the latest version, reversed for older ones."""
    return position if latest else n - 1 - position


def _values(n: int, idx: int) -> tuple[int, int, int]:
    positive = COST_UNIT * (n - idx)
    return -COST_UNIT * (idx + 1), positive, COST_UNIT * n + positive


def cut_points(active: int, limit: int | None, minimum: int) -> tuple[int, int]:
    """In a subset's scale-in order of ``active`` pods: how many are beyond its limit, and
    where the ones that keep it at its minimum begin."""
    excess = max(active - limit, 0) if limit is not None else 0
    return excess, active - min(minimum, active - excess)


def unmatched_value(n: int) -> int:
    """The value of a pod in no subset (the fake bucket): below every subset's pods."""
    return -COST_UNIT * (n + 1)


def admission_cost(
    ws: WorkloadSpread, subset_name: str, *, replicas: int, latest: bool | None
) -> int | None:
    """The planner's cost for a pod admitted into ``subset_name`` within its limit, or None.

    ``latest``: whether the pod is of the workload's latest version, None when that is unknown.
    None for targets without deletion cost, an unknown version or subset, and a subset with a
    minimum (its protected pods are the last in deletion order, which one pod cannot tell).
    """
    if latest is None or not applies_to(ws):
        return None
    n = len(ws.subsets)
    for position, subset in enumerate(ws.subsets):
        if subset.name != subset_name:
            continue
        if subset_minimum(subset, replicas):
            return None
        return subset_values(n, position, latest=latest)[1]
    return None


def subset_costs(
    pods: Sequence[Pod],
    *,
    n: int,
    idx: int,
    limit: int | None,
    minimum: int = 0,
) -> dict[str, int]:
    """Cost per pod key for the active pods of one subset at position ``idx``."""
    active = [p for p in pods if pod_status.active_deleting_truthy(p)]
    negative_value, positive_value, protected_value = _values(n, idx)
    excess, protected_from = cut_points(len(active), limit, minimum)
    ordered = sorted(active, key=pod_state.deletion_order_key) if excess or minimum else active
    costs: dict[str, int] = {}
    for i, pod in enumerate(ordered):
        if i < excess:
            costs[pod_state.key(pod)] = negative_value
        elif i >= protected_from:
            costs[pod_state.key(pod)] = protected_value
        else:
            costs[pod_state.key(pod)] = positive_value
    return costs


def version_costs(
    ws: WorkloadSpread,
    buckets: Mapping[str, Sequence[Pod]],
    *,
    replicas: int,
    latest: bool,
) -> dict[str, int]:
    """Costs for one version's buckets (spec subsets plus the fake bucket)."""
    n = len(ws.subsets)
    costs: dict[str, int] = {}
    for position, subset in enumerate(ws.subsets):
        idx = _rank(n, position, latest=latest)
        limit = subset_limit(subset, replicas)
        costs.update(
            subset_costs(
                buckets.get(subset.name, ()),
                n=n,
                idx=idx,
                limit=limit,
                minimum=minimum_within(subset, limit),
            )
        )
    fake = [p for p in buckets.get(FAKE_SUBSET, ()) if pod_status.active_deleting_truthy(p)]
    for pod in fake:
        costs[pod_state.key(pod)] = unmatched_value(n)
    return costs


def deletion_costs(
    ws: WorkloadSpread,
    versioned_buckets: Mapping[str, Mapping[str, Sequence[Pod]]],
    *,
    replicas: int,
    latest_version: str,
) -> dict[str, int]:
    """Cost per pod key across every version; empty for targets without deletion cost."""
    if not applies_to(ws):
        return {}
    costs: dict[str, int] = {}
    for version, buckets in versioned_buckets.items():
        costs.update(
            version_costs(ws, buckets, replicas=replicas, latest=version == latest_version)
        )
    return costs


def cost_to_write(current: str | None, cost: int | None) -> str | None:
    """The annotation value to write over ``current``, or ``None`` when there is nothing to
    write: no wanted cost, the pod already says it, or it is 0 and the pod has no annotation
    (which reads as 0, so ``"0"`` is never added)."""
    if cost is None:
        return None
    value = str(cost)
    if current == value or (current is None and value == "0"):
        return None
    return value


def annotation_updates(costs: Mapping[str, int], pods: Sequence[Pod]) -> dict[str, str]:
    """The pods whose annotation must change, with the new value."""
    updates: dict[str, str] = {}
    for pod in pods:
        key = pod_state.key(pod)
        current = pod_state.annotation(pod, DELETION_COST_ANNOTATION)
        value = cost_to_write(current, costs.get(key))
        if value is not None:
            updates[key] = value
    return updates
