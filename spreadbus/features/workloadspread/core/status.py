"""One subset's status, recomputed from its pods, the previous status and the clock.

This is Kruise's ``calculateWorkloadSpreadSubsetStatus`` step by step, because dashboards and
scripts read ``missingReplicas`` and its order-dependence is visible to them:

1. ``missing`` starts at the scaled maxReplicas (``-1`` when unlimited, and stays ``-1``);
2. for each pod in the bucket, in order: drop its creating entry (keyed by the annotation's uid,
   else its name; done even for inactive pods); skip inactive pods; count it and decrement
   ``missing`` if positive; if it has a deleting entry younger than 15 s keep the entry and
   increment ``missing`` while it is below the maximum (an older one is dropped: the delete
   failed);
3. each creating entry left (its pod not seen yet) younger than 30 s is kept and decrements
   ``missing`` if positive; an older one is dropped (the create failed).

Entries exactly at their deadline are kept (Kruise drops only those strictly before now). Every
kept entry contributes its deadline to the wake-up times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import msgspec

from kubesemantics import pod_status
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import Subset, SubsetStatus
from spreadbus.features.workloadspread.core.occupancy import (
    CREATE_TIMEOUT,
    DELETE_TIMEOUT,
    expired,
    subset_limit,
)
from spreadbus.features.workloadspread.core.pod_state import Pod


class SubsetOutcome(msgspec.Struct, frozen=True):
    status: SubsetStatus
    wake_at: list[datetime]
    failed_creates: list[str]  # reservation keys whose pod never appeared
    failed_deletes: list[str]  # pods that were expected to go and did not


def subset_status(
    subset: Subset,
    pods: Sequence[Pod],
    *,
    creating: Mapping[str, datetime],
    deleting: Mapping[str, datetime],
    replicas: int,
    now: datetime,
) -> SubsetOutcome:
    """The subset's status (without conditions) from its bucket and the entries in flight."""
    limit = subset_limit(subset, replicas)
    maximum = -1 if limit is None else limit
    missing = maximum
    pending = dict(creating)
    kept_deleting: dict[str, datetime] = {}
    wake: list[datetime] = []
    failed_creates: list[str] = []
    failed_deletes: list[str] = []
    active = 0
    for pod in pods:
        pending.pop(pod_state.creating_key(pod), None)
        if not pod_status.active_deleting_truthy(pod):
            continue
        active += 1
        if missing > 0:
            missing -= 1
        name = pod_state.name(pod)
        if name in deleting:
            at = deleting[name]
            if expired(at, DELETE_TIMEOUT, now):
                failed_deletes.append(name)
            else:
                kept_deleting[name] = at
                if missing < maximum:
                    missing += 1
                wake.append(at + DELETE_TIMEOUT)
    kept_creating: dict[str, datetime] = {}
    for key, at in pending.items():
        if expired(at, CREATE_TIMEOUT, now):
            failed_creates.append(key)
        else:
            kept_creating[key] = at
            if missing > 0:
                missing -= 1
            wake.append(at + CREATE_TIMEOUT)
    return SubsetOutcome(
        status=SubsetStatus(
            name=subset.name,
            replicas=active,
            missing_replicas=missing,
            creating_pods=kept_creating,
            deleting_pods=kept_deleting,
        ),
        wake_at=wake,
        failed_creates=failed_creates,
        failed_deletes=failed_deletes,
    )
