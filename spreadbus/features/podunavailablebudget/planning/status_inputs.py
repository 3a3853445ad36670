"""The core's status computation, given the webhook's records as part of the budget's status.

The core computes a status from a budget whose status maps hold the pods already recorded as
disrupted or unavailable, exactly as Kruise's controller does from the freshest PUB. The online
side has a second source of such records, the budget bucket, so they are merged into the maps
first; records the computation drops because their pod is gone are listed again (until they
expire) so that every webhook replica can see a written status that accounts for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubesemantics.timestamps import parse_time
from spreadbus.features.podunavailablebudget.core.budget import compute_status
from spreadbus.features.podunavailablebudget.core.budget_ledger import (
    DISRUPTED_EXPIRY,
    UNAVAILABLE_EXPIRY,
)
from spreadbus.features.podunavailablebudget.core.model import from_object, status_to_json
from spreadbus.features.podunavailablebudget.core.workloads import Workloads


@dataclass(frozen=True)
class Computed:
    status: dict[str, Any]
    requeue_at: datetime | None
    unlinked: list[dict[str, Any]]
    """Pods of the budget without the related-pub annotation."""


def with_records(budget: Mapping[str, Any],
                 records: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """The budget with the records merged into its status maps (an older time wins)."""
    status = dict(budget.get("status") or {}) if isinstance(budget.get("status"), Mapping) else {}
    for key, extra in records.items():
        if not extra:
            continue
        current = status.get(key)
        merged = dict(current) if isinstance(current, Mapping) else {}
        for pod, at in extra.items():
            merged.setdefault(pod, at)
        status[key] = merged
    return {**budget, "status": status}


def listed_again(status: dict[str, Any],
                 records: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """``status`` with every record it dropped put back (the caller passes live records only)."""
    out = dict(status)
    for key, extra in records.items():
        if not extra:
            continue
        current = out.get(key)
        merged = dict(current) if isinstance(current, Mapping) else {}
        for pod, at in extra.items():
            merged.setdefault(pod, at)
        out[key] = dict(sorted(merged.items()))
    return out


def compute(budget: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
            workloads: Sequence[Mapping[str, Any]], records: Mapping[str, Mapping[str, str]],
            now: datetime) -> Computed:
    """The status to write for ``budget`` with the webhook's live ``records``."""
    pub = from_object(with_records(budget, records))
    computed = compute_status(pub, workloads=Workloads(workloads), pods=pods, now=now)
    status = listed_again(status_to_json(computed.status), records)
    expiries = [t for t in (_expiry(at, DISRUPTED_EXPIRY)
                            for at in records.get("disruptedPods", {}).values()) if t]
    expiries += [t for t in (_expiry(at, UNAVAILABLE_EXPIRY)
                             for at in records.get("unavailablePods", {}).values()) if t]
    if computed.requeue_at is not None:
        expiries.append(computed.requeue_at)
    wanted = set(computed.pods_to_annotate)
    unlinked = [dict(p) for p in pods
                if str((p.get("metadata") or {}).get("name") or "") in wanted]
    return Computed(status=status, requeue_at=min(expiries) if expiries else None,
                    unlinked=unlinked)


def _expiry(at: str, after: timedelta) -> datetime | None:
    when = parse_time(at)
    return None if when is None else when + after
