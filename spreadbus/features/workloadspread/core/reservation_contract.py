"""The reservation ledger's wire contract: bucket and entry schema.

The admission webhook reserves subset slots in the JetStream key-value bucket ``BUCKET``
(stream ``STREAM``), one entry per WorkloadSpread keyed as every feature bucket is
(:mod:`events.buckets`), changed only by compare-and-set. The planner folds the bucket's stream
into WorkloadSpread status; any subscriber may read it the same way, so its shape is part of
the bus contract like the messages in :mod:`events.messages`.

Entries. JSON of :class:`LedgerEntry`: the reservations in flight by pod key (``creating``,
the pod's name or the uid generated for a pod admitted before it had a name) and by pod name
(``deleting``), and ``floor``, the observation-stream sequence a reader's view must have reached
before it may trust the entry (the writer pruned reservations its view already reflected). A
deleted or purged key reads as an empty body, which means an empty ledger.

``LedgerEntry`` is generic over the reservation type so that a reader decodes straight into its
own equivalent struct (the placement core's ``Reservation`` has exactly :class:`ReservedSlot`'s
fields, and :class:`Ledger` is the entry of those); :class:`ReservedSlot` is the schema published
for everyone else.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Generic, Literal, TypeVar

import msgspec

from events.buckets import stream_of
from spreadbus.engine.bus_access import BucketSpec
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.projection.bucket_entries import JsonEntries

BUCKET: Final = "spreadbus-reservations"
STREAM: Final = stream_of(BUCKET)
SPEC: Final = BucketSpec(
    name=BUCKET,
    description="WorkloadSpread subset slots reserved by the admission webhook",
    history=1,  # one revision per key is all compare-and-set needs
    ttl_seconds=24 * 3600,  # an entry untouched for a day holds only expired reservations
)

R = TypeVar("R")


class ReservedSlot(msgspec.Struct, frozen=True):
    """A slot taken (``creating``) or freed (``deleting``) in one subset of one version."""

    workloadspread: str
    """``namespace/name`` of the WorkloadSpread."""
    version: str
    subset: str
    pod: str
    """Pod name, or the uid generated for a pod admitted before it had a name."""
    kind: Literal["creating", "deleting"]
    at: datetime
    """When the webhook admitted the change (RFC 3339)."""


class LedgerEntry(msgspec.Struct, Generic[R], frozen=True, kw_only=True, omit_defaults=True):
    """One WorkloadSpread's reservations in flight; unknown fields are ignored on decode."""

    creating: dict[str, R] = {}
    deleting: dict[str, R] = {}
    floor: int = 0


class Ledger(LedgerEntry[Reservation], frozen=True, kw_only=True, omit_defaults=True):
    """Reservations in flight for one WorkloadSpread, in the bus's wire schema."""

    def reservations(self) -> list[Reservation]:
        return [*self.creating.values(), *self.deleting.values()]

    def with_reservation(self, reservation: Reservation) -> Ledger:
        if reservation.kind == "creating":
            creating = {**self.creating, reservation.pod: reservation}
            return Ledger(creating=creating, deleting=self.deleting, floor=self.floor)
        deleting = {**self.deleting, reservation.pod: reservation}
        return Ledger(creating=self.creating, deleting=deleting, floor=self.floor)


ENTRIES: Final = JsonEntries(Ledger, what="reservation ledger")
"""How webhooks write, and the planner reads, a :class:`Ledger`."""
