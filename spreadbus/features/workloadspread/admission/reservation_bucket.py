"""The reservation ledger bucket (:mod:`..core.reservation_contract`): declared here, created by
the setup step (``spreadbus bus-setup``), bound by the webhook that writes it.

The planner reads the same bucket as a stream (``KV_spreadbus-reservations``). Neither service
creates it; each waits at start-up until it exists (:mod:`spreadbus.runtime.bus_presence`).
"""

from __future__ import annotations

from typing import Final

from nats.aio.client import Client
from nats.js.kv import KeyValue

from spreadbus.engine.bus_access import BucketSpec
from spreadbus.features.workloadspread.core.reservation_contract import (
    BUCKET,
    DESCRIPTION,
    HISTORY,
    TTL_SECONDS,
)

SPEC: Final = BucketSpec(name=BUCKET, description=DESCRIPTION, history=HISTORY,
                         ttl_seconds=TTL_SECONDS)


async def reservation_bucket(nc: Client) -> KeyValue:
    """The bucket, which must exist."""
    return await nc.jetstream().key_value(BUCKET)
