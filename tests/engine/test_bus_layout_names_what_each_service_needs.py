"""What the setup step creates and what each service waits for are named in one place, and agree."""

from __future__ import annotations

import re

from events import streams
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.bus_layout import (
    CORE_STREAMS,
    LEASE_BUCKET,
    bus_layout,
    service_needs,
)
from spreadbus.runtime.bus_permissions import SERVICES
from spreadbus.runtime.bus_presence import missing_text
from spreadbus.runtime.consumer_names import private_name

BUCKETS = [b for f in BUILTIN for b in f.buckets]
LAYOUT = bus_layout(BUCKETS, history_max_age=3600.0, history_max_bytes=1 << 20,
                    lease_ttl_seconds=4.0, snapshot_bucket="snaps")


def test_the_layout_holds_every_stream_and_bucket_once() -> None:
    assert [s.name for s in LAYOUT.streams] == [s.name for s in streams.ALL]
    history = LAYOUT.streams[-1]
    assert (history.max_age_seconds, history.max_bytes) == (3600.0, 1 << 20)
    names = [b.name for b in LAYOUT.buckets]
    assert names == [LEASE_BUCKET, "spreadbus-reservations", "spreadbus-budgets",
                     "spreadbus-cluster-heartbeats"]
    assert LAYOUT.buckets[0].ttl_seconds == 4.0
    assert LAYOUT.object_stores == ("snaps",)
    again = bus_layout([*BUCKETS, *BUCKETS], history_max_age=1.0, history_max_bytes=1)
    assert [b.name for b in again.buckets] == names


def test_every_service_waits_for_what_it_uses_and_the_setup_creates_all_of_it() -> None:
    accesses = bus_accesses(BUILTIN)
    for service in SERVICES:
        needs = service_needs(service, accesses, snapshot_bucket="snaps")
        assert needs[:len(CORE_STREAMS)] == CORE_STREAMS
        assert set(needs) <= set(LAYOUT.names()), service
    planner = service_needs("planner", accesses, snapshot_bucket="snaps")
    assert {"KV_spreadbus-leases", "OBJ_snaps", "KV_spreadbus-reservations",
            "KV_spreadbus-budgets"} <= set(planner)
    webhook = service_needs("webhook", accesses)
    assert {"KV_spreadbus-reservations", "KV_spreadbus-budgets"} <= set(webhook)
    assert service_needs("actuator", accesses) == CORE_STREAMS


def test_what_is_missing_is_named_with_the_command_that_creates_it() -> None:
    text = missing_text(["PLANS", "KV_spreadbus-leases", "OBJ_snaps"])
    assert text == ("missing stream PLANS, bucket spreadbus-leases, object store snaps: "
                    "create them with `spreadbus bus-setup`")


def test_a_private_consumer_name_is_readable_unguessable_and_a_valid_name() -> None:
    names = {private_name("follower-KUBE") for _ in range(100)}
    assert len(names) == 100
    assert all(re.fullmatch(r"follower-KUBE-[0-9a-f]{32}", n) for n in names)
    odd = private_name("a.b *>/c\\d")
    assert re.fullmatch(r"a-b-c-d-[0-9a-f]{32}", odd), odd
    assert re.fullmatch(r"consumer-[0-9a-f]{32}", private_name("..."))
