"""The watcher process: one list+watch per resource of one cluster, feeding the KUBE stream.

On start the watcher first replays its own cluster's observations from the bus (the same
projection fold the planner uses) to learn what it published before, so its first list after a
restart publishes only what changed while it was down, deletions included, instead of every
object again. Several watchers, one per ``--cluster``, can feed one bus.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Iterator

from nats.aio.client import Client
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from events import subjects
from events.messages import ResourceRef
from events.streams import KUBE
from services.watcher.heartbeat import beat_forever, register
from services.watcher.history import HistoryPoints
from services.watcher.publisher import ObservationPublisher
from services.watcher.resource_watch import (
    Change,
    Known,
    ResourceWatch,
    object_meta,
    parse_resource,
)
from services.watcher.settings import WatcherSettings
from spreadbus.projection.kube_state import KubeProjection, resource_key
from spreadbus.runtime.follower import StreamFollower
from spreadbus.runtime.health import ReadinessGate
from spreadbus.runtime.kube_client import KubeClient, kube_api_client
from spreadbus.runtime.service import ServiceContext
from spreadbus.runtime.shutdown import sleep_unless_stopping

log = logging.getLogger(__name__)

SYNCED = "synced"


async def published_state(nc: Client, cluster: str) -> KubeProjection:
    """What this cluster's watcher published before, replayed from the KUBE stream."""
    projection = KubeProjection()
    follower = StreamFollower(nc, stream=KUBE.name, sink=projection.apply,
                              subjects=[f"{subjects.OBSERVATIONS}.{subjects.escape(cluster)}.>"])
    task = asyncio.create_task(follower.run())
    try:
        await follower.wait_caught_up()
    finally:
        follower.stop()
        await task
    return projection


def known_from(projection: KubeProjection, cluster: str,
               ref: ResourceRef) -> dict[tuple[str, str], Known]:
    known: dict[tuple[str, str], Known] = {}
    bucket = projection.state.objects.get(resource_key(cluster, ref.group, ref.resource), {})
    for stored in bucket.values():
        meta = object_meta(stored.raw)
        known[(meta.namespace, meta.name)] = Known(meta.uid, meta.resourceVersion, stored.raw)
    return known


class Watches(list[ResourceWatch]):
    """The watches, and the publisher they share."""

    def __init__(self, watches: list[ResourceWatch], publisher: ObservationPublisher) -> None:
        super().__init__(watches)
        self.publisher = publisher


async def prepare_watches(
    nc: Client,
    settings: WatcherSettings,
    kube: KubeClient,
    registry: CollectorRegistry | None = None,
) -> Watches:
    """One watch per resource, each knowing what was published for it before."""
    refs = [parse_resource(spec) for spec in settings.resources]
    history = await published_state(nc, settings.cluster)
    watches: dict[ResourceRef, ResourceWatch] = {}

    def on_lost(ref: ResourceRef, key: tuple[str, str]) -> None:
        watches[ref].lost(key)

    def on_acked(ref: ResourceRef, change: Change) -> None:
        watches[ref].acked(change)

    publisher = ObservationPublisher(nc, cluster=settings.cluster,
                                     max_in_flight=settings.max_in_flight, on_lost=on_lost,
                                     on_acked=on_acked, registry=registry)
    audit_points = HistoryPoints(nc, cluster=settings.cluster, registry=registry,
                                 status_resources=settings.status_history())
    kinds = settings.kinds()
    for ref in refs:
        async def emit(change: Change, ref: ResourceRef = ref) -> None:
            ts = time.time()
            await publisher.observation(ref, change, ts)
            await audit_points.publish(ref, change.event, change.uid, change.raw, ts)

        async def mark(complete: bool, rv: str, count: int, ref: ResourceRef = ref) -> None:
            await publisher.sync(ref, complete, rv, count, time.time())

        watches[ref] = ResourceWatch(kube, ref, emit=emit, mark=mark,
                                     known=known_from(history, settings.cluster, ref),
                                     watch_timeout=settings.watch_timeout_seconds,
                                     page_size=settings.list_page_size,
                                     hold_seconds=settings.modified_hold_seconds,
                                     kind=kinds.get(ref.resource, ""))
    return Watches(list(watches.values()), publisher)


