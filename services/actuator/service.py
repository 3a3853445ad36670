"""The actuator process: Kubernetes client, rate limiter and plan consumer in the service shell."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from services.actuator.scope_cache import ScopeLimits
from services.actuator.settings import ActuatorSettings
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import PlanAuthority
from spreadbus.runtime.kube_client import KubeAPIError, KubeClient, kube_api_client
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.service import ServiceContext
from spreadbus.runtime.shutdown import sleep_unless_stopping

KUBE = "kube"

log = logging.getLogger(__name__)


async def main(settings: ActuatorSettings, ctx: ServiceContext) -> None:
    # One thread and one pooled connection per worker: every plan in flight can have its
    # request on the wire, none waits for a thread or opens a connection of its own.
    api = await asyncio.to_thread(kube_api_client, settings.kubeconfig, settings.kube_context,
                                  connections=settings.workers)
    threads = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="kube")
    host_api = None
    if settings.host_kubeconfig:
        host_api = await asyncio.to_thread(kube_api_client, settings.host_kubeconfig,
                                           settings.host_kube_context)
    try:
        kube = KubeClient(api, executor=threads)
        while not ctx.stopping.is_set():
            try:
                await kube.arequest("GET", "/api", timeout=5.0)
                break
            except KubeAPIError as exc:
                log.warning("kubernetes API not reachable yet", extra={"error": str(exc)})
                await sleep_unless_stopping(ctx.stopping, 1.0)
        ctx.gate.set(KUBE, True)
        applier = Applier(
            kube,
            limiter=TokenBucket(settings.kube_qps, settings.kube_burst),
            max_attempts=settings.max_attempts,
            backoff_seconds=settings.backoff_seconds,
            authority=PlanAuthority(plan_grants(settings.features())),
            registry=ctx.registry,
            scope=ScopeLimits(settings.scope_governor_seconds, settings.scope_link_seconds),
            host=None if host_api is None else KubeClient(host_api, executor=threads),
            host_cluster=settings.host_cluster,
        )
        consumer = PlanConsumer(ctx.nc, applier, cluster=settings.cluster,
                                workers=settings.workers,
                                max_deliveries=settings.max_deliveries, registry=ctx.registry)
        await consumer.run(ctx.stopping)
    finally:
        threads.shutdown(wait=False, cancel_futures=True)
        api.close()  # type: ignore[no-untyped-call]
        if host_api is not None:
            host_api.close()  # type: ignore[no-untyped-call]
