"""Subset slots reserved on NATS by compare-and-set, shared by every webhook replica.

Between the moment the webhook steers a pod into a subset and the moment that pod shows up in
the observation stream, no projection counts it. Kruise bridges that gap by writing
``creatingPods`` into the WorkloadSpread status from inside the admission call. Here the bridge
is one JetStream key-value entry per WorkloadSpread, a :class:`Ledger` of the placement core's
reservations in flight, changed only by ``update(key, value, last=revision)``: two replicas
that read the same revision cannot both write; the loser re-reads and decides again, so no
interleaving of any number of replicas admits more pods to a subset than its limit.

Counting without double counting: a ``creating`` reservation stops counting once the view holds
a pod with its key, a ``deleting`` one once its pod is no longer active (the same rules as
:func:`spreadbus.core.workloadspread.occupancy.loads_from_pods`).

Pruning without losing a pod: a writer drops reservations its own view already reflects, and
raises ``floor`` to the stream sequence its view had reached. A reader whose view is behind
``floor`` might not have seen that pod yet, so it waits until its view reaches ``floor`` before
deciding. Reservations whose pod never appears (a later admission plugin refused it) expire as
the core says (:meth:`Reservation.live`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVar

import msgspec
from nats.js.errors import BadRequestError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from events.reservations import LedgerEntry
from spreadbus.core.workloadspread.occupancy import Reservation

log = logging.getLogger(__name__)

T = TypeVar("T")


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


_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(Ledger)


def encode(ledger: Ledger) -> bytes:
    return _ENCODER.encode(ledger)


def decode(data: bytes | None) -> Ledger:
    """An unreadable entry is treated as empty: only a bug can have written it."""
    if not data:
        return Ledger()
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError:
        log.error("unreadable reservation ledger entry, starting it afresh")
        return Ledger()


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


Decide = Callable[[Ledger], tuple[T, "Ledger | None"]]


@dataclass(frozen=True)
class _Failed:
    error: Exception


class LedgerConflict(RuntimeError):
    """Compare-and-set kept losing until the deadline."""


@dataclass
class _Cached:
    ledger: Ledger
    revision: int


class LedgerStore:
    """Read-decide-write transactions on ledger entries, one writer per revision.

    Transactions on one key are group-committed: while a write for the key is in flight, new
    transactions queue, and the next write applies all of them in arrival order to the ledger
    and stores the result with a single compare-and-set. Under a burst of pod creations this
    costs one NATS round trip per batch instead of one per pod, and contention (retries) only
    arises between replicas. A lost compare-and-set re-reads and re-runs the whole batch, which
    is safe because every ``decide`` is pure. The last entry read or written is cached and
    tried first; a stale cache costs one failed update and a re-read.

    A transaction whose caller stopped waiting (the admission answer timed out) may still be
    committed: its reservation then holds a slot until it expires, which can only under-fill.
    """

    def __init__(self, kv: KeyValue, *, deadline_seconds: float = 2.0) -> None:
        self.kv = kv
        self.deadline = deadline_seconds
        self.conflicts = 0
        self.writes = 0
        self._queues: dict[str, list[tuple[Decide[Any], asyncio.Future[Any]]]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._cache: dict[str, _Cached] = {}

    async def transact(self, key: str, decide: Callable[[Ledger], tuple[T, Ledger | None]]) -> T:
        """Run ``decide`` on the current ledger and store what it returns, atomically.

        ``decide`` is pure and may run several times; it returns its result and the new
        ledger, or ``None`` when nothing needs writing.
        """
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(key, []).append((decide, future))
        if key not in self._workers:
            self._workers[key] = asyncio.create_task(self._drain(key))
        return await future

    async def _drain(self, key: str) -> None:
        try:
            while queue := self._queues.get(key):
                batch = list(queue)
                queue.clear()
                try:
                    outcomes = await self._commit(key, [decide for decide, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, future), outcome in zip(batch, outcomes, strict=True):
                    if future.done():
                        continue
                    if isinstance(outcome, _Failed):
                        future.set_exception(outcome.error)
                    else:
                        future.set_result(outcome)
        finally:
            # No await since the loop's last check: nothing can have been queued meanwhile.
            self._workers.pop(key, None)
            self._queues.pop(key, None)

    async def _commit(self, key: str, decides: list[Decide[Any]]) -> list[Any]:
        give_up = time.monotonic() + self.deadline
        cached = self._cache.get(key)
        while True:
            if cached is None:
                cached = await self._read(key)
            ledger = cached.ledger
            outcomes: list[Any] = []
            for decide in decides:
                try:
                    result, new = decide(ledger)
                except Exception as exc:  # one bad decision must not fail its batch
                    outcomes.append(_Failed(exc))
                    continue
                if new is not None:
                    ledger = new
                outcomes.append(result)
            if ledger == cached.ledger:
                return outcomes
            revision = await self._write(key, ledger, cached.revision)
            if revision is not None:
                self.writes += 1
                log.debug(
                    "reservation ledger written",
                    extra={
                        "ledger": key,
                        "revision": revision,
                        "batch": len(decides),
                        "creating": len(ledger.creating),
                        "deleting": len(ledger.deleting),
                        "floor": ledger.floor,
                    },
                )
                self._cache[key] = _Cached(ledger, revision)
                return outcomes
            self.conflicts += 1
            log.debug("reservation ledger conflict", extra={"ledger": key})
            cached = None
            self._cache.pop(key, None)
            if time.monotonic() > give_up:
                raise LedgerConflict(f"reservation for {key} kept conflicting")

    async def current(self, key: str) -> Ledger:
        """The stored ledger, freshly read."""
        cached = await self._read(key)
        self._cache[key] = cached
        return cached.ledger

    async def _read(self, key: str) -> _Cached:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return _Cached(Ledger(), 0)
        return _Cached(decode(entry.value), entry.revision or 0)

    async def _write(self, key: str, ledger: Ledger, revision: int) -> int | None:
        try:
            if revision == 0:
                return await self.kv.create(key, encode(ledger))
            return await self.kv.update(key, encode(ledger), last=revision)
        except KeyWrongLastSequenceError:
            return None
        except BadRequestError as exc:
            # Older servers report a lost create as a generic 400 "wrong last sequence".
            if "wrong last sequence" in str(exc).lower():
                return None
            raise
