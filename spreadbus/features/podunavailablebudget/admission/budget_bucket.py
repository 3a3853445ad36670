"""The budget bucket (:mod:`..budget_ledger`), created by whichever of the planner and the
webhook starts first, with the same settings either way; an existing bucket is used as it is."""

from __future__ import annotations

from nats.aio.client import Client
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BadRequestError, BucketNotFoundError
from nats.js.kv import KeyValue

from spreadbus.features.podunavailablebudget.budget_ledger import (
    BUCKET,
    DESCRIPTION,
    HISTORY,
    TTL_SECONDS,
    BudgetEntry,
    decode,
    encode,
)
from spreadbus.runtime.ledger import EntryCodec, LedgerStore

CODEC = EntryCodec(empty=BudgetEntry, encode=encode, decode=decode)


async def budget_bucket(nc: Client, replicas: int = 1) -> KeyValue:
    js = nc.jetstream()
    try:
        return await js.key_value(BUCKET)
    except BucketNotFoundError:
        pass
    config = KeyValueConfig(bucket=BUCKET, description=DESCRIPTION, history=HISTORY,
                            ttl=TTL_SECONDS, storage=StorageType.FILE, replicas=replicas)
    try:
        return await js.create_key_value(config)
    except BadRequestError:
        return await js.key_value(BUCKET)


def budget_store(kv: KeyValue, *, deadline_seconds: float = 2.0) -> LedgerStore[BudgetEntry]:
    """The compare-and-set store of budget entries in ``kv``."""
    return LedgerStore(kv, CODEC, deadline_seconds=deadline_seconds)
