"""A host and member clusters wired by hand, as the multi-cluster tests wire them, for the
benchmarks that time work spread over members.

A hub nats-server and one leaf nats-server per member dialing it (each domain set up by
``spreadbus bus-setup``), a host kubesim in control-plane mode and one kubesim per member, every
CRD of deploy/ in each. The host runs the watcher, the planner (UnitedDeployments' control plane)
and the actuator; each member its watcher (registering its Cluster in the host) and its actuator.
Member1's leaf link can go through a :class:`DelayProxy`, a TCP relay holding each byte for a
set delay in each direction, so the cost of a slow link can be measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats

from events import streams
from spreadbus.cli import main as spreadbus
from spreadbus.runtime import member_bus
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.service_processes import ServiceProcess
from tests.fixtures.kubesim import KubeSimProcess, kubesim_process

ROOT = Path(__file__).resolve().parent.parent
KUBECTL = str(Path(sys.executable).parent / "kubectl")
TOPOLOGY = "bench-100"
KUBELET = ["--create-delay=0.01", "--start-delay=0.02", "--ready-delay=0.01",
           "--max-termination-grace=0.05", "--no-events"]
"""kubesim's fast kubelet, the same as the single-cluster benchmarks'."""
ACTUATOR = {"SPREADBUS_KUBE_QPS": "1000", "SPREADBUS_KUBE_BURST": "1000", "SPREADBUS_WORKERS": "16"}


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def get_json(kubeconfig: Path, *args: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(kubeconfig, "get", *args, "-o", "json"))
    return found


def apply(kubeconfig: Path, obj: dict[str, Any]) -> None:
    kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(obj))


def wait(what: str, check: Any, timeout: float = 600.0, interval: float = 0.1) -> float:
    """The time (``perf_counter``) at which ``check()`` first held."""
    deadline = time.perf_counter() + timeout
    while not check():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{what}: not reached in {timeout:.0f} s")
        time.sleep(interval)
    return time.perf_counter()


class DelayProxy:
    """A TCP relay on 127.0.0.1 to ``upstream``; every chunk is forwarded ``delay`` seconds after
    it arrived, in order, in both directions (latency, not a bandwidth limit). ``delay`` may be
    changed while it runs."""

    def __init__(self, upstream_port: int, delay: float = 0.0) -> None:
        self.upstream_port = upstream_port
        self.delay = delay
        self.port = 0
        self.relayed = 0
        """Bytes forwarded so far, both ways."""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        async def close() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._relay, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer),
                                 return_exceptions=True)
        except asyncio.CancelledError:  # the relay is closing: both ends go with it
            writer.close()
            up_writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                pause = due - time.monotonic()
                if pause > 0:
                    await asyncio.sleep(pause)
                writer.write(data)
                self.relayed += len(data)
                await writer.drain()

        sender = asyncio.ensure_future(send())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((time.monotonic() + self.delay, data))
        finally:
            queue.put_nowait((0.0, b""))
            with contextlib.suppress(Exception):
                await sender
            writer.close()


@dataclass
class Rig:
    host: KubeSimProcess
    members: dict[str, KubeSimProcess]
    proxy: DelayProxy
    """Member1's leaf link goes through it."""
    services: list[ServiceProcess] = field(default_factory=list)


async def _agent_streams(url: str, member: str) -> None:
    """The two streams a member's services also ask for, which the member's set-up does not
    make: its admissions and audit history, in its own domain."""
    nc = await nats.connect(url)
    try:
        await ensure_streams(nc.jetstream(), tuple(
            member_bus.replace_spec(spec, subjects=member_bus.member_subjects(spec, member))
            for spec in (streams.ADMISSIONS, streams.HISTORY)))
    finally:
        await nc.close()


