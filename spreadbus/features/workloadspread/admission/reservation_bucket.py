"""The reservation ledger bucket (:mod:`events.reservations`), created by whoever needs it first.

The webhook writes the bucket and the planner reads it; either may start first, so both call
:func:`reservation_bucket` and neither waits for the other. Both create it with the same
settings, so which one wins the creation makes no difference. An existing bucket is used as it
is: changing its replication is an operator's decision, not a start-up side effect.
"""

from __future__ import annotations

from nats.aio.client import Client
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BadRequestError, BucketNotFoundError
from nats.js.kv import KeyValue

from events.reservations import BUCKET, DESCRIPTION, HISTORY, TTL_SECONDS


def bucket_config(replicas: int = 1) -> KeyValueConfig:
    return KeyValueConfig(
        bucket=BUCKET,
        description=DESCRIPTION,
        history=HISTORY,
        ttl=TTL_SECONDS,
        storage=StorageType.FILE,
        replicas=replicas,
    )


async def reservation_bucket(nc: Client, replicas: int = 1) -> KeyValue:
    """The bucket, created with ``replicas`` copies if it does not exist yet."""
    js = nc.jetstream()
    try:
        return await js.key_value(BUCKET)
    except BucketNotFoundError:
        pass
    try:
        return await js.create_key_value(bucket_config(replicas))
    except BadRequestError:
        # Created by another service between our look-up and our create.
        return await js.key_value(BUCKET)
