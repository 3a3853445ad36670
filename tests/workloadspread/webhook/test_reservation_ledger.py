"""Reservations by compare-and-set on a real NATS key-value bucket."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Literal

import nats
from nats.aio.client import Client

from events.buckets import entry_key as ledger_key
from spreadbus.features.workloadspread.admission.reservation_bucket import reservation_bucket
from spreadbus.features.workloadspread.admission.reservation_ledger import (
    pruned,
    reservation_store,
)
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.core.reservation_contract import ENTRIES, Ledger
from spreadbus.runtime.nats_server import NatsServer

LIMITS = {"zone-a": 7, "zone-b": 5}
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
Decide = Callable[[Ledger], tuple[str | None, Ledger | None]]


def reservation(
    pod: str, subset: str, kind: Literal["creating", "deleting"], at: datetime = NOW
) -> Reservation:
    return Reservation("default/ws", "v1", subset, pod, kind, at)


def take_first_free(pod: str) -> Decide:
    """A subset choice for the test: first subset in order with room, else none."""

    def decide(ledger: Ledger) -> tuple[str | None, Ledger | None]:
        for subset, limit in LIMITS.items():
            used = sum(1 for r in ledger.creating.values() if r.subset == subset)
            if used < limit:
                return subset, ledger.with_reservation(reservation(pod, subset, "creating"))
        return None, None

    return decide


async def test_replicas_racing_for_slots_never_overfill_a_subset(nats_server: NatsServer) -> None:
    replicas: list[Client] = [await nats.connect(nats_server.url) for _ in range(3)]
    try:
        stores = [
            reservation_store(await reservation_bucket(nc), deadline_seconds=30) for nc in replicas
        ]
        key = ledger_key("c1", "default", "ws")
        rng = random.Random(7)

        async def admit(i: int) -> str | None:
            store = stores[rng.randrange(len(stores))]
            return await store.transact(key, take_first_free(f"pod-{i}"))

        chosen = await asyncio.gather(*(admit(i) for i in range(40)))
        assert chosen.count("zone-a") == 7
        assert chosen.count("zone-b") == 5
        assert chosen.count(None) == 28
        stored = await stores[0].current(key)
        assert len(stored.creating) == 12
        assert sum(s.conflicts for s in stores) > 0, "the replicas must actually have raced"
    finally:
        for nc in replicas:
            await nc.close()


async def test_a_decision_that_changes_nothing_writes_nothing(nats_server: NatsServer) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        kv = await reservation_bucket(nc)
        store = reservation_store(kv)
        result = await store.transact("c1.default.ws", lambda ledger: ("same", None))
        assert result == "same"
        status = await kv.status()
        assert status.values == 0
    finally:
        await nc.close()


def test_keys_escape_names_into_what_the_bucket_accepts() -> None:
    assert ledger_key("c1", "team.a", "ws_1") == "c1.team=2Ea.ws=5F1"


def test_pruning_drops_observed_and_expired_reservations_and_raises_the_floor() -> None:
    ledger = Ledger(
        creating={
            "seen": reservation("seen", "a", "creating"),
            "unseen": reservation("unseen", "a", "creating"),
            "old": reservation("old", "a", "creating", NOW - timedelta(minutes=5)),
        },
        deleting={
            "gone": reservation("gone", "a", "deleting"),
            "still": reservation("still", "b", "deleting"),
        },
        floor=3,
    )
    result = pruned(
        ledger,
        now=NOW + timedelta(seconds=1),
        seen=lambda key: key == "seen",
        active=lambda name: name == "still",
        view_seq=42,
    )
    assert set(result.creating) == {"unseen"}
    assert set(result.deleting) == {"still"}
    assert result.floor == 42


def test_expiry_alone_does_not_raise_the_floor() -> None:
    ledger = Ledger(
        creating={"old": reservation("old", "a", "creating", NOW - timedelta(minutes=5))},
        floor=3,
    )
    result = pruned(ledger, now=NOW, seen=lambda k: False, active=lambda n: True, view_seq=42)
    assert result.creating == {}
    assert result.floor == 3


def test_a_ledger_round_trips_through_its_stored_form() -> None:
    ledger = Ledger(creating={"p": reservation("p", "a", "creating")}, floor=9)
    assert ENTRIES.decode(ENTRIES.encode(ledger)) == ledger
    assert ENTRIES.decode(b"garbage") == Ledger()


async def test_a_burst_on_one_replica_is_committed_in_few_writes(nats_server: NatsServer) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        store = reservation_store(await reservation_bucket(nc))
        key = ledger_key("c1", "default", "burst")
        chosen = await asyncio.gather(
            *(store.transact(key, take_first_free(f"pod-{i}")) for i in range(50))
        )
        assert Counter(chosen) == {"zone-a": 7, "zone-b": 5, None: 38}
        # Arrival order is kept: the first twelve pods got the slots.
        assert chosen[:12] == ["zone-a"] * 7 + ["zone-b"] * 5
        assert 1 <= store.writes < 12
        assert len((await store.current(key)).creating) == 12
    finally:
        await nc.close()


async def test_a_decision_that_raises_fails_only_its_own_transaction(
    nats_server: NatsServer,
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        store = reservation_store(await reservation_bucket(nc))
        key = ledger_key("c1", "default", "mixed")

        def broken(ledger: Ledger) -> tuple[str | None, Ledger | None]:
            raise ValueError("bad decision")

        results = await asyncio.gather(
            store.transact(key, take_first_free("a")),
            store.transact(key, broken),
            store.transact(key, take_first_free("b")),
            return_exceptions=True,
        )
        assert results[0] == "zone-a"
        assert isinstance(results[1], ValueError)
        assert results[2] == "zone-a"
    finally:
        await nc.close()
