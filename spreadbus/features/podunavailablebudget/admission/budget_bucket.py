"""The budget bucket (:mod:`..core.budget_ledger`): declared here, created by the setup step
(``spreadbus bus-setup``), bound by the webhook that spends budgets; the planner reads it as a
stream. Neither service creates it."""

from __future__ import annotations

from typing import Final

from nats.aio.client import Client
from nats.js.kv import KeyValue

from spreadbus.engine.bus_access import BucketSpec
from spreadbus.features.podunavailablebudget.core.budget_ledger import (
    BUCKET,
    DESCRIPTION,
    ENTRIES,
    HISTORY,
    TTL_SECONDS,
    BudgetEntry,
)
from spreadbus.runtime.ledger import LedgerStore

SPEC: Final = BucketSpec(name=BUCKET, description=DESCRIPTION, history=HISTORY,
                         ttl_seconds=TTL_SECONDS)


async def budget_bucket(nc: Client) -> KeyValue:
    """The bucket, which must exist."""
    return await nc.jetstream().key_value(BUCKET)


def budget_store(kv: KeyValue, *, deadline_seconds: float = 2.0) -> LedgerStore[BudgetEntry]:
    """The compare-and-set store of budget entries in ``kv``."""
    return LedgerStore(kv, ENTRIES, deadline_seconds=deadline_seconds)
