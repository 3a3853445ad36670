"""The pod webhook's decisions, as pure functions of the state the webhook holds.

CREATE: find the WorkloadSpread governing the pod (:func:`target.governing_workloadspread`), pick
a subset from that version's loads (:mod:`subset_choice`), inject it (:mod:`injection`) and
return the JSON Patch plus the :class:`Reservation` the webhook must record on the bus by
compare-and-set before answering. If the compare-and-set loses, the webhook refreshes its loads
and calls again; the decision is deterministic in its inputs, so replicas that see the same state
agree. A pod re-admitted under a name that already holds a reservation gets the same subset and no
new reservation (Kruise's idempotent retry).

DELETE: free the pod's slot with a ``deleting`` reservation, so a replacement can be admitted
while it terminates. Always allowed. The API server sets the pod's ``deletionTimestamp`` right
after admission, so the reservation only bridges the time until the pod is seen terminating (it
then leaves the active count, and the reservation with it).

Eviction (``pods/eviction`` CREATE): allowed and frees nothing, unlike Kruise. The API server
checks the PodDisruptionBudget after admission, so an admitted eviction may still be refused
(429) and the pod keep running; a slot freed at admission would let a replacement in next to it
and take the subset over its limit. An eviction that is carried out sets ``deletionTimestamp`` as
a DELETE does, and the pod leaves the active count when that is seen; a replacement created
before then is steered as if the pod were still there (to a later subset when this one is full).

Deletion cost (spreadbus; Kruise's webhook writes none): a pod steered into a subset within its
limit also gets, in the same patch, the ``controller.kubernetes.io/pod-deletion-cost`` the planner
gives such a pod (:func:`deletion_cost.admission_cost`), so the planner has no annotation to patch
while the pods start. It is written only when the planner's value is known from what admission
holds: a Deployment, ReplicaSet or CloneSet target whose latest version is known
(:func:`cost_version`), a pod the planner counts (its ``targetFilter``), a subset without a
minimum. A value the pod template carries is replaced, as the planner's patch would replace it.

What needs no bookkeeping, as in Kruise: StatefulSets (placed by ordinal), a WorkloadSpread with
one unlimited subset, unlimited subsets. A pod that fits nowhere is admitted untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import msgspec

from kubesemantics import json_patch, pod_status
from kubesemantics.owner_refs import controller_ref
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.deletion_cost import admission_cost
from spreadbus.features.workloadspread.core.injection import (
    InjectionError,
    inject,
    with_deletion_cost,
)
from spreadbus.features.workloadspread.core.model import JSON, Subset, WorkloadSpread, truncate
from spreadbus.features.workloadspread.core.occupancy import (
    Reservation,
    SubsetLoad,
    subset_limit,
)
from spreadbus.features.workloadspread.core.reconcile import latest_version
from spreadbus.features.workloadspread.core.subset_choice import (
    choose_subset,
    choose_subset_by_ordinal,
    single_unlimited,
)
from spreadbus.features.workloadspread.core.target import (
    Lookup,
    OwnerNotFound,
    governing_workloadspread,
    pod_counted_by_planner,
)

Pod = Mapping[str, Any]


class AdmissionDecision(msgspec.Struct, frozen=True):
    """The answer for one pod request."""

    allowed: bool
    workloadspread: str | None = None  # "namespace/name"
    subset: str | None = None
    patch: list[JSON] = msgspec.field(default_factory=list)  # RFC 6902 against the pod sent
    pod: JSON = msgspec.field(default_factory=dict)  # the pod after the patch
    reservation: Reservation | None = None  # to record (compare-and-set) before answering
    message: str = ""  # why a request is denied

    def to_json(self) -> JSON:
        return {
            "allowed": self.allowed,
            "workloadSpread": self.workloadspread,
            "subset": self.subset,
            "patch": self.patch,
            "pod": self.pod,
        }


def _held_by(loads: Mapping[str, SubsetLoad], pod_name: str) -> str | None:
    if not pod_name:
        return None
    return next((name for name, load in loads.items() if load.holds(pod_name)), None)


def cost_version(
    ws: WorkloadSpread,
    workload: Mapping[str, Any] | None,
    pod: Pod,
    *,
    lookup: Lookup,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> str | None:
    """The workload's latest version as the planner reads it, for the admission cost; None when
    there is no workload or admission cannot tell the version.

    The planner's rule (:func:`reconcile.latest_version`) is used as it is, given for a Deployment
    only the pod's own ReplicaSet: the version is known exactly when that ReplicaSet's template is
    the Deployment's (the pod is of the latest version, the usual case while a workload scales
    up). An older pod, or a view that has not seen the new ReplicaSet yet, gives None, one lookup
    instead of a scan of the namespace's ReplicaSets on every admission.

    A workload that shows 0 replicas still gives its version, although the planner counts no pod
    of a workload at 0: a pod is created because the workload was scaled up, and the planner sees
    that scale-up before it sees the pod, while the webhook's view may not have folded it yet
    (a scale from zero would otherwise get no costs at admission).
    """
    if workload is None or ws.target_ref is None:
        return None
    replicasets: list[Mapping[str, Any]] = []
    owner = controller_ref(pod)
    if workload.get("kind") == "Deployment" and owner and owner.get("kind") == "ReplicaSet":
        rs = lookup(ws.namespace, "apps", "ReplicaSet", str(owner.get("name") or ""))
        if rs is not None:
            replicasets.append(rs)
    return latest_version(ws, workload, replicasets=replicasets, versioned_kinds=versioned_kinds)


def _admission_cost(
    ws: WorkloadSpread,
    subset: Subset,
    pod: Pod,
    *,
    version: str,
    replicas: int,
    latest: str | None,
    versioned_kinds: frozenset[str],
) -> int | None:
    """The cost for the injected pod (its labels and version as the planner will read them).

    ``version`` is the pod's before injection: only the subset's patch can change what a
    version is read from (kind, labels, owners), so without one it is the injected pod's too.
    """
    if latest is None or not pod_counted_by_planner(ws.target_filter, pod):
        return None
    if subset.patch is not None:
        version = pod_state.version(pod, versioned_kinds)
    return admission_cost(ws, subset.name, replicas=replicas, latest=version == latest)


def admit_create_for(
    ws: WorkloadSpread,
    pod: Pod,
    *,
    replicas: int,
    loads: Mapping[str, SubsetLoad],
    now: datetime,
    generated_uid: str,
    latest: str | None = None,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
    version: str | None = None,
    judged_at: datetime | None = None,
) -> AdmissionDecision:
    """CREATE of a pod already known to be governed by ``ws``.

    ``loads`` are the subset loads of the pod's version (:func:`pod_state.version`);
    ``generated_uid`` keys the reservation of a pod that has no name yet (``generateName``), and
    is written into the annotation so the planner can match the pod to it later. ``latest`` is
    the workload's latest version (:func:`cost_version`); None writes no deletion cost.
    ``version`` is the pod's version when the caller has read it already (for its loads), with
    the same ``versioned_kinds``; None reads it here. ``judged_at`` is the clock the
    reservations in ``loads`` expire by (:func:`~.occupancy.expiry_clock`), None: ``now``;
    a new reservation is stamped ``now`` whatever it is.
    """
    pod_name = pod_state.name(pod)
    if version is None:
        version = pod_state.version(pod, versioned_kinds)
    reservation: Reservation | None = None
    uid = ""
    if ws.target_ref is not None and ws.target_ref.kind == "StatefulSet":
        chosen = choose_subset_by_ordinal(ws, pod_state.ordinal(pod_name))
    elif single_unlimited(ws):
        chosen = ws.subsets[0].name
    else:
        held = _held_by(loads, pod_name)
        if held is not None:
            chosen = held
        else:
            chosen = choose_subset(
                ws, replicas=replicas, loads=loads, now=judged_at or now, version=version
            )
            subset = ws.subset(chosen) if chosen is not None else None
            if subset is not None and subset_limit(subset, replicas) is not None:
                key = pod_name or generated_uid
                uid = "" if pod_name else generated_uid
                reservation = Reservation(
                    ws.key, version, subset.name, key, "creating", truncate(now)
                )
    if chosen is None:
        return AdmissionDecision(allowed=True, workloadspread=ws.key, pod=dict(pod))
    subset = ws.subset(chosen)
    if subset is None:
        return AdmissionDecision(allowed=True, workloadspread=ws.key, pod=dict(pod))
    try:
        injected = inject(pod, subset, ws_name=ws.name, uid=uid)
    except InjectionError as exc:
        return AdmissionDecision(
            allowed=False, workloadspread=ws.key, subset=chosen, pod=dict(pod), message=str(exc)
        )
    cost = _admission_cost(
        ws,
        subset,
        injected,
        version=version,
        replicas=replicas,
        latest=latest,
        versioned_kinds=versioned_kinds,
    )
    if cost is not None:
        injected = with_deletion_cost(injected, cost)
    ops = json_patch.diff(dict(pod), injected)
    return AdmissionDecision(
        allowed=True,
        workloadspread=ws.key,
        subset=chosen,
        patch=ops,
        pod=injected,
        reservation=reservation,
    )


def admit_create(
    pod: Pod,
    spreads: Iterable[WorkloadSpread],
    *,
    lookup: Lookup,
    whitelist: Whitelist,
    replicas_of: Callable[[WorkloadSpread], int],
    loads_of: Callable[[WorkloadSpread, str], Mapping[str, SubsetLoad]],
    now: datetime,
    generated_uid: str,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> AdmissionDecision:
    """CREATE of any pod: find its WorkloadSpread, then :func:`admit_create_for` (the workload
    and, for a Deployment, the pod's ReplicaSet read through ``lookup`` for the cost)."""
    try:
        ws = governing_workloadspread(pod, spreads, lookup=lookup, whitelist=whitelist)
    except OwnerNotFound as exc:
        return AdmissionDecision(allowed=False, pod=dict(pod), message=str(exc))
    if ws is None:
        return AdmissionDecision(allowed=True, pod=dict(pod))
    version = pod_state.version(pod, versioned_kinds)
    ref = ws.target_ref
    workload = lookup(ws.namespace, ref.group, ref.kind, ref.name) if ref is not None else None
    return admit_create_for(
        ws,
        pod,
        replicas=replicas_of(ws),
        loads=loads_of(ws, version),
        now=now,
        generated_uid=generated_uid,
        latest=cost_version(ws, workload, pod, lookup=lookup, versioned_kinds=versioned_kinds),
        versioned_kinds=versioned_kinds,
        version=version,
    )


def spread_for_deletion(pod: Pod, spreads: Iterable[WorkloadSpread]) -> WorkloadSpread | None:
    """The WorkloadSpread named in the pod's annotation, for an active, controlled pod."""
    annotation = pod_state.matched(pod)
    if (annotation is None or not pod_status.active_deleting_truthy(pod)
            or controller_ref(pod) is None):
        return None
    ns = pod_state.namespace(pod)
    return next((ws for ws in spreads if ws.namespace == ns and ws.name == annotation.name), None)


def admit_delete_for(
    ws: WorkloadSpread,
    pod: Pod,
    *,
    loads: Mapping[str, SubsetLoad],
    now: datetime,
    eviction: bool = False,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> AdmissionDecision:
    """DELETE or eviction of a pod of ``ws``: always allowed; maybe a ``deleting`` reservation.

    Only a DELETE reserves: an eviction may still be refused by a PodDisruptionBudget after
    admission (see the module docstring), so it frees nothing until the pod is seen terminating.
    """
    allowed = AdmissionDecision(allowed=True, workloadspread=ws.key, pod=dict(pod))
    annotation = pod_state.matched(pod)
    pod_name = pod_state.name(pod)
    if annotation is None or single_unlimited(ws):
        return allowed
    if ws.target_ref is not None and ws.target_ref.kind == "StatefulSet":
        return allowed
    if _held_by(loads, pod_name) is not None:
        return allowed
    subset = ws.subset(annotation.subset)
    if subset is None or subset_limit(subset, 0) is None:
        return allowed
    if eviction:
        return msgspec.structs.replace(allowed, subset=subset.name)
    version = pod_state.version(pod, versioned_kinds)
    return AdmissionDecision(
        allowed=True,
        workloadspread=ws.key,
        subset=subset.name,
        pod=dict(pod),
        reservation=Reservation(ws.key, version, subset.name, pod_name, "deleting", truncate(now)),
    )


def admit_delete(
    pod: Pod,
    spreads: Iterable[WorkloadSpread],
    *,
    loads_of: Callable[[WorkloadSpread, str], Mapping[str, SubsetLoad]],
    now: datetime,
    eviction: bool = False,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> AdmissionDecision:
    """DELETE or eviction of any pod."""
    ws = spread_for_deletion(pod, spreads)
    if ws is None:
        return AdmissionDecision(allowed=True, pod=dict(pod))
    version = pod_state.version(pod, versioned_kinds)
    return admit_delete_for(
        ws,
        pod,
        loads=loads_of(ws, version),
        now=now,
        eviction=eviction,
        versioned_kinds=versioned_kinds,
    )
