"""A resource the API will not let the watcher list is reported and does not block readiness.

kubesim has no RBAC, so the refusal comes from the client side: a :class:`KubeClient` that
answers every request for one resource with the 403 the API server sends for a missing RBAC
rule, while every other request reaches kubesim over HTTP.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Unpack

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from events.messages import ResourceRef
from kubesim import KubeSimThread
from services.watcher.resource_watch import Change, ResourceWatch
from services.watcher.service import SYNCED, WatchReadiness
from spreadbus.runtime.health import ReadinessGate
from spreadbus.runtime.kube_client import KubeClient, RequestOptions, api_error, kube_api_client
from tests.fixtures.polling import wait_until_async

CONFIG_MAPS = ResourceRef(group="", version="v1", resource="configmaps")
SECRETS = ResourceRef(group="", version="v1", resource="secrets")
REFUSAL = (b'{"kind":"Status","reason":"Forbidden","message":"secrets is forbidden: User '
           b'\\"system:serviceaccount:spreadbus:watcher\\" cannot list resource \\"secrets\\" '
           b'in API group \\"\\" at the cluster scope"}')


class RefusingClient(KubeClient):
    """kubesim over HTTP, except one resource, refused as a missing RBAC rule refuses it."""

    def __init__(self, api: client.ApiClient, refused: str) -> None:
        super().__init__(api)
        self.refused = refused
        self.refusing = True
        self.refusals = 0

    def _check(self, path: str) -> None:
        if self.refusing and path.rstrip("/").endswith(self.refused):
            self.refusals += 1
            raise api_error(403, REFUSAL, "Forbidden")

    def request(self, method: str, path: str, **options: Unpack[RequestOptions]) -> bytes:
        self._check(path)
        return super().request(method, path, **options)

    def stream(self, path: str, **kwargs: Any) -> Iterator[bytes]:
        self._check(path)
        return super().stream(path, **kwargs)


def forbidden_gauge(registry: CollectorRegistry, resource: str) -> float | None:
    return registry.get_sample_value("spreadbus_watcher_resource_forbidden",
                                     {"group": "", "resource": resource})


async def test_a_refused_resource_is_reported_and_the_others_make_the_watcher_ready(
    kubesim_factory: Callable[..., KubeSimThread], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sim = kubesim_factory()
    api = kube_api_client(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    client.CoreV1Api(api).create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="one", namespace="default"), data={"v": "1"}))
    kube = RefusingClient(api, "/secrets")
    seen: list[Change] = []

    async def emit(change: Change) -> None:
        seen.append(change)

    async def mark(complete: bool, rv: str, count: int) -> None:
        return None

    watches = [ResourceWatch(kube, ref, emit=emit, mark=mark, watch_timeout=5)
               for ref in (CONFIG_MAPS, SECRETS)]
    registry = CollectorRegistry()
    readiness = WatchReadiness(watches, registry)
    stopping = asyncio.Event()
    caplog.set_level(logging.INFO, logger="services.watcher.resource_watch")
    tasks = [asyncio.create_task(w.run(stopping)) for w in watches]
    try:
        assert not readiness.synced()  # nothing listed yet
        await wait_until_async(readiness.synced, what="watcher ready")
        refused = watches[1]
        assert "cannot list resource" in refused.forbidden
        assert not refused.synced
        assert readiness.forbidden() == [SECRETS]
        assert forbidden_gauge(registry, "secrets") == 1.0
        assert forbidden_gauge(registry, "configmaps") == 0.0
        assert [c.name for c in seen] == ["one"]
        gate = ReadinessGate(SYNCED)
        readiness.report(gate)
        assert gate.ready, "a refused resource is a note, not a reason to be unready"
        assert gate.notes == {"forbidden secrets": refused.forbidden}
        await wait_until_async(lambda: kube.refusals >= 3, what="retries of the refused list")
        reported = [r for r in caplog.records
                    if r.getMessage() == "resource forbidden, not watched"]
        assert len(reported) == 1  # logged once, not on every retry

        kube.refusing = False  # the RBAC rule is granted: the next retry lists it
        await wait_until_async(lambda: refused.synced and not refused.forbidden,
                               what="secrets listed")
        assert readiness.synced()
        assert readiness.forbidden() == []
        assert forbidden_gauge(registry, "secrets") == 0.0
        readiness.report(gate)
        assert gate.ready
        assert gate.notes == {}
    finally:
        stopping.set()
        await asyncio.gather(*tasks)
        api.close()  # type: ignore[no-untyped-call]
