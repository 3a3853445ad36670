"""Reservation ledger transactions decided only by a view that has caught up with the ledger.

A writer that prunes reservations its view already reflects (a creating one whose pod it sees,
a deleting one whose pod is gone) raises the entry's floor to its view's stream position
(:mod:`spreadbus.runtime.ledger`). A replica whose view is behind that floor would count such a
pod neither as observed nor as reserved, and could admit one pod too many. :func:`transact`
therefore checks the floor inside the compare-and-set transaction and, when the view is behind,
leaves the entry unchanged and waits for the view to catch up before deciding again.

Trade-off: a lagging replica delays its answer (bounded by ``catch_up_timeout``, then the review
fails open under the pod paths' failure policy) rather than decide from a view that could
overfill a subset. A floor the view cannot reach even though the follower reports the stream
drained can only come from an earlier incarnation of the observation stream (deleted and created
again); it is lowered to the view's position instead of blocking spreading for good.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from spreadbus.features.workloadspread.admission.view_progress import ViewProgress
from spreadbus.features.workloadspread.core.reservation_contract import Ledger
from spreadbus.runtime.ledger import LedgerStore

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class _Behind:
    """The ledger reflects observations this view has not folded yet."""

    floor: int


async def transact(
    store: LedgerStore[Ledger],
    key: str,
    decide: Callable[[Ledger], tuple[T, Ledger | None]],
    *,
    progress: ViewProgress,
    catch_up_timeout: float,
    stream_drained: Callable[[], bool],
) -> T:
    """``store.transact(key, decide)``, with ``decide`` only ever run once the view (the one
    ``progress`` follows) has folded the entry's floor."""
    view = progress.view
    unreachable = -1

    def guarded(ledger: Ledger) -> tuple[T | _Behind, Ledger | None]:
        if view.seq < ledger.floor:
            if ledger.floor != unreachable:
                return _Behind(ledger.floor), None
            ledger = Ledger(creating=ledger.creating, deleting=ledger.deleting, floor=0)
        return decide(ledger)

    while True:
        result = await store.transact(key, guarded)
        if not isinstance(result, _Behind):
            return result
        if await progress.wait_for(result.floor, catch_up_timeout):
            continue
        if not stream_drained():
            raise TimeoutError(f"view behind the reservation ledger at {result.floor}")
        log.warning(
            "reservation ledger ahead of a drained observation stream; lowering its floor",
            extra={"ledger": key, "floor": result.floor, "view_seq": view.seq},
        )
        unreachable = result.floor
