"""Create or update the bus streams, idempotently, from :mod:`events.streams`.

The setup step (``spreadbus bus-setup``, :mod:`spreadbus.runtime.bus_setup`) calls
:func:`ensure_streams` with the only credential allowed to configure streams. An existing stream is
updated in place when a setting it is compared on differs: subjects, discard policy, the age, byte,
message and per-subject limits, the dedup window, whether per-message TTLs are allowed, the
streams it sources from (in its own JetStream domain or another, with their filters) and the
subject transforms it applies to them. An older ``KUBE`` (an
age window with ``discard=old``) is converted in place this way; the server keeps each subject's
latest message and drops the rest, which is exactly the new retention.

What is left alone: retention and storage (the server refuses to change them), the replica
count (``replicas`` applies to a stream being created; moving an existing stream to another
count is an operator's decision, not a side effect of a set-up run), and
``allow_msg_ttl`` on a stream that has it while the definition does not (the server cannot
turn it off, and a stream that allows TTLs behaves the same for messages without one).

When the server refuses an update or a creation, :class:`StreamSetupError` names the stream,
every setting that differed (current and wanted value) and the server's reason, so the
setup step stops with a message an operator can act on.

Signature::

    ensure_streams(js: JetStreamContext, specs: Iterable[StreamSpec] = events.streams.ALL,
                   *, replicas: int = 1) -> Awaitable[list[str]]   # what changed
    stream_config(spec: StreamSpec, *, replicas: int = 1) -> StreamConfig
    domain_stream_source(source: DomainSource) -> StreamSource
    differences(current: StreamConfig, wanted: StreamConfig) -> list[str]
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from nats.js.api import (
    DiscardPolicy,
    ExternalStream,
    RetentionPolicy,
    StorageType,
    StreamConfig,
    StreamSource,
    SubjectTransform,
)
from nats.js.client import JetStreamContext
from nats.js.errors import BadRequestError, NotFoundError, ServerError

from events import streams
from events.streams import DomainSource, StreamSpec

log = logging.getLogger(__name__)


class StreamSetupError(RuntimeError):
    """The server refused to create a stream or to bring it up to date."""


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
        max_msgs_per_subject=spec.max_msgs_per_subject,
        allow_msg_ttl=spec.allow_msg_ttl or None,
        duplicate_window=spec.duplicate_window_seconds,
        num_replicas=replicas,
        sources=[StreamSource(name=name, subject_transforms=[
            SubjectTransform(src=src, dest=dest) for src, dest in spec.source_transforms] or None)
            for name in spec.sources] + [
            domain_stream_source(source)
            for source in spec.domain_sources] or None,
    )


def domain_stream_source(source: DomainSource) -> StreamSource:
    """One filter as the consumer's filter subject (which the consumer's creation names, so
    a permission can name it too), several as subject transforms that keep the subjects."""
    filters = source.filter_subjects
    return StreamSource(
        name=source.name, external=ExternalStream(api=source.api, deliver=source.deliver or None),
        filter_subject=filters[0] if len(filters) == 1 else None,
        subject_transforms=[SubjectTransform(src=subject, dest=subject) for subject in filters]
        if len(filters) > 1 else None)


def _source_filters(source: StreamSource) -> list[str]:
    return sorted([source.filter_subject] if source.filter_subject else
                  [t.src for t in source.subject_transforms or []])


def _compared(config: StreamConfig) -> dict[str, object]:
    """The settings ``ensure_streams`` keeps in line, normalised as the server reports them."""
    return {
        "subjects": sorted(config.subjects or []),
        "discard": DiscardPolicy(config.discard or DiscardPolicy.OLD).value,
        "max_age": float(config.max_age or 0.0),
        "max_bytes": -1 if config.max_bytes is None else config.max_bytes,
        "max_msgs": -1 if config.max_msgs is None else config.max_msgs,
        "max_msgs_per_subject": config.max_msgs_per_subject,
        "duplicate_window": float(config.duplicate_window or 0.0),
        "allow_msg_ttl": bool(config.allow_msg_ttl),
        "sources": sorted(source.name for source in config.sources or []
                          if source.external is None),
        "domain_sources": sorted(
            (source.name, source.external.api or "", source.external.deliver or "",
             _source_filters(source))
            for source in config.sources or [] if source.external is not None),
        "source_transforms": sorted(
            (source.name, transform.src, transform.dest) for source in config.sources or []
            if source.external is None for transform in source.subject_transforms or []),
    }


def differences(current: StreamConfig, wanted: StreamConfig) -> list[str]:
    """``name: current -> wanted`` for each compared setting that must change."""
    have, want = _compared(current), _compared(wanted)
    changes = []
    for field, value in want.items():
        if have[field] == value:
            continue
        if field == "allow_msg_ttl" and not value:
            continue  # cannot be turned off, and harmless when not needed
        changes.append(f"{field}: {have[field]!r} -> {value!r}")
    return changes


async def ensure_streams(
    js: JetStreamContext,
    specs: Iterable[StreamSpec] = streams.ALL,
    *,
    replicas: int = 1,
) -> list[str]:
    """Create or update each stream; what was created or changed, one line each."""
    done: list[str] = []
    for spec in specs:
        config = stream_config(spec, replicas=replicas)
        try:
            info = await js.stream_info(spec.name)
        except NotFoundError:
            try:
                await js.add_stream(config)
                log.info("stream created", extra={"stream": spec.name})
                done.append(f"stream {spec.name} created")
                continue
            except (BadRequestError, ServerError) as exc:
                # Most likely another set-up run created it between our lookup and our add.
                try:
                    info = await js.stream_info(spec.name)
                except NotFoundError:
                    raise StreamSetupError(
                        f"stream {spec.name}: the server refused to create it: {exc.description}"
                    ) from exc
        changes = differences(info.config, config)
        if not changes:
            continue
        config.num_replicas = info.config.num_replicas
        if info.config.allow_msg_ttl:
            config.allow_msg_ttl = True
        try:
            await js.update_stream(config)
        except (BadRequestError, ServerError) as exc:
            raise StreamSetupError(
                f"stream {spec.name}: the server refused to change {'; '.join(changes)}: "
                f"{exc.description}"
            ) from exc
        log.info("stream updated", extra={"stream": spec.name, "changes": changes})
        done.append(f"stream {spec.name} updated: {'; '.join(changes)}")
    return done
