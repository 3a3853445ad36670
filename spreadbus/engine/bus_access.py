"""What a feature's part of a service does on NATS, beyond the streams every service uses.

The bus gives each service a user of its own whose permissions allow exactly what that service
does (:mod:`spreadbus.runtime.bus_permissions`): the services' own streams are known there, and a
feature adds its own buckets and subjects here, per service (``Feature.bus``). A feature that
forgets a declaration finds out at once: the server refuses the publish or subscription and the
local stack and the end-to-end tests run with these permissions.

No service creates or reconfigures a bucket: a feature declares each bucket it keeps
(:class:`BucketSpec`, ``Feature.buckets``) and the setup step creates it with its own credential.
"""

from __future__ import annotations

import msgspec


class BusAccess(msgspec.Struct, frozen=True, kw_only=True):
    publish: tuple[str, ...] = ()
    """Subjects it publishes on (wildcards allowed), e.g. a stream's subjects or a core subject."""
    subscribe: tuple[str, ...] = ()
    """Core NATS subjects it subscribes to (stream reads go through ``reads``)."""
    reads: tuple[str, ...] = ()
    """Streams it reads: consumers, direct gets, acks (a KV bucket ``b`` is stream ``KV_b``)."""
    buckets: tuple[str, ...] = ()
    """Key-value buckets it writes (and reads); the setup step creates them
    (:class:`BucketSpec`)."""


class BucketSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A key-value bucket a feature keeps, as ``spreadbus bus-setup`` creates it."""

    name: str
    description: str = ""
    history: int = 1
    """Values kept per key."""
    ttl_seconds: float = 0.0
    """How long a value lives without being rewritten; 0: for ever."""
