"""A WorkloadSpread's subset slots in flight: the entry the webhook replicas compare-and-set.

Between the moment the webhook steers a pod into a subset and the moment that pod shows up in
the observation stream, no projection counts it. Kruise bridges that gap by writing
``creatingPods`` into the WorkloadSpread status from inside the admission call. Here the bridge
is one JetStream key-value entry per WorkloadSpread (:mod:`.core.reservation_contract`), a
:class:`Ledger` of the placement core's reservations in flight, written through the generic
compare-and-set store (:class:`spreadbus.runtime.ledger.LedgerStore`), so no interleaving of any
number of replicas admits more pods to a subset than its limit.

Counting without double counting: a ``creating`` reservation stops counting once the view holds
a pod with its key, a ``deleting`` one once its pod no longer occupies the slot (the core's rule,
:func:`spreadbus.features.workloadspread.core.occupancy.counted`). Pruning drops only
what can never count again: a ``deleting`` reservation is kept while its pod is active anywhere.

Pruning without losing a pod: a writer drops reservations its own view already reflects, and
raises ``floor`` to the stream sequence its view had reached. A reader whose view is behind
``floor`` might not have seen that pod yet, so it waits until its view reaches ``floor`` before
deciding. Reservations whose pod never appears (a later admission plugin refused it) expire as
the core says (:meth:`Reservation.live`), judged by the time the writer's view is current as of
(:func:`~spreadbus.features.workloadspread.core.occupancy.expiry_clock`): a view lagging more
than 30 s behind must not drop the reservation of a pod that exists but that it has not seen.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from nats.js.kv import KeyValue

from spreadbus.features.workloadspread.core.reservation_contract import ENTRIES, Ledger
from spreadbus.runtime.ledger import LedgerStore


def pruned(
    ledger: Ledger,
    *,
    now: datetime,
    seen: Callable[[str], bool],
    active: Callable[[str], bool],
    view_seq: int,
) -> Ledger:
    """Drop reservations the view already reflects or that expired; raise ``floor`` if needed.

    ``seen(key)``: the view holds a pod with this reservation key.
    ``active(name)``: the view holds this pod as active.
    """
    creating = {k: r for k, r in ledger.creating.items() if r.live(now) and not seen(k)}
    deleting = {n: r for n, r in ledger.deleting.items() if r.live(now) and active(n)}
    if len(creating) == len(ledger.creating) and len(deleting) == len(ledger.deleting):
        return ledger
    reflected = any(seen(k) for k in ledger.creating) or any(not active(n) for n in ledger.deleting)
    floor = max(ledger.floor, view_seq) if reflected else ledger.floor
    return Ledger(creating=creating, deleting=deleting, floor=floor)


def reservation_store(kv: KeyValue, *, deadline_seconds: float = 2.0) -> LedgerStore[Ledger]:
    """The compare-and-set store of WorkloadSpread ledgers in ``kv``."""
    return LedgerStore(kv, ENTRIES, deadline_seconds=deadline_seconds)
