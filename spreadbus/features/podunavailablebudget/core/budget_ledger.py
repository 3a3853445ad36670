"""A budget's spending between two status writes: the entry webhook replicas compare-and-set.

Kruise's webhook spends a PodUnavailableBudget by updating its status with a resourceVersion
precondition. Here the planner alone writes PUB status, and the webhook replicas spend on one
JetStream key-value entry per PUB (keyed as :mod:`events.buckets` says, bucket :data:`BUCKET`),
changed only by compare-and-set through the generic ledger store, so no interleaving of any number
of replicas allows more disruptions than ``unavailableAllowed``.

An entry holds:

- ``seed``: the last PUB status the planner wrote (as any writer last saw it), and ``version``,
  the resourceVersion of the PUB holding it. A writer whose view holds a newer written status
  reseeds the entry from it; a writer whose view is older decides on the entry's seed, so a
  lagging replica never decides on a status another replica has already moved past.
- ``disrupted`` / ``unavailable``: the pods this webhook let go since the seed (pod name -> RFC
  3339 time), which the seed does not list yet. Each costs one from the seed's
  ``unavailableAllowed`` (``spent``).

The planner folds the bucket and writes every live record into the next status (the pod in
``disruptedPods`` or ``unavailablePods``, not counted available), so once a status listing a
record is written, the reseed drops the record: the status accounts for it. Records expire as
Kruise's status entries do (20 s disrupted, 10 s unavailable): after that the pod counts by its
own readiness again.

Safety rests on two facts: the planner writes status with a resourceVersion precondition (a
status computed from an older PUB never lands), and it computes that status from every record it
has folded plus the previous status's maps; so a written status lists every record older than
the ledger revision it read, and the records it does not list stay in the entry and keep costing.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

import msgspec

from events.buckets import stream_of
from kubesemantics.lenient_json import as_map
from kubesemantics.timestamps import parse_time
from spreadbus.engine.bus_access import BucketSpec
from spreadbus.projection.bucket_entries import JsonEntries

BUCKET: Final = "spreadbus-budgets"
STREAM: Final = stream_of(BUCKET)
SPEC: Final = BucketSpec(
    name=BUCKET,
    description="PodUnavailableBudget disruptions allowed by the admission webhook",
    history=1,
    ttl_seconds=24 * 3600,
)

DISRUPTED_EXPIRY: Final = timedelta(seconds=20)
"""How long a deleted or evicted pod stays recorded (Kruise's DeletionTimeout)."""
UNAVAILABLE_EXPIRY: Final = timedelta(seconds=10)
"""How long an updated pod stays recorded (Kruise's UpdatedDelayCheckTime)."""


class BudgetEntry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One PUB's spending since the status it was seeded from."""

    version: int = 0
    """resourceVersion of the PUB whose status is ``seed``; 0: never seeded."""
    seed: dict[str, Any] = {}
    """The PUB status as the planner wrote it (Kruise's JSON)."""
    disrupted: dict[str, str] = {}
    """Pods deleted or evicted since the seed, not listed in it: name -> RFC 3339 time."""
    unavailable: dict[str, str] = {}
    """Pods made unavailable by an update since the seed, not listed in it."""

    @property
    def spent(self) -> int:
        return len(self.disrupted) + len(self.unavailable)


ENTRIES: Final = JsonEntries(BudgetEntry, what="budget")
"""How webhooks write, and the planner reads, a :class:`BudgetEntry`."""


def _records(status: Mapping[str, Any], key: str) -> dict[str, str]:
    """A status map of pod name -> time (``disruptedPods``, ``unavailablePods``), as text."""
    return {str(k): str(v) for k, v in as_map(status.get(key)).items()}


@functools.lru_cache(maxsize=8192)
def _time(at: str) -> datetime | None:
    """Record times repeat on every decision over an entry: each is parsed once."""
    return parse_time(at)


def _live(records: Mapping[str, str], expiry: timedelta, now: datetime) -> dict[str, str]:
    out: dict[str, str] = {}
    for pod, at in records.items():
        when = _time(at)
        if when is not None and when + expiry >= now:
            out[pod] = at
    return out


def reseeded(entry: BudgetEntry, status: Mapping[str, Any] | None, version: int,
             now: datetime) -> BudgetEntry:
    """The entry on the newer of its seed and ``status`` (the PUB's at ``version``), its expired
    records and those the seed lists dropped."""
    if status is not None and version > entry.version:
        seed, at = dict(status), version
    else:
        seed, at = entry.seed, entry.version
    listed = set(_records(seed, "disruptedPods")) | set(_records(seed, "unavailablePods"))
    disrupted = {p: t for p, t in _live(entry.disrupted, DISRUPTED_EXPIRY, now).items()
                 if p not in listed}
    unavailable = {p: t for p, t in _live(entry.unavailable, UNAVAILABLE_EXPIRY, now).items()
                   if p not in listed}
    if (at, disrupted, unavailable) == (entry.version, entry.disrupted, entry.unavailable):
        return entry
    return BudgetEntry(version=at, seed=seed, disrupted=disrupted, unavailable=unavailable)


def effective_status(entry: BudgetEntry) -> dict[str, Any]:
    """The status a decision reads: the seed with this webhook's records spent from it."""
    status = dict(entry.seed)
    allowed = status.get("unavailableAllowed")
    status["unavailableAllowed"] = (allowed if isinstance(allowed, int) else 0) - entry.spent
    for key, own in (("disruptedPods", entry.disrupted), ("unavailablePods", entry.unavailable)):
        merged = {**_records(entry.seed, key), **own}
        if merged:
            status[key] = merged
    return status


def with_decision(entry: BudgetEntry, decided: Mapping[str, Any]) -> BudgetEntry:
    """The entry after a decision wrote ``decided`` (the effective status with a pod recorded):
    the pods it records beyond the effective status become this webhook's records."""
    before = effective_status(entry)
    disrupted = dict(entry.disrupted)
    unavailable = dict(entry.unavailable)
    for key, own in (("disruptedPods", disrupted), ("unavailablePods", unavailable)):
        known = _records(before, key)
        for pod, at in _records(decided, key).items():
            if pod not in known:
                own[pod] = at
    return BudgetEntry(version=entry.version, seed=entry.seed, disrupted=disrupted,
                       unavailable=unavailable)


def records(entry: BudgetEntry) -> dict[str, dict[str, str]]:
    """This webhook's live records for the planner: ``{"disruptedPods": ..., "unavailablePods":
    ...}``."""
    return {"disruptedPods": dict(entry.disrupted), "unavailablePods": dict(entry.unavailable)}