class WatchReadiness:
    """Whether every resource is listed, and which ones the API refuses (a gauge per resource).

    A resource the API does not serve (``absent``) or will not let the watcher list
    (``forbidden``) does not hold back readiness: the others' observations are complete without
    it. A refused one is visible in ``spreadbus_watcher_resource_forbidden``, the log and, with
    the API's refusal, as a note in ``/readyz`` (:meth:`report`). So are the objects published
    only as markers because they are too large for the bus (a note naming each and its size).
    """

    def __init__(self, watches: list[ResourceWatch], registry: CollectorRegistry | None,
                 publisher: ObservationPublisher | None = None) -> None:
        self.watches = watches
        self.publisher = publisher
        self.forbidden_gauge = Gauge(
            "spreadbus_watcher_resource_forbidden",
            "1 while the API refuses to let the watcher list or watch the resource",
            ["group", "resource"], registry=registry)
        for w in watches:  # read when scraped, so asking whether we are synced changes nothing
            self.forbidden_gauge.labels(w.ref.group, w.ref.resource).set_function(
                functools.partial(_refused, w))

    def synced(self) -> bool:
        return all(w.synced or w.absent or w.forbidden for w in self.watches)

    def forbidden(self) -> list[ResourceRef]:
        return [w.ref for w in self.watches if w.forbidden]

    def report(self, gate: ReadinessGate) -> None:
        """Set the ``synced`` condition and one note per refused resource (cleared once listed)."""
        gate.set(SYNCED, self.synced())
        for w in self.watches:
            gate.note(forbidden_note(w.ref), w.forbidden or None)
        if self.publisher is not None:
            gate.note(OVERSIZE_NOTE, oversize_note(self.publisher.oversize))


class SupersededCount(Collector):
    """``spreadbus_watcher_observations_superseded_total``: MODIFIED observations a newer one
    replaced before they were published, per resource; read from the watches when scraped."""

    def __init__(self, watches: list[ResourceWatch]) -> None:
        self.watches = watches

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "spreadbus_watcher_observations_superseded",
            "MODIFIED observations replaced by a newer one of the same object before publishing",
            labels=["group", "resource"])
        for w in self.watches:
            family.add_metric([w.ref.group, w.ref.resource], w.hold.superseded)
        yield family


def _refused(watch: ResourceWatch) -> float:
    return 1.0 if watch.forbidden else 0.0


OVERSIZE_NOTE = "too large for the bus"


def oversize_note(oversize: dict[tuple[str, str, str], int]) -> str | None:
    """``pods default/big (1200000 bytes)``, for each object published as a marker only."""
    if not oversize:
        return None
    return ", ".join(f"{resource} {namespace + '/' if namespace else ''}{name} ({size} bytes)"
                     for (resource, namespace, name), size in sorted(oversize.items()))


def forbidden_note(ref: ResourceRef) -> str:
    """``forbidden secrets`` or ``forbidden workloadspreads.apps.kruise.io``, kubectl's spelling."""
    return f"forbidden {ref.resource}.{ref.group}" if ref.group else f"forbidden {ref.resource}"


async def _register(settings: WatcherSettings, stopping: asyncio.Event) -> None:
    host = await asyncio.to_thread(kube_api_client, settings.host_kubeconfig,
                                   settings.host_kube_context)
    try:
        await register(KubeClient(host), settings.cluster, stopping)
    finally:
        host.close()  # type: ignore[no-untyped-call]


async def main(settings: WatcherSettings, ctx: ServiceContext) -> None:
    api = await asyncio.to_thread(kube_api_client, settings.kubeconfig, settings.kube_context)
    try:
        watches = await prepare_watches(ctx.nc, settings, KubeClient(api), ctx.registry)
        readiness = WatchReadiness(watches, ctx.registry, watches.publisher)
        ctx.registry.register(SupersededCount(watches))
        tasks = [asyncio.create_task(w.run(ctx.stopping)) for w in watches]
        tasks.append(asyncio.create_task(beat_forever(ctx.nc, KubeClient(api), settings.cluster,
                                                      ctx.stopping,
                                                      every=settings.heartbeat_seconds)))
        if settings.host_kubeconfig:
            tasks.append(asyncio.create_task(_register(settings, ctx.stopping)))
        readiness.report(ctx.gate)
        while not await sleep_unless_stopping(ctx.stopping, 0.5):
            readiness.report(ctx.gate)
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        api.close()  # type: ignore[no-untyped-call]
