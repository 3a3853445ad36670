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
  message per WorkloadSpread: the fold needs no snapshot and is rebuilt on every start;
- a writer prunes reservations its own view already reflects and raises the ledger's ``floor``
  to the observation-stream sequence that view had reached. A reader whose projection of the
  ``KUBE`` stream is behind ``floor`` could miss a pod that is no longer reserved, so the rule
  defers that WorkloadSpread until the projection reaches ``floor`` (:meth:`floor`).

A deleted or purged key arrives as an empty body and reads as an empty ledger. An entry that
cannot be decoded is counted in ``skipped`` and reads as empty too: only a bug can write one.

Signatures::

    ReservationLedgers(cluster: str)
        .apply(seq: int, subject: str, data: bytes) -> str | None   # the WorkloadSpread key touched
        .reservations(ws_key: str) -> list[Reservation]              # ws_key: "<namespace>.<name>"
        .floor(ws_key: str) -> int
    RESERVATIONS_RESOURCE: the pseudo resource key rules see in ``changed`` for a ledger change
"""

from __future__ import annotations

from typing import Final

import msgspec

from events.reservations import LedgerEntry, key_tokens, subject_prefix
from spreadbus.features.workloadspread.core.occupancy import Reservation

RESERVATIONS_RESOURCE: Final = "$reservations"
"""``changed`` carries ``(RESERVATIONS_RESOURCE, <namespace>.<name>)`` when a ledger changes."""


_Ledger = LedgerEntry[Reservation]


_DECODE: Final = msgspec.json.Decoder(_Ledger)


class ReservationLedgers:
    def __init__(self, cluster: str) -> None:
        self._prefix = subject_prefix(cluster)
        self.last_seq = 0
        self.skipped = 0
        self._ledgers: dict[str, _Ledger] = {}

    def apply(self, seq: int, subject: str, data: bytes) -> str | None:
        if seq <= self.last_seq:
            return None
        self.last_seq = seq
        if not subject.startswith(self._prefix):
            return None
        key = key_tokens(subject[len(self._prefix):])
        if key.count(".") != 1:
            self.skipped += 1
            return None
        ledger = _Ledger()
        if data:
            try:
                ledger = _DECODE.decode(data)
            except msgspec.DecodeError:
                self.skipped += 1
        if ledger.creating or ledger.deleting or ledger.floor:
            self._ledgers[key] = ledger
        else:
            self._ledgers.pop(key, None)
        return key

    def reservations(self, ws_key: str) -> list[Reservation]:
        ledger = self._ledgers.get(ws_key)
        if ledger is None:
            return []
        return [*ledger.creating.values(), *ledger.deleting.values()]

    def floor(self, ws_key: str) -> int:
        ledger = self._ledgers.get(ws_key)
        return 0 if ledger is None else ledger.floor
