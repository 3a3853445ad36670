"""Subset loads counted from the view and the reservation ledger, carried through a batch.

A pod decision needs, for the pod's version, each subset's :class:`SubsetLoad`: the active pods the
view holds there, plus the ledger's reservations the view does not reflect yet. Both are the
core's counting rule (:func:`spreadbus.features.workloadspread.core.occupancy.count_loads`, which
:func:`~spreadbus.features.workloadspread.core.occupancy.loads_from_pods` runs over a scan of the
pods) run over the view's indexes of the same pod readings. Counting prunes and walks the whole
ledger.

Group commit (:class:`spreadbus.runtime.ledger.LedgerStore`) runs a batch's decisions back to
back, each on the ledger the previous one returned, with no await in between. While the view
has not moved, the previous count plus the reservation it added is exact, so only the first
decision of a batch (or one after the view moved, a retry, another version) counts the whole
ledger. Trade-off: one remembered tally per WorkloadSpread, valid only while the ledger, the
view's position, the spread and the version are the very ones it was counted for; anything else
recounts. Property tests check that a carried count always equals a recount, and that a count
from the view equals the full recount over the pods it folded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from spreadbus.features.workloadspread.admission.reservation_ledger import pruned
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.core.model import WorkloadSpread
from spreadbus.features.workloadspread.core.occupancy import (
    Reservation,
    SubsetLoad,
    apply_reservation,
    count_loads,
    reservation_counts,
)
from spreadbus.features.workloadspread.core.reservation_contract import Ledger


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
        """The pruned ledger and one version's loads, carried over from the previous decision;
        ``now`` is the clock reservations expire by (the view's, not the wall clock's)."""
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
        occupied = self.view.occupied(spread.namespace, spread.name)
        loads = count_loads(spread, occupied, ledger.reservations(), version=version)
        return loads.get(version, {})

    def _counts(self, spread: WorkloadSpread, reservation: Reservation) -> bool:
        """Whether the view does not reflect ``reservation`` yet, so it still counts."""
        occupied = self.view.occupied(spread.namespace, spread.name)
        return reservation_counts(spread, reservation, occupied)
