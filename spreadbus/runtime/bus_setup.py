"""The setup step: create or update every stream and bucket of the bus, idempotently.

Run by ``spreadbus bus-setup`` (and by ``spreadbus up`` before it starts the services) with the
``setup`` user's credential, the only one allowed to configure streams
(:mod:`spreadbus.runtime.bus_permissions`). Streams are brought in line as
:func:`~spreadbus.runtime.stream_setup.ensure_streams` describes. A key-value bucket is created
with its declared history and TTL, and an existing one whose history, TTL or description differ is
updated in place (its values stay); its replica count and storage are left as they are, as a
stream's are. A bucket takes no rollup headers: the users that write it may set and delete their
keys, but a ``Nats-Rollup: all`` publish would empty the whole bucket, and no service purges. An
object store is created if missing and otherwise left alone.

Signatures::

    async set_up_bus(js: JetStreamContext, layout: BusLayout, *, replicas: int = 1) -> list[str]
        # what was created or updated, one line each
    async ensure_bucket_sources(js: JetStreamContext, bucket: str,
                                sources: tuple[DomainSource, ...]) -> str | None
    async ensure_bucket(js: JetStreamContext, spec: BucketSpec, *, replicas: int = 1) -> str | None
"""

from __future__ import annotations

import logging

from nats.js.api import KeyValueConfig, ObjectStoreConfig, StorageType
from nats.js.client import JetStreamContext
from nats.js.errors import BadRequestError, NotFoundError, ServerError

from events.streams import DomainSource
from spreadbus.engine.bus_access import BucketSpec
from spreadbus.runtime.bus_layout import BusLayout, kv_stream, object_stream
from spreadbus.runtime.stream_setup import StreamSetupError, domain_stream_source, ensure_streams

log = logging.getLogger(__name__)


async def set_up_bus(js: JetStreamContext, layout: BusLayout, *, replicas: int = 1) -> list[str]:
    done = await ensure_streams(js, layout.streams, replicas=replicas)
    for spec in layout.buckets:
        if (change := await ensure_bucket(js, spec, replicas=replicas)) is not None:
            done.append(change)
            log.info(change)
        sources = layout.bucket_sources.get(spec.name)
        if sources is not None and (change := await ensure_bucket_sources(
                js, spec.name, sources)) is not None:
            done.append(change)
            log.info(change)
    for bucket in layout.object_stores:
        try:
            await js.stream_info(object_stream(bucket))
        except NotFoundError:
            await js.create_object_store(bucket, config=ObjectStoreConfig(replicas=replicas))
            done.append(f"object store {bucket} created")
            log.info("object store created", extra={"bucket": bucket})
    return done


async def ensure_bucket_sources(js: JetStreamContext, bucket: str,
                                sources: tuple[DomainSource, ...]) -> str | None:
    """Make the bucket copy exactly ``sources`` (other domains' buckets, a member's keys each)."""
    stream = kv_stream(bucket)
    config = (await js.stream_info(stream)).config
    wanted = [domain_stream_source(source) for source in sources]
    have = sorted((s.name, s.external.api if s.external else "", s.filter_subject or "")
                  for s in config.sources or [])
    if have == sorted((s.name, s.external.api if s.external else "", s.filter_subject or "")
                      for s in wanted):
        return None
    config.sources = wanted or None
    try:
        await js.update_stream(config)
    except (BadRequestError, ServerError) as exc:
        raise StreamSetupError(f"bucket {bucket}: the server refused its sources: "
                               f"{exc.description}") from exc
    return f"bucket {bucket} copies {', '.join(s.domain for s in sources) or 'nothing'}"


async def ensure_bucket(js: JetStreamContext, spec: BucketSpec, *, replicas: int = 1) -> str | None:
    """Create ``spec``'s bucket or bring its history, TTL, description and rollups in line."""
    stream = kv_stream(spec.name)
    created = False
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        await js.create_key_value(KeyValueConfig(
            bucket=spec.name, description=spec.description or None, history=spec.history,
            ttl=spec.ttl_seconds or None, storage=StorageType.FILE, replicas=replicas))
        info, created = await js.stream_info(stream), True
    config = info.config
    wanted = {"history": spec.history, "ttl": float(spec.ttl_seconds),
              "description": spec.description or None, "rollups": False}
    have = {"history": config.max_msgs_per_subject, "ttl": float(config.max_age or 0.0),
            "description": config.description or None,
            "rollups": bool(config.allow_rollup_hdrs)}
    changes = [f"{k}: {have[k]!r} -> {v!r}" for k, v in wanted.items() if have[k] != v]
    if not changes:
        return f"bucket {spec.name} created" if created else None
    config.max_msgs_per_subject = spec.history
    config.max_age = spec.ttl_seconds
    if spec.ttl_seconds and (config.duplicate_window or 0.0) > spec.ttl_seconds:
        config.duplicate_window = spec.ttl_seconds  # the server wants it within the TTL
    config.description = spec.description or None
    config.allow_rollup_hdrs = False
    try:
        await js.update_stream(config)
    except (BadRequestError, ServerError) as exc:
        raise StreamSetupError(f"bucket {spec.name}: the server refused to change "
                               f"{'; '.join(changes)}: {exc.description}") from exc
    if created:
        return f"bucket {spec.name} created"
    return f"bucket {spec.name} updated: {'; '.join(changes)}"
