"""Subset loads counted from the view and the reservation ledger, carried through a batch.

A pod decision needs, for the pod's version, each subset's :class:`SubsetLoad`: the active pods the
view holds there, plus the ledger's reservations the view does not reflect yet (a creating one until
a pod with its key is seen, a deleting one while its pod is still active in that slot; the rules of
:func:`spreadbus.features.workloadspread.core.occupancy.loads_from_pods`). Counting prunes and walks
the whole ledger.

Group commit (:class:`spreadbus.runtime.ledger.LedgerStore`) runs a batch's decisions back to
back, each on the ledger the previous one returned, with no await in between. While the view
has not moved, the previous count plus the reservation it added is exact, so only the first
decision of a batch (or one after the view moved, a retry, another version) counts the whole
ledger. Trade-off: one remembered tally per WorkloadSpread, valid only while the ledger, the
view's position, the spread and the version are the very ones it was counted for; anything else
recounts. A property test checks that a carried count always equals a recount.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from spreadbus.features.workloadspread.admission.reservation_ledger import Ledger, pruned
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.core.model import WorkloadSpread
from spreadbus.features.workloadspread.core.occupancy import (
    Reservation,
    SubsetLoad,
    apply_reservation,
)


@dataclass(frozen=True)
class _Tally:
    ledger: Ledger
    seq: int
    spread: WorkloadSpread
    version: str
    loads: dict[str, SubsetLoad]


class ReservationTally:
    """Per WorkloadSpread: the last ledger a decision returned and the loads it counted."""

    def __init__(self, view: View) -> None:
        self.view = view
        self._tallies: dict[tuple[str, str], _Tally] = {}

    def tally(
        self, spread: WorkloadSpread, version: str, ledger: Ledger, now: datetime
    ) -> tuple[Ledger, dict[str, SubsetLoad]]:
        """The pruned ledger and one version's loads, carried over from the previous decision."""
        known = self._tallies.get((spread.namespace, spread.name))
        if (
            known is not None
            and known.ledger is ledger
            and known.seq == self.view.seq
            and known.spread is spread
            and known.version == version
        ):
            return ledger, known.loads
        current = self.prune(ledger, spread.namespace, now)
        return current, self.loads(spread, version, current)

    def record(
        self,
        spread: WorkloadSpread,
        version: str,
        current: Ledger,
        loads: dict[str, SubsetLoad],
        reservation: Reservation | None,
    ) -> Ledger:
        """The ledger after a decision, with its tally remembered for the next one."""
        if reservation is not None:
            current = current.with_reservation(reservation)
            if self._counts(spread, reservation):
                loads = apply_reservation({version: loads}, reservation)[version]
        self._tallies[(spread.namespace, spread.name)] = _Tally(
            current, self.view.seq, spread, version, loads
        )
        return current

    def prune(self, ledger: Ledger, namespace: str, now: datetime) -> Ledger:
        """The ledger without what the view already reflects or what expired."""
        return pruned(
            ledger,
            now=now,
            seen=lambda key: self.view.seen(namespace, key),
            active=lambda name: self.view.active(namespace, name),
            view_seq=self.view.seq,
        )

    def loads(self, spread: WorkloadSpread, version: str, ledger: Ledger) -> dict[str, SubsetLoad]:
        """Subset loads of one version: active pods from the view, reservations not yet seen."""
        active: dict[str, int] = {}
        for (slot_version, subset), names in self.view.slots_of(
            spread.namespace, spread.name
        ).items():
            if slot_version == version and names:
                active[subset] = len(names)
        # Gathered in place: rebuilding a subset's load per reservation is O(ledger^2).
        creating: dict[str, dict[str, datetime]] = {}
        deleting: dict[str, dict[str, datetime]] = {}
        for reservation in ledger.reservations():
            if reservation.version != version or not self._counts(spread, reservation):
                continue
            gathered = creating if reservation.kind == "creating" else deleting
            gathered.setdefault(reservation.subset, {})[reservation.pod] = reservation.at
        subsets = dict.fromkeys([*active, *creating, *deleting])
        return {
            subset: SubsetLoad(
                active=active.get(subset, 0),
                creating=creating.get(subset, {}),
                deleting=deleting.get(subset, {}),
            )
            for subset in subsets
        }

    def _counts(self, spread: WorkloadSpread, reservation: Reservation) -> bool:
        """Whether the view does not reflect ``reservation`` yet, so it still counts."""
        if reservation.kind == "creating":
            return not self.view.seen(spread.namespace, reservation.pod)
        slot = (reservation.version, reservation.subset)
        return reservation.pod in self.view.active_in(spread.namespace, spread.name, slot)
