"""A UnitedDeployment's pods as the reconcile reads them: counted, and listed only where judged.

Most of what a round reads of the pods is a count: the active (and Ready) pods on the expected
revision (``updatedReplicas``), the pods off a StatefulSet's revision (an ``OnDelete``
partition). Only a few pods must be looked at one by one, and only those are listed:

- the Pending, unbound, ``Unschedulable`` pods (Adaptive's stuck pods, whose creation time
  decides);
- in reservation mode, the pods without the reserved-pod label and those labelled reserved;
- the old-revision pods labelled not reserved: their verdict is the same for all (the update
  timeout of the UD), so they are kept per revision and listed only when it has passed.

The pods are grouped by their controller reference (:data:`OwnerKey`), as the reconcile finds a
subset's pods: each :class:`OwnerPods` is kept up to date by :meth:`OwnerPods.put` from the pods
that changed alone, and equals the group built from scratch from the same pods (the tests fold
arbitrary sequences of changes to check it). A pod is kept as its JSON (in the planner, its
summary) and decoded only when listed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

import msgspec

from kubesemantics import pod_status
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.owner_refs import controller_ref
from kubesemantics.pod_status import has_ready_condition
from spreadbus.features.uniteddeployment.core.adaptive import time_of, unschedulable_pending
from spreadbus.features.uniteddeployment.core.model import UnitedDeployment
from spreadbus.features.uniteddeployment.core.reservation import RESERVED_POD_LABEL
from spreadbus.features.uniteddeployment.core.subset_workloads import (
    JSON,
    label_of,
    name_of,
    namespace_of,
    subset_of,
    subset_owners,
)

REVISION_LABEL: Final = "apps.kruise.io/controller-revision-hash"
OwnerKey = tuple[str, str, str, str, str]
"""(namespace, apiVersion, kind, name, uid) of a pod's controller reference."""

_POD: Final = msgspec.json.Decoder(dict[str, Any])
_JSON: Final = msgspec.json.Encoder()


class PodFacts(msgspec.Struct, frozen=True, gc=False):
    """What the counts read of one pod, and its JSON for when it must be judged."""

    name: str
    owner: OwnerKey | None
    revision: str
    reserved_label: str | None
    active: bool
    ready: bool
    deleting: bool
    pending: bool
    source: bytes

    @property
    def judged(self) -> bool:
        """Looked at one by one every round (see the module's list)."""
        return self.pending or self.reserved_label is None or self.reserved_label == "true"

    @property
    def steady(self) -> bool:
        """Labelled not reserved and not being deleted: judged alike by revision."""
        return not self.judged and not self.deleting

    def pod(self) -> dict[str, Any]:
        return _POD.decode(self.source)


def facts_of(pod: Mapping[str, Any], source: bytes | None = None) -> PodFacts:
    """The facts of one pod; ``source`` is its JSON when the caller has it."""
    ref = controller_ref(pod)
    owner = (
        None
        if ref is None
        else (
            namespace_of(pod),
            as_str(ref.get("apiVersion")),
            as_str(ref.get("kind")),
            as_str(ref.get("name")),
            as_str(ref.get("uid")),
        )
    )
    reserved = label_of(pod, RESERVED_POD_LABEL)
    return PodFacts(
        name=name_of(pod),
        owner=owner,
        revision=label_of(pod, REVISION_LABEL) or "",
        reserved_label=reserved,
        active=pod_status.active_deleting_any_value(pod),
        ready=has_ready_condition(pod),
        deleting=as_map(pod.get("metadata")).get("deletionTimestamp") is not None,
        pending=unschedulable_pending(pod),
        source=_JSON.encode(pod) if source is None else source,
    )


class OwnerPods:
    """The pods of one controller reference, counted and indexed."""

    __slots__ = ("active", "active_ready", "judged", "pods", "revisions", "steady")

    def __init__(self) -> None:
        self.pods: dict[str, PodFacts] = {}
        self.revisions: Counter[str] = Counter()
        self.active: Counter[str] = Counter()
        self.active_ready: Counter[str] = Counter()
        self.judged: dict[str, PodFacts] = {}
        self.steady: dict[str, dict[str, PodFacts]] = {}

    def put(self, pod_id: str, facts: PodFacts | None) -> None:
        """Replace the facts of ``pod_id`` (None: the pod is gone)."""
        old = self.pods.pop(pod_id, None)
        if old is not None:
            self._count(pod_id, old, -1)
        if facts is not None:
            self.pods[pod_id] = facts
            self._count(pod_id, facts, 1)

    def _count(self, pod_id: str, facts: PodFacts, sign: int) -> None:
        _add(self.revisions, facts.revision, sign)
        if facts.active:
            _add(self.active, facts.revision, sign)
            if facts.ready:
                _add(self.active_ready, facts.revision, sign)
        if facts.judged:
            if sign > 0:
                self.judged[pod_id] = facts
            else:
                del self.judged[pod_id]
        elif facts.steady:
            same = self.steady.setdefault(facts.revision, {})
            if sign > 0:
                same[pod_id] = facts
            else:
                del same[pod_id]
                if not same:
                    del self.steady[facts.revision]

    def __len__(self) -> int:
        return len(self.pods)

    def _state(self) -> tuple[object, ...]:
        return (
            self.pods,
            self.revisions,
            self.active,
            self.active_ready,
            self.judged,
            self.steady,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OwnerPods) and self._state() == other._state()

    __hash__ = None  # type: ignore[assignment]


