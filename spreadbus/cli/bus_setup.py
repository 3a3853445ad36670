"""``spreadbus bus-setup``: create or update every stream and bucket the services need.

The one step allowed to configure the bus: it connects as the ``setup`` user
(``--nats-nkey-seed`` of ``setup.nk`` from ``spreadbus bus-users``) and creates, or brings up to
date, the core streams, the planner's lease bucket and snapshot store and every feature's
buckets (:mod:`spreadbus.runtime.bus_layout`). It runs again safely at any time (after an
upgrade, after adding a feature plugin), and services started before it wait, unready, until it
has run. ``spreadbus up`` runs it before starting the services; deploy/ runs it as a Job.

It reads the same settings as the services (flags or ``SPREADBUS_*`` variables, one ConfigMap
for all): the NATS connection, ``--nats-replicas`` for what it creates, the HISTORY limits,
``--feature-plugins``, the planner's ``--snapshot-bucket``, ``--lease-ttl-seconds`` and
``--shards`` (more than one: the stream its shards read, :mod:`events.shards`).
With ``--members a,b`` the hub's KUBE, OUTCOMES, ADMISSIONS and HISTORY, and its features'
buckets, also copy each member's (its own subjects and keys) from its JetStream domain;
``--member NAME``, run against a member's own leaf server, sets up that
member's domain instead (:mod:`spreadbus.runtime.member_bus`).
Exit codes: 0 set up, 1 the server refused (the message names the stream and why) or did not
answer within ``--setup-wait-seconds``, 2 bad settings.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace

from nats.errors import Error as NatsError
from nats.js.errors import Error as JetStreamError

from kubesemantics.qualified_names import is_dns1123_label
from spreadbus.features.registry import PluginError, features
from spreadbus.runtime.bus_layout import LEASE_TTL_SECONDS, SNAPSHOT_BUCKET, BusLayout, bus_layout
from spreadbus.runtime.bus_permissions import SETUP
from spreadbus.runtime.bus_setup import set_up_bus
from spreadbus.runtime.member_bus import (
    HUB_DOMAIN,
    bucket_sources,
    hub_streams,
    member_streams,
)
from spreadbus.runtime.nats_connection import NatsOptions, connect_nats
from spreadbus.runtime.service import close_nats
from spreadbus.runtime.settings import (
    CommaList,
    ServiceSettings,
    add_settings_arguments,
    load_settings,
)
from spreadbus.runtime.stream_setup import StreamSetupError


class BusSetupSettings(ServiceSettings):
    """What the setup step creates; the planner's settings under the planner's names."""

    nats_replicas: int = 1
    """Replicas of the streams and buckets it creates (3 on a 3-node cluster); an existing
    stream or bucket keeps the replica count it has."""
    history_max_age: float = 7 * 24 * 3600.0
    """Seconds the HISTORY stream (the audit log) keeps a message."""
    history_max_bytes: int = 8 << 30
    """Bytes the HISTORY stream keeps at most; the oldest messages go first."""
    lease_ttl_seconds: float = LEASE_TTL_SECONDS
    """TTL of the planner's lease bucket: how long a lease outlives its last renewal."""
    snapshot_bucket: str = SNAPSHOT_BUCKET
    """The planner's snapshot object store."""
    shards: int = 1
    """The planner's shard count: with more than one, the namespace-partitioned copy of KUBE
    its shards read is created too."""
    setup_wait_seconds: float = 120.0
    """How long to wait for NATS to answer before giving up."""
    members: CommaList = ()
    """On the hub: the member clusters whose observations and outcomes its KUBE and OUTCOMES
    copy from their JetStream domains across their leaf links (give every member each time:
    a member left out is no longer copied)."""
    member: str = ""
    """On a member's own leaf server: set up that member's domain (its KUBE, OUTCOMES, and
    PLANS copying the hub's plans for it) instead of the hub's bus."""


class SetupFailed(Exception):
    """The bus could not be set up; the message says why."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser, BusSetupSettings)


def layout_of(settings: BusSetupSettings) -> BusLayout:
    """Raises :class:`~spreadbus.features.registry.PluginError` for an unusable plugin and
    ValueError for a member's name that cannot be a domain, naming the setting."""
    named = [("--members", m) for m in settings.members]
    if settings.member:
        named.append(("--member", settings.member))
    for flag, name in named:
        problems = is_dns1123_label(name)
        if problems or name == HUB_DOMAIN:
            raise ValueError(f"{flag} {name!r}: " + ("; ".join(problems) if problems else
                                                     "is the hub's domain"))
    if settings.member and settings.members:
        raise ValueError("--member sets a member's own bus up, --members the hub's: not both")
    chosen = features(settings.feature_plugins)
    if settings.member:
        # The features' buckets too, keyed by cluster first: the member's services write their
        # own keys there, and the hub's buckets copy them.
        buckets = tuple({b.name: b for f in chosen for b in f.buckets}.values())
        return BusLayout(streams=member_streams(settings.member), buckets=buckets,
                         object_stores=())
    hub = bus_layout([b for f in chosen for b in f.buckets],
                      history_max_age=settings.history_max_age,
                      history_max_bytes=settings.history_max_bytes,
                      lease_ttl_seconds=settings.lease_ttl_seconds,
                      snapshot_bucket=settings.snapshot_bucket,
                      shards=settings.shards)
    return replace(hub, streams=hub_streams(settings.members, hub.streams),
                   bucket_sources={b.name: bucket_sources(b.name, settings.members)
                                   for f in chosen for b in f.buckets} if settings.members else {})


async def set_up(settings: BusSetupSettings, layout: BusLayout) -> list[str]:
    """Connect as ``setup`` and set the bus up; what changed, one line each."""
    async def run() -> list[str]:
        nc = await connect_nats(NatsOptions.from_settings(settings, name=SETUP))
        try:
            return await set_up_bus(nc.jetstream(), layout, replicas=settings.nats_replicas)
        finally:
            await close_nats(nc)

    try:
        return await asyncio.wait_for(run(), settings.setup_wait_seconds)
    except TimeoutError as exc:
        raise SetupFailed(f"NATS did not answer within {settings.setup_wait_seconds:g} s") \
            from exc
    except StreamSetupError as exc:
        raise SetupFailed(str(exc)) from exc
    except (NatsError, JetStreamError) as exc:
        raise SetupFailed(f"the server refused: {exc!r} (is this the setup user's seed?)") \
            from exc


def run(args: argparse.Namespace) -> int:
    loaded = load_settings(BusSetupSettings, args)
    if isinstance(loaded, list):
        for error in loaded:
            print(f"bus-setup: bad setting {error}", file=sys.stderr)
        return 2
    try:
        layout = layout_of(loaded)
    except PluginError as exc:
        print(f"bus-setup: bad setting --feature-plugins: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"bus-setup: bad setting {exc}", file=sys.stderr)
        return 2
    try:
        changes = asyncio.run(set_up(loaded, layout))
    except SetupFailed as exc:
        print(f"bus-setup: {exc}", file=sys.stderr)
        return 1
    for line in changes:
        print(f"bus-setup: {line}")
    print(f"bus-setup: the bus holds {len(layout.streams)} streams, {len(layout.buckets)} "
          f"buckets and {len(layout.object_stores)} object store(s)")
    return 0