def _bus_setup(*args: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        if spreadbus(["bus-setup", *args]) != 0:
            raise RuntimeError(f"spreadbus bus-setup {' '.join(args)} failed")


def _stop(service: ServiceProcess) -> None:
    with contextlib.suppress(Exception):
        service.terminate(10)
    service.kill()


def clusters_ready(kubeconfig: Path, members: Sequence[str]) -> bool:
    ready = {item["metadata"]["name"]
             for item in get_json(kubeconfig, "clusters.cluster.karmada.io")["items"]
             for c in item.get("status", {}).get("conditions", [])
             if c.get("type") == "Ready" and c.get("status") == "True"}
    return set(members) <= ready


@contextlib.contextmanager
def multicluster(workdir: Path, members: Sequence[str]) -> Iterator[Rig]:
    """The host and ``members``, every service ready and every member's Cluster Ready."""
    os.environ.update(ACTUATOR)
    conf = workdir / "conf"
    hub = member_bus.start_hub(workdir / "hub-store", conf, {})
    leaves = []
    with contextlib.ExitStack() as stack:
        stack.callback(hub.stop)
        proxy = stack.enter_context(DelayProxy(hub.leaf_port))
        for i, member in enumerate(members):
            url = f"nats-leaf://127.0.0.1:{proxy.port}" if i == 0 else hub.leaf_url
            leaf = member_bus.start_member_server(workdir / f"{member}-store", conf, member,
                                                  url, "")
            stack.callback(leaf.stop)
            leaves.append(leaf)
            _bus_setup("--nats-url", leaf.url, "--member", member)
            asyncio.run(_agent_streams(leaf.url, member))
        _bus_setup("--nats-url", hub.server.url, "--members", ",".join(members))
        for name in ("host", *members):
            (workdir / name / "logs").mkdir(parents=True)
        host = stack.enter_context(kubesim_process(workdir / "host" / "kubeconfig",
                                                   "--control-plane"))
        sims = {m: stack.enter_context(kubesim_process(
            workdir / m / "kubeconfig", f"--topology={TOPOLOGY}", *KUBELET)) for m in members}
        for sim in (host, *sims.values()):
            kubectl(sim.kubeconfig, "apply", "-f", str(ROOT / "deploy" / "crds"))
            kubectl(sim.kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
                    "crd", "--all")
        hub_args = ["--nats-url", hub.server.url, "--cluster", "host",
                    "--kubeconfig", str(host.kubeconfig)]
        logs = workdir / "host" / "logs"
        rig = Rig(host=host, members=sims, proxy=proxy, services=[
            ServiceProcess("watcher", hub_args, logs),
            ServiceProcess("planner", [*hub_args, "--lease-ttl-seconds", "3",
                                       "--uniteddeployment-control-plane", "true"], logs),
            ServiceProcess("actuator", hub_args, logs)])
        for member, leaf in zip(members, leaves, strict=True):
            agent = ["--nats-url", leaf.url, "--cluster", member,
                     "--kubeconfig", str(sims[member].kubeconfig)]
            logs = workdir / member / "logs"
            rig.services += [
                ServiceProcess("watcher", [*agent, "--heartbeat-seconds", "0.5",
                                           "--host-kubeconfig", str(host.kubeconfig)], logs),
                ServiceProcess("actuator", [*agent, "--host-kubeconfig", str(host.kubeconfig),
                                            "--host-cluster", "host"], logs)]
        for service in rig.services:
            service.start()
            stack.callback(_stop, service)
        for service in rig.services:
            service.wait_ready(120)
        wait("every member's Cluster Ready", lambda: clusters_ready(host.kubeconfig, members),
             timeout=120, interval=0.5)
        yield rig


def alone(directory: Path, obj: dict[str, Any], resource: str, replicas: int) -> float:
    """Seconds for ``obj`` (``resource``, in ``default``) to have ``replicas`` ready in one
    kubesim of the members' kind (its files in ``directory``), no spreadbus."""
    directory.mkdir(parents=True)
    with kubesim_process(directory / "kubeconfig", f"--topology={TOPOLOGY}",
                         *KUBELET) as sim:
        kubectl(sim.kubeconfig, "apply", "-f", str(ROOT / "deploy" / "crds"))
        kubectl(sim.kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
                "crd", "--all")
        name = obj["metadata"]["name"]
        started = time.perf_counter()
        apply(sim.kubeconfig, obj)
        return wait(f"{resource} {name} Ready", lambda: ready_replicas(
            sim.kubeconfig, resource, name) >= replicas) - started


def ready_replicas(kubeconfig: Path, resource: str, name: str) -> int:
    """``status.readyReplicas`` of ``resource`` ``name`` in ``default`` (0 while absent)."""
    try:
        obj = get_json(kubeconfig, resource, name, "-n", "default")
    except subprocess.CalledProcessError:
        return 0
    return int(obj.get("status", {}).get("readyReplicas") or 0)
