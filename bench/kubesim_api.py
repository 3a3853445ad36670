"""kubesim API throughput (creates/s, list latency, watch fan-out) and what webhooks cost it.

kubesim runs as its own process (``python -m kubesim --insecure-http --no-behaviour``), the load
generator here, so the two share the machine's cores as a client and an API server would. The
limit measured in the same run is a bare aiohttp server that answers every POST with the body
it got (``--echo-server``): ``ratio`` lines compare kubesim to that ceiling, so results carry
across machines. Absolute figures are printed too, with the goals from the kubesim issue
(2,000 creates/s without watchers, 1,000/s with 10 watchers, on 2 cores).

The admission phase runs kubesim in this process and an HTTPS admission webhook as a child
(``--webhook-server``), and gives kubesim's own CPU time per pod for a pod's life as the local
stack drives it (a create, a binding, two status updates, a merge patch): once with spreadbus's
three webhooks installed (a mutating one for pod creation, which answers with a JSONPatch; the
validating ones for pod deletion and for WorkloadSpreads, which these writes never reach), once
with none. Their ratio is what admission adds to kubesim's work.

``SPREADBUS_BENCH_FULL=1`` creates 10,000 pods per phase (default 3,000, ``--size``); the
list-latency phase fills the namespace to 10,000 pods (``--list-size``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench import _tiny

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"
CONCURRENCY = 32
WATCHERS = 10
CREATE_GOAL = 2000.0
CREATE_WITH_WATCHERS_GOAL = 1000.0


def _pod(name: str, namespace: str) -> bytes:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"app": "bench", "shard": name[-1]},
            },
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        }
    ).encode()


class Server:
    """A child process serving HTTP; ``url`` is read from its first stdout line."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *args], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError(f"server did not start: {self.url!r}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)
        if self.proc.stdout:
            self.proc.stdout.close()


async def _create_all(
    session: aiohttp.ClientSession, url: str, namespace: str, names: list[str]
) -> float:
    """Create ``names`` with CONCURRENCY requests in flight; returns creates per second."""
    path = f"{url}/api/v1/namespaces/{namespace}/pods"
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    queue = iter(names)
    failures = 0

    async def worker() -> None:
        nonlocal failures
        for name in queue:
            async with session.post(path, data=_pod(name, namespace), headers=headers) as resp:
                await resp.read()
                if resp.status != 201:
                    failures += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    elapsed = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"{failures} creates failed")
    return len(names) / elapsed