def _add(counter: Counter[str], key: str, sign: int) -> None:
    value = counter[key] + sign
    if value:
        counter[key] = value
    else:
        del counter[key]


PodGroups = Mapping[OwnerKey, OwnerPods]


def group_pods(pods: Iterable[Mapping[str, Any]]) -> dict[OwnerKey, OwnerPods]:
    """Group pods from scratch (each pod is known by its position)."""
    groups: dict[OwnerKey, OwnerPods] = {}
    for position, pod in enumerate(pods):
        facts = facts_of(pod)
        if facts.owner is not None:
            groups.setdefault(facts.owner, OwnerPods()).put(f"{position:09d}", facts)
    return groups


def groups_by_subset(
    ud: UnitedDeployment,
    subsets: Mapping[str, JSON],
    workloads: Sequence[JSON],
    groups: PodGroups,
) -> dict[str, list[OwnerPods]]:
    """Each subset workload's pod groups, matched as
    :func:`~.subset_workloads.pods_by_subset` matches pods."""
    owners = subset_owners(ud, subsets, workloads)
    found: dict[str, list[OwnerPods]] = {subset: [] for subset in subsets}
    for (namespace, api_version, kind, name, uid), group in groups.items():
        if not group:
            continue
        ref = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
        holder = {
            "metadata": {"namespace": namespace, "ownerReferences": [{**ref, "controller": True}]}
        }
        subset = subset_of(ud, owners, holder)
        if subset is not None:
            found[subset].append(group)
    return found


def _listed(items: Iterable[tuple[str, PodFacts]]) -> list[dict[str, Any]]:
    """The pods, by name as the reconcile lists them."""
    unique = dict(items)
    return [facts.pod() for _, facts in sorted(unique.items(), key=lambda i: (i[1].name, i[0]))]


def pending_pods(groups: Sequence[OwnerPods]) -> list[dict[str, Any]]:
    """The pods Adaptive must judge: the rest are never stuck."""
    return _listed((i, f) for g in groups for i, f in g.judged.items() if f.pending)


def judged_pods(
    groups: Sequence[OwnerPods],
    *,
    updated_revision: str,
    ud_updated_condition: Mapping[str, Any] | None,
    timeout: timedelta,
    now: datetime,
) -> list[dict[str, Any]]:
    """The pods reservation mode must judge one by one; every other pod is judged not reserved
    with no label to write and nothing to wait for.

    An old-revision pod labelled not reserved waits for the UD's update timeout: before it, one
    such pod stands for all (they ask for the same wake-up); after it, all are listed.
    """
    items: list[tuple[str, PodFacts]] = [(i, f) for g in groups for i, f in g.judged.items()]
    if ud_updated_condition is not None:
        timed_out = time_of(ud_updated_condition.get("lastTransitionTime")) + timeout < now
        old = [s for g in groups for r, s in g.steady.items() if r != updated_revision]
        if timed_out:
            items.extend(item for same in old for item in same.items())
        elif old:
            items.append(next(iter(old[0].items())))
    return _listed(items)


def updated_counts(groups: Sequence[OwnerPods], revision: str) -> tuple[int, int]:
    """Active pods on ``revision``, and those Ready."""
    return (
        sum(g.active[revision] for g in groups),
        sum(g.active_ready[revision] for g in groups),
    )


def off_revision(groups: Sequence[OwnerPods], revision: str) -> int:
    return sum(len(g) - g.revisions[revision] for g in groups)


def all_pods(groups: Sequence[OwnerPods]) -> list[dict[str, Any]]:
    """Every pod (a rebalance's budgets match their labels): read only while one is asked."""
    return _listed((i, f) for g in groups for i, f in g.pods.items())
