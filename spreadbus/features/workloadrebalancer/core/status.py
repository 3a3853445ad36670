"""One reconcile of a WorkloadRebalancer: the status to write, the requests to deliver, the TTL.

Karmada's controller, as a pure function (reference §2):

1. the spec is synced into ``status.observedWorkloads``: an entry whose workload is still listed
   keeps its result; one no longer listed stays only if it succeeded; every newly listed workload
   gets an entry without a result; entries are sorted by apiVersion, kind, namespace, name;
2. each entry without a result is decided: the named object is absent or nothing governs its
   placement -> ``Failed``/``ReferencedBindingNotFound`` (never decided again); the governing
   object already carries this request (or a newer one) -> ``Successful``; otherwise the request
   is to be delivered and the entry stays without a result, like Karmada's retried entry, until
   the governing object is seen carrying it;
3. ``finishTime`` becomes now when the entries or ``observedGeneration`` changed and nothing is
   waiting (an edit of the spec therefore postpones the TTL); it is kept otherwise, even absent:
   a stored status already final is not rewritten (``handleWorkloadRebalance``). Such a status
   with a TTL is never deleted; Karmada fails each pass with "finish time should not be nil"
   there, spreadbus leaves it alone until its spec is edited;
4. the TTL is computed from the status just decided (Karmada's #5985: never from the status read
   before): expired at ``finishTime + ttlSecondsAfterFinished``, so a TTL of 0 deletes on the
   pass that finishes.

Planner shards (``owns``, a namespace -> whether this planner decides there): an entry of a
workload in another shard's namespaces is kept as observed, the other shard decides it and writes
it into the same status (each write names the resourceVersion it was decided on, so two shards'
writes never undo each other: the later one fails and is decided again on the newer status). The
status finishes only once no entry waits in any shard, and only the shard owning cluster-scoped
objects (``owns("")``) deletes the rebalancer after its TTL.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import msgspec

from spreadbus.features.workloadrebalancer.core.model import (
    BINDING_NOT_FOUND,
    FAILED,
    SUCCESSFUL,
    ObservedWorkload,
    Status,
    WorkloadRebalancer,
    WorkloadRef,
    to_second,
)


class Placement(msgspec.Struct, frozen=True):
    """What governs a workload's placement, and whether it already holds this request."""

    kind: str  # UnitedDeployment, WorkloadSpread, or a Karmada (Cluster)ResourceBinding
    namespace: str
    name: str
    delivered: bool = False


Resolve = Callable[[WorkloadRef], Placement | None]
"""The placement governing a named object; None when the object is absent or ungoverned."""
Owns = Callable[[str], bool]
"""Whether this planner decides for a namespace ("" for cluster-scoped objects)."""


def _everywhere(namespace: str) -> bool:
    return True


class Trigger(msgspec.Struct, frozen=True):
    workload: WorkloadRef
    placement: Placement


class Sync(msgspec.Struct, frozen=True):
    status: Status
    write: bool
    """The status differs from the one observed: patch it."""
    triggers: tuple[Trigger, ...] = ()
    """Requests to set on governing objects; their entries wait without a result."""
    delete: bool = False
    requeue_at: datetime | None = None
    """When the TTL expires, if it is set and not yet expired."""

    @property
    def finished(self) -> bool:
        """Nothing left to deliver: only an edit of the rebalancer changes its status now."""
        return not self.triggers


def synced_entries(previous: tuple[ObservedWorkload, ...],
                   workloads: tuple[WorkloadRef, ...]) -> list[ObservedWorkload]:
    """The spec merged into the previous entries (step 1), sorted."""
    pending = dict.fromkeys(workloads)
    kept: list[ObservedWorkload] = []
    for entry in previous:
        if entry.workload in pending:
            del pending[entry.workload]
            kept.append(entry)
        elif entry.result == SUCCESSFUL:
            kept.append(entry)
    kept.extend(ObservedWorkload(workload=ref) for ref in pending)
    return sorted(kept, key=lambda e: e.workload.sort_key)


def sync(wr: WorkloadRebalancer, resolve: Resolve, now: datetime,
         owns: Owns = _everywhere) -> Sync:
    old = wr.status
    entries: list[ObservedWorkload] = []
    triggers: list[Trigger] = []
    elsewhere = False
    for entry in synced_entries(old.observed_workloads, wr.workloads):
        if entry.result:
            entries.append(entry)
            continue
        if not owns(entry.workload.namespace):
            entries.append(entry)  # another shard decides it
            elsewhere = True
            continue
        placement = resolve(entry.workload)
        if placement is None:
            entries.append(ObservedWorkload(workload=entry.workload, result=FAILED,
                                            reason=BINDING_NOT_FOUND))
        elif placement.delivered:
            entries.append(ObservedWorkload(workload=entry.workload, result=SUCCESSFUL))
        else:
            entries.append(entry)
            triggers.append(Trigger(workload=entry.workload, placement=placement))
    changed = (tuple(entries) != old.observed_workloads
               or wr.generation != old.observed_generation)
    finish = old.finish_time
    waiting = bool(triggers) or elsewhere
    if not waiting and changed:
        finish = to_second(now)
    status = Status(observed_workloads=tuple(entries), observed_generation=wr.generation,
                    finish_time=finish)
    delete = False
    requeue_at = None
    ttl = wr.ttl_seconds_after_finished
    if ttl is not None and not waiting and finish is not None and owns(""):
        expires = finish + timedelta(seconds=ttl)
        if now >= expires:
            delete = True
        else:
            requeue_at = expires
    return Sync(status=status, write=status != old, triggers=tuple(triggers), delete=delete,
                requeue_at=requeue_at)