async def _make_namespace(session: aiohttp.ClientSession, url: str, name: str) -> None:
    async with session.post(
        f"{url}/api/v1/namespaces",
        json={"metadata": {"name": name}},
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as resp:
        await resp.read()


async def _watch(
    session: aiohttp.ClientSession, url: str, namespace: str, rv: str, expect: int, done: list[int]
) -> None:
    path = f"{url}/api/v1/namespaces/{namespace}/pods?watch=true&resourceVersion={rv}"
    seen = 0
    async with session.get(
        path,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=aiohttp.ClientTimeout(total=None),
    ) as resp:
        async for _line in resp.content:
            seen += 1
            if seen >= expect:
                break
    done.append(seen)


async def _list_rv(session: aiohttp.ClientSession, url: str, namespace: str) -> str:
    async with session.get(
        f"{url}/api/v1/namespaces/{namespace}/pods?limit=1",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as resp:
        body = await resp.json()
    return str(body["metadata"]["resourceVersion"])


async def _time_get(session: aiohttp.ClientSession, url: str, repeat: int = 5) -> tuple[float, int]:
    times = []
    size = 0
    for _ in range(repeat):
        started = time.perf_counter()
        async with session.get(url, headers={"Authorization": f"Bearer {TOKEN}"}) as resp:
            body = await resp.read()
        times.append(time.perf_counter() - started)
        size = len(body)
    return statistics.median(times), size


async def run(size: int, list_size: int) -> None:
    echo = Server("-m", "bench.kubesim_api", "--echo-server")
    sim = Server(
        "-m",
        "kubesim",
        "--insecure-http",
        "--port",
        "0",
        "--no-behaviour",
        "--token",
        TOKEN,
        "--watch-history",
        str(4 * list_size),
    )
    try:
        connector = aiohttp.TCPConnector(limit=CONCURRENCY + WATCHERS + 4)
        async with aiohttp.ClientSession(connector=connector) as session:
            names = [f"warm-{i}" for i in range(min(300, size))]
            await _create_all(session, echo.url, "default", names)
            await _create_all(session, sim.url, "default", names)

            echo_rate = await _create_all(
                session, echo.url, "default", [f"e-{i}" for i in range(size)]
            )
            print(f"echo server (limit): {echo_rate:,.0f} POST/s")

            await _make_namespace(session, sim.url, "plain")
            rate = await _create_all(session, sim.url, "plain", [f"p-{i}" for i in range(size)])
            print(f"pod creates, no watchers: {rate:,.0f}/s (goal {CREATE_GOAL:,.0f}/s)")
            print(f"ratio creates/echo: {rate / echo_rate:.3f}")

            await _make_namespace(session, sim.url, "watched")
            rv = await _list_rv(session, sim.url, "watched")
            done: list[int] = []
            watchers = [
                asyncio.create_task(_watch(session, sim.url, "watched", rv, size, done))
                for _ in range(WATCHERS)
            ]
            await asyncio.sleep(0.5)
            started = time.perf_counter()
            rate_w = await _create_all(session, sim.url, "watched", [f"w-{i}" for i in range(size)])
            await asyncio.wait_for(asyncio.gather(*watchers), 300)
            fanout_elapsed = time.perf_counter() - started
            delivered = sum(done)
            print(
                f"pod creates, {WATCHERS} watchers: {rate_w:,.0f}/s "
                f"(goal {CREATE_WITH_WATCHERS_GOAL:,.0f}/s)"
            )
            print(f"ratio creates with watchers/without: {rate_w / rate:.3f}")
            print(
                f"watch fan-out: {delivered:,} events to {WATCHERS} watchers "
                f"({delivered / fanout_elapsed:,.0f} events/s, every watcher saw "
                f"{min(done):,}/{size:,})"
            )

            await _make_namespace(session, sim.url, "big")
            await _create_all(session, sim.url, "big", [f"l-{i}" for i in range(list_size)])
            full, full_bytes = await _time_get(session, f"{sim.url}/api/v1/namespaces/big/pods")
            page, _ = await _time_get(session, f"{sim.url}/api/v1/namespaces/big/pods?limit=500")
            selected, _ = await _time_get(
                session, f"{sim.url}/api/v1/namespaces/big/pods?labelSelector=shard%3D7"
            )
            print(
                f"list {list_size:,} pods: {full * 1000:.0f} ms ({full_bytes / 1e6:.1f} MB); "
                f"limit=500 page: {page * 1000:.1f} ms; labelSelector (1/10): "
                f"{selected * 1000:.0f} ms"
            )
            per_item_create = 1 / rate
            print(f"ratio list-per-pod/create-per-pod: {full / list_size / per_item_create:.3f}")
        in_process = await _in_process_rate(size)
        print(f"in-process Cluster.create (simulated controllers' path): {in_process:,.0f}/s")
        print(f"ratio in-process/HTTP creates: {in_process / rate:.3f}")
        pods = min(size, 2000)
        bare = await _admission_cpu(pods, None)
        webhook = Server("-m", "bench.kubesim_api", "--webhook-server")
        try:
            admitted = await _admission_cpu(pods, webhook)
        finally:
            webhook.stop()
        print(
            f"kubesim CPU per pod's life (create, binding, 2 status updates, patch): "
            f"{admitted * 1000:.2f} ms with the webhooks, {bare * 1000:.2f} ms without"
        )
        print(f"ratio CPU with webhooks/without: {admitted / bare:.3f}")
    finally:
        sim.stop()
        echo.stop()


async def _in_process_rate(size: int) -> float:
    """Creates through :class:`kubesim.interface.Cluster`, the path simulated controllers use."""
    from kubesim import KubeSim
    from kubesim.interface import PODS

    sim = KubeSim(tls=False)
    await sim.start()
    try:
        bodies = [json.loads(_pod(f"c-{i}", "default")) for i in range(size)]
        started = time.perf_counter()
        for body in bodies:
            await sim.cluster.create(PODS, body, namespace="default")
        return size / (time.perf_counter() - started)
    finally:
        await sim.stop()


async def _admission_cpu(pods: int, webhook: Server | None) -> float:
    """kubesim's CPU seconds per pod's life, in process, with ``webhook``'s configurations."""
    from kubesim import KubeSim
    from kubesim.interface import GVR, NAMESPACES, PODS

    sim = KubeSim(tls=False)
    await sim.start()
    cluster = sim.cluster
    try:
        await cluster.create(NAMESPACES, {"metadata": {"name": "admitted"}})
        if webhook is not None:
            for resource, configuration in _webhook_configurations(webhook).items():
                await cluster.create(
                    GVR("admissionregistration.k8s.io", "v1", resource), configuration
                )
        names = [f"a-{i}" for i in range(pods)]
        bodies = [json.loads(_pod(name, "admitted")) for name in names]  # outside the timing
        started = time.process_time()
        for first in range(0, pods, 100):
            await asyncio.gather(
                *(
                    cluster.create(PODS, body, namespace="admitted")
                    for body in bodies[first : first + 100]
                )
            )
        for name in names:
            binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": "node-1"}}
            await cluster.create(
                PODS, binding, namespace="admitted", name=name, subresource="binding"
            )
            for ready in ("False", "True"):
                pod = await cluster.get(PODS, name, namespace="admitted")
                pod["status"] = {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": ready}],
                }
                await cluster.update(PODS, pod, namespace="admitted", subresource="status")
            cost = {
                "metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost": "1"}}
            }
            await cluster.patch(PODS, name, cost, patch_type="merge", namespace="admitted")
        return (time.process_time() - started) / pods
    finally:
        await sim.stop()


