"""Entries on NATS changed only by compare-and-set, shared by every webhook replica.

A feature that must not let two replicas decide on the same state (WorkloadSpread's subset
slots, a disruption budget) keeps that state in one JetStream key-value entry per object and
changes it only by ``update(key, value, last=revision)``: two replicas that read the same
revision cannot both write; the loser re-reads and decides again, so no interleaving of any
number of replicas decides on a state another has already changed.

The store is generic over the entry: a feature gives it the entry's :class:`EntryCodec` (the
empty entry, encoding and decoding; :class:`~spreadbus.projection.bucket_entries.JsonEntries`
for JSON entries) and pure ``decide`` functions from an entry to a result and the new entry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from nats.aio.client import Client
from nats.js.errors import BadRequestError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from spreadbus.engine.bus_access import BucketSpec

log = logging.getLogger(__name__)

T = TypeVar("T")
E = TypeVar("E")


async def existing_bucket(nc: Client, spec: BucketSpec) -> KeyValue:
    """A feature's bucket, which must exist: the setup step creates it, never a service."""
    return await nc.jetstream().key_value(spec.name)


class EntryCodec(Protocol[E]):
    """How a feature's entries are stored; ``decode`` of an empty body is the empty entry."""

    def empty(self) -> E: ...

    def encode(self, entry: E, /) -> bytes: ...

    def decode(self, data: bytes | None, /) -> E: ...


Decide = Callable[[E], tuple[T, "E | None"]]


@dataclass(frozen=True)
class _Failed:
    error: Exception


class LedgerConflict(RuntimeError):
    """Compare-and-set kept losing until the deadline."""


class LedgerUnavailable(RuntimeError):
    """NATS did not answer the transaction within the deadline (a bucket without a leader)."""


@dataclass
class _Cached(Generic[E]):
    ledger: E
    revision: int


class LedgerStore(Generic[E]):
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

    A transaction takes at most ``deadline_seconds``, waiting on NATS included: a bucket whose
    leader died answers no write until the others elect one (seconds), and a caller that must
    refuse when it cannot write (a disruption budget) has to hear so before its own answer is
    due, not be cut off by it and answered by the failure policy instead.
    """

    def __init__(self, kv: KeyValue, codec: EntryCodec[E], *,
                 deadline_seconds: float = 2.0) -> None:
        self.kv = kv
        self.codec = codec
        self.deadline = deadline_seconds
        self.conflicts = 0
        self.writes = 0
        self._queues: dict[str, list[tuple[Decide[E, Any], asyncio.Future[Any]]]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._cache: dict[str, _Cached[E]] = {}

    async def transact(self, key: str, decide: Callable[[E], tuple[T, E | None]]) -> T:
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

    async def _commit(self, key: str, decides: list[Decide[E, Any]]) -> list[Any]:
        try:
            async with asyncio.timeout(self.deadline):
                return await self._commit_within(key, decides)
        except TimeoutError:
            self._cache.pop(key, None)  # a write cut off may have landed: read afresh
            raise LedgerUnavailable(
                f"ledger entry {key}: no answer from NATS within {self.deadline:g} s") from None

    async def _commit_within(self, key: str, decides: list[Decide[E, Any]]) -> list[Any]:
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
                log.debug("ledger entry written",
                          extra={"ledger": key, "revision": revision, "batch": len(decides)})
                self._cache[key] = _Cached(ledger, revision)
                return outcomes
            self.conflicts += 1
            log.debug("ledger entry conflict", extra={"ledger": key})
            cached = None
            self._cache.pop(key, None)
            if time.monotonic() > give_up:
                raise LedgerConflict(f"ledger entry {key} kept conflicting")

    def revision(self, key: str) -> int:
        """The entry's revision as this store last read or wrote it; 0 when it holds none."""
        cached = self._cache.get(key)
        return cached.revision if cached is not None else 0

    async def current(self, key: str) -> E:
        """The stored ledger, freshly read."""
        cached = await self._read(key)
        self._cache[key] = cached
        return cached.ledger

    async def _read(self, key: str) -> _Cached[E]:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return _Cached(self.codec.empty(), 0)
        return _Cached(self.codec.decode(entry.value), entry.revision or 0)

    async def _write(self, key: str, ledger: E, revision: int) -> int | None:
        data = self.codec.encode(ledger)
        try:
            if revision == 0:
                return await self.kv.create(key, data)
            return await self.kv.update(key, data, last=revision)
        except KeyWrongLastSequenceError:
            return None
        except BadRequestError as exc:
            # Older servers report a lost create as a generic 400 "wrong last sequence".
            if "wrong last sequence" in str(exc).lower():
                return None
            raise
