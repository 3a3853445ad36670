"""The actuator process: Kubernetes client, rate limiter and plan consumer in the service shell."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from services.actuator.settings import ActuatorSettings
from spreadbus.runtime.kube_client import KubeAPIError, KubeClient, kube_api_client
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.service import ServiceContext

KUBE = "kube"

log = logging.getLogger(__name__)


async def main(settings: ActuatorSettings, ctx: ServiceContext) -> None:
    api = await asyncio.to_thread(kube_api_client, settings.kubeconfig, settings.kube_context)
    try:
        kube = KubeClient(api)
        while not ctx.stopping.is_set():
            try:
                await kube.arequest("GET", "/api", timeout=5.0)
                break
            except KubeAPIError as exc:
                log.warning("kubernetes API not reachable yet", extra={"error": str(exc)})
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ctx.stopping.wait(), 1.0)
        ctx.gate.set(KUBE, True)
        applier = Applier(
            kube,
            limiter=TokenBucket(settings.kube_qps, settings.kube_burst),
            max_attempts=settings.max_attempts,
            backoff_seconds=settings.backoff_seconds,
        )
        consumer = PlanConsumer(ctx.nc, applier, cluster=settings.cluster,
                                workers=settings.workers,
                                max_deliveries=settings.max_deliveries, registry=ctx.registry)
        await consumer.run(ctx.stopping)
    finally:
        api.close()  # type: ignore[no-untyped-call]