def _webhook_configurations(webhook: Server) -> dict[str, dict[str, Any]]:
    """The installation's webhook configurations (deploy/webhook/), each webhook called at
    ``webhook``'s URL with its service path."""
    import yaml

    from spreadbus.cli.local_install import DEPLOY

    url, ca_bundle = webhook.url.split(" ")
    out: dict[str, dict[str, Any]] = {}
    for resource, file in (
        ("mutatingwebhookconfigurations", "mutating.yaml"),
        ("validatingwebhookconfigurations", "validating.yaml"),
    ):
        doc = yaml.safe_load((DEPLOY / "webhook" / file).read_text())
        doc["webhooks"] = [
            {
                **hook,
                "clientConfig": {
                    "url": url + hook["clientConfig"]["service"]["path"],
                    "caBundle": ca_bundle,
                },
            }
            for hook in doc["webhooks"]
        ]
        out[resource] = doc
    return out


async def _webhook_server() -> None:
    """An HTTPS admission webhook that allows everything, adding an annotation to pods.

    Prints ``URL CA_BUNDLE`` (base64 PEM) on one line once it serves.
    """
    import base64
    import ssl
    import tempfile

    from tlsserving import issue_server_cert, make_ca

    ca = make_ca("bench-webhook-ca")
    paths = issue_server_cert(ca, ["127.0.0.1"]).write(Path(tempfile.mkdtemp()), "webhook")
    patch = base64.b64encode(
        json.dumps(
            [{"op": "add", "path": "/metadata/annotations", "value": {"seen": "1"}}]
        ).encode()
    ).decode()

    async def handle(request: web.Request) -> web.Response:
        review = await request.json()
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
        if review["request"]["kind"]["kind"] == "Pod":
            response.update(patchType="JSONPatch", patch=patch)
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(paths.cert, paths.key)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"https://127.0.0.1:{port} {base64.b64encode(ca.cert_pem).decode()}", flush=True)
    await asyncio.Event().wait()


async def _echo_server() -> None:
    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=await request.read(), status=201, content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"http://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.kubesim_api", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--echo-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--webhook-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=None, help="pods per create phase")
    parser.add_argument("--list-size", type=int, default=10_000,
                        help="pods in the namespace the list latency is measured on")
    args = _tiny.arguments(parser, argv, {"size": 50, "list_size": 100})
    if args.echo_server or args.webhook_server:
        try:
            asyncio.run(_echo_server() if args.echo_server else _webhook_server())
        except KeyboardInterrupt:
            pass
        return 0
    size = args.size or (10_000 if os.environ.get("SPREADBUS_BENCH_FULL") else 3_000)
    asyncio.run(run(size, args.list_size))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
