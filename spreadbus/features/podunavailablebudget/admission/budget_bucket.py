"""The budget bucket (:mod:`..core.budget_ledger`): declared there, created by the setup step
(``spreadbus bus-setup``), bound here by the webhook that spends budgets; the planner reads it
as a stream. Neither service creates it."""

from __future__ import annotations

from nats.aio.client import Client
from nats.js.kv import KeyValue

from spreadbus.features.podunavailablebudget.core.budget_ledger import ENTRIES, SPEC, BudgetEntry
from spreadbus.runtime.ledger import LedgerStore, existing_bucket


async def budget_bucket(nc: Client) -> KeyValue:
    return await existing_bucket(nc, SPEC)


def budget_store(kv: KeyValue, *, deadline_seconds: float = 2.0) -> LedgerStore[BudgetEntry]:
    """The compare-and-set store of budget entries in ``kv``."""
    return LedgerStore(kv, ENTRIES, deadline_seconds=deadline_seconds)
