"""The reservation ledger is one contract: the webhook writes it, the planner and others read it."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import nats
from nats.js.api import DeliverPolicy

from events.buckets import entry_key
from spreadbus.features.workloadspread.admission.reservation_bucket import reservation_bucket
from spreadbus.features.workloadspread.admission.reservation_ledger import reservation_store
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.core.reservation_contract import (
    BUCKET,
    SPEC,
    STREAM,
    Ledger,
    LedgerEntry,
    ReservedSlot,
)
from spreadbus.features.workloadspread.feature import FEATURE
from spreadbus.features.workloadspread.planning.reservations import ReservationLedgers
from spreadbus.runtime.nats_server import NatsServer

AT = datetime(2026, 3, 1, 8, 30, tzinfo=UTC)


def test_the_core_reservation_has_exactly_the_published_slot_fields() -> None:
    core = [(f.name, f.type) for f in msgspec.structs.fields(Reservation)]
    wire = [(f.name, f.type) for f in msgspec.structs.fields(ReservedSlot)]
    assert core == wire


async def test_a_ledger_the_webhook_writes_is_read_by_the_planner_and_a_plain_subscriber(
    nats_server: NatsServer,
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        kv = await reservation_bucket(nc)
        store = reservation_store(kv)
        # A cluster and a name that need escaping, so the key layout is exercised too.
        key = entry_key("east.1", "team a", "web%spread")
        taken = Reservation("team a/web%spread", "v7", "zone-b", "uid-1", "creating", AT)
        freed = Reservation("team a/web%spread", "v7", "zone-a", "web-0", "deleting", AT)

        def decide(ledger: Ledger) -> tuple[None, Ledger]:
            return None, ledger.with_reservation(taken).with_reservation(freed)

        await store.transact(key, decide)

        js = nc.jetstream()
        sub = await js.subscribe(
            f"$KV.{BUCKET}.>",
            stream=STREAM,
            deliver_policy=DeliverPolicy.ALL,
            ordered_consumer=True,
        )
        message = await sub.next_msg(timeout=5)
        await sub.unsubscribe()

        planner = ReservationLedgers()
        found = planner.apply(message.metadata.sequence.stream, message.subject, message.data)
        assert found is not None
        cluster, ws_key = found
        assert cluster == "east.1"
        reservations = planner.of(cluster).get(ws_key).reservations()
        assert sorted(reservations, key=lambda r: r.pod) == [taken, freed]

        entry = msgspec.json.decode(message.data, type=LedgerEntry[ReservedSlot])
        assert entry.creating["uid-1"] == ReservedSlot(
            "team a/web%spread", "v7", "zone-b", "uid-1", "creating", AT
        )
        assert set(entry.deleting) == {"web-0"}
    finally:
        await nc.close()


async def test_the_setup_step_creates_the_bucket_as_the_feature_declares_it(
    nats_server: NatsServer,
) -> None:
    assert SPEC in FEATURE.buckets
    nc = await nats.connect(nats_server.url)
    try:
        bound = await reservation_bucket(nc)
        assert (await bound.status()).bucket == BUCKET
        info = await nc.jetstream().stream_info(STREAM)
        assert info.config.num_replicas == 1
        assert info.config.max_msgs_per_subject == SPEC.history == 1
        assert info.config.max_age == SPEC.ttl_seconds
        assert info.config.description == SPEC.description
    finally:
        await nc.close()
