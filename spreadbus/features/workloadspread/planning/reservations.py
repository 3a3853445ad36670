"""The webhook's reservations in flight, folded from the reservation ledger's own stream.

The planner needs the admissions whose pods it has not observed yet (``creatingPods``) and the
deletions that have not landed (``deletingPods``) to write a status with the right
``missingReplicas``. Two sources carry them: the ``Admission`` events and the key-value bucket
``spreadbus-reservations`` (stream ``KV_spreadbus-reservations``, one key per WorkloadSpread).

The bucket is the source of truth, and this fold reads it:

- a webhook answers only after its compare-and-set on the bucket succeeded, so every slot it gave
  away is in the bucket before the pod exists; ``Admission`` events are published afterwards and
  best-effort, so a webhook that dies between its answer and the publish loses one;
- the bucket keeps one revision per key, so replaying its stream from the start costs one
  message per WorkloadSpread: the fold needs no snapshot and is rebuilt on every start
  (:class:`~spreadbus.projection.bucket_entries.BucketFold`);
- a writer prunes reservations its own view already reflects and raises the ledger's ``floor``
  to the observation-stream sequence that view had reached. A reader whose projection of the
  ``KUBE`` stream is behind ``floor`` could miss a pod that is no longer reserved, so the rule
  defers that WorkloadSpread until the projection reaches ``floor`` (:meth:`floor`).

A deleted or purged key arrives as an empty body and reads as an empty ledger, as does an entry
that cannot be decoded: only a bug can write one.

The fold keeps every cluster's ledgers; each cluster's rule reads its own.

Signatures::

    ReservationLedgers()
        .apply(seq: int, subject: str, data: bytes) -> tuple[str, str] | None
            # the cluster and WorkloadSpread key ("<namespace>.<name>")
        .of(cluster: str) -> ClusterEntries[Ledger]   # .get(ws_key).reservations(), .floor
    RESERVATIONS_RESOURCE: the pseudo resource rules see in ``changed`` for a ledger change
"""

from __future__ import annotations

from typing import Final

from spreadbus.features.workloadspread.core.reservation_contract import BUCKET, ENTRIES, Ledger
from spreadbus.projection.bucket_entries import BucketFold

RESERVATIONS_RESOURCE: Final = "$reservations"
"""``changed`` carries ``(side_resource_key(cluster, RESERVATIONS_RESOURCE),
<namespace>.<name>)`` when a ledger of ``cluster`` changes."""


def _holds_anything(ledger: Ledger) -> bool:
    return bool(ledger.creating or ledger.deleting or ledger.floor)


class ReservationLedgers(BucketFold[Ledger]):
    def __init__(self) -> None:
        super().__init__(BUCKET, ENTRIES, live=_holds_anything)
