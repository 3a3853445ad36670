"""The reservation ledger bucket (:mod:`..core.reservation_contract`): declared there, created by
the setup step (``spreadbus bus-setup``), bound here by the webhook that writes it.

The planner reads the same bucket as a stream (``KV_spreadbus-reservations``). Neither service
creates it; each waits at start-up until it exists (:mod:`spreadbus.runtime.bus_presence`).
"""

from __future__ import annotations

from nats.aio.client import Client
from nats.js.kv import KeyValue

from spreadbus.features.workloadspread.core.reservation_contract import SPEC
from spreadbus.runtime.ledger import existing_bucket


async def reservation_bucket(nc: Client) -> KeyValue:
    return await existing_bucket(nc, SPEC)
