"""Create or update the bus streams at start-up, idempotently, from :mod:`events.streams`.

Every service calls :func:`ensure_streams` before it publishes or follows, so the order in which
services start does not matter. An existing stream is updated in place when its limits differ
(retention and storage are never changed, since the server refuses that, and neither is the
replica count: ``replicas`` applies to a stream being created, and moving an existing stream
to another count is an operator's decision, not a side effect of a service starting).

Signature::

    ensure_streams(js: JetStreamContext, specs: Iterable[StreamSpec] = events.streams.ALL,
                   *, replicas: int = 1) -> Awaitable[None]
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.client import JetStreamContext
from nats.js.errors import BadRequestError, NotFoundError

from events import streams
from events.streams import StreamSpec

log = logging.getLogger(__name__)


def stream_config(spec: StreamSpec, *, replicas: int = 1) -> StreamConfig:
    return StreamConfig(
        name=spec.name,
        description=spec.description or None,
        subjects=list(spec.subjects),
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        discard=DiscardPolicy.OLD if spec.discard == "old" else DiscardPolicy.NEW,
        max_age=spec.max_age_seconds,
        max_bytes=spec.max_bytes,
        max_msgs=spec.max_msgs,
        duplicate_window=spec.duplicate_window_seconds,
        num_replicas=replicas,
    )


async def ensure_streams(
    js: JetStreamContext,
    specs: Iterable[StreamSpec] = streams.ALL,
    *,
    replicas: int = 1,
) -> None:
    for spec in specs:
        config = stream_config(spec, replicas=replicas)
        try:
            info = await js.stream_info(spec.name)
        except NotFoundError:
            try:
                await js.add_stream(config)
                log.info("stream created", extra={"stream": spec.name})
                continue
            except BadRequestError:
                # Another service created it between our lookup and our add.
                info = await js.stream_info(spec.name)
        current = info.config
        if (
            current.max_age != config.max_age
            or current.max_bytes != config.max_bytes
            or current.max_msgs != config.max_msgs
            or current.discard != config.discard
            or current.duplicate_window != config.duplicate_window
            or sorted(current.subjects or []) != sorted(config.subjects or [])
        ):
            config.num_replicas = current.num_replicas
            await js.update_stream(config)
            log.info("stream updated", extra={"stream": spec.name})
