"""One nats-server, a host control plane and one member, each a real kubesim: the member's
agent (watcher, actuator and webhook, ``--cluster member1``) registers its Cluster in the host,
the planner and the host's actuator make it Ready with the member's version and resource
summary; once the agent's heartbeats stop, the Cluster turns Unknown and is tainted unreachable
after the grace period (a few seconds here, a setting)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from spreadbus.clusterregistry.heartbeat import BUCKET, heartbeat_key
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.service_processes import ServiceProcess, logs_on_failure
from tests.fixtures.kubesim import kubesim_process
from tests.fixtures.polling import wait_until
from tests.webhook.conftest import WebhookTls, webhook_tls  # noqa: F401 (the fixture)

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = str(Path(sys.executable).parent / "kubectl")
CRD = ROOT / "deploy" / "crds" / "cluster.karmada.io_clusters.yaml"
GRACE_SECONDS = 3.0


def kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def cluster(kubeconfig: Path, name: str) -> dict[str, Any] | None:
    try:
        out = kubectl(kubeconfig, "get", "clusters.cluster.karmada.io", name, "-o", "json")
    except subprocess.CalledProcessError:
        return None
    found: dict[str, Any] = json.loads(out)
    return found


def ready_of(obj: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions", [])
                 if c.get("type") == "Ready"), {})


def taint_keys(obj: dict[str, Any]) -> list[str]:
    return [t["key"] for t in obj.get("spec", {}).get("taints") or []
            if t.get("effect") == "NoSchedule"]


def heartbeat_revision(url: str) -> int:
    """The revision of member1's heartbeat entry: one more per heartbeat."""
    async def read() -> int:
        nc = await nats.connect(url)
        try:
            kv = await nc.jetstream().key_value(BUCKET)
            return int((await kv.get(heartbeat_key("member1"))).revision or 0)
        finally:
            await nc.close()
    return asyncio.run(read())


def plans_published(planner: ServiceProcess) -> float:
    name = 'spreadbus_planner_plans_total{rule="cluster-status"}'
    return sum(float(line.split()[-1]) for line in planner.metrics().splitlines()
               if line.startswith(name))


@contextlib.contextmanager
def started(*services: ServiceProcess) -> Iterator[None]:
    try:
        for service in services:
            service.start()
        with logs_on_failure(*services):
            yield
    finally:
        for service in services:
            with contextlib.suppress(Exception):
                service.terminate(10)
            service.kill()


def test_a_member_registers_turns_ready_and_then_unknown_when_its_agent_stops(
    nats_server: NatsServer, webhook_tls: WebhookTls, tmp_path: Path,  # noqa: F811
) -> None:
    (tmp_path / "host").mkdir()
    (tmp_path / "member1").mkdir()
    # One log directory per cluster: the services of both are named alike.
    logs, agent_logs = tmp_path / "logs" / "host", tmp_path / "logs" / "member1"
    logs.mkdir(parents=True)
    agent_logs.mkdir()
    with kubesim_process(tmp_path / "host" / "kubeconfig", "--control-plane") as host, \
            kubesim_process(tmp_path / "member1" / "kubeconfig") as member:
        kubectl(host.kubeconfig, "apply", "-f", str(CRD))
        bus = ["--nats-url", nats_server.url]
        hub = [*bus, "--cluster", "host", "--kubeconfig", str(host.kubeconfig)]
        agent = [*bus, "--cluster", "member1", "--kubeconfig", str(member.kubeconfig)]
        host_side = [
            ServiceProcess("watcher", [*hub, "--resources",
                                       "cluster.karmada.io/v1alpha1/clusters"], logs),
            ServiceProcess("planner", [*hub, "--lease-ttl-seconds", "3",
                                       "--cluster-monitor-grace-seconds", str(GRACE_SECONDS)],
                           logs),
            ServiceProcess("actuator", hub, logs),
        ]
        watcher = ServiceProcess("watcher", [*agent, "--heartbeat-seconds", "0.5",
                                             "--host-kubeconfig", str(host.kubeconfig)],
                                 agent_logs)
        member_side = [
            ServiceProcess("actuator", agent, agent_logs),
            ServiceProcess("webhook", [*agent, "--host", "127.0.0.1", "--port", "0",
                                       "--tls-cert", str(webhook_tls.server.cert),
                                       "--tls-key", str(webhook_tls.server.key)], agent_logs),
        ]
        with started(*host_side, *member_side, watcher):
            for service in (*host_side, *member_side, watcher):
                service.wait_ready()

            def ready() -> dict[str, Any] | None:
                obj = cluster(host.kubeconfig, "member1")
                if obj is None or ready_of(obj).get("status") != "True":
                    return None
                summary = obj["status"].get("resourceSummary", {})
                # A Cluster seen before its first heartbeat is tainted not-ready at first.
                settled = summary.get("allocatable", {}).get("cpu") and not taint_keys(obj)
                return obj if settled else None

            registered = wait_until(ready, what="member1 Ready with a resource summary",
                                    timeout=60, interval=0.2)
            assert registered["spec"]["syncMode"] == "Pull"
            assert ready_of(registered)["reason"] == "ClusterReady"
            assert registered["status"]["kubernetesVersion"].startswith("v1.")
            assert registered["status"]["nodeSummary"]["totalNum"] > 0
            assert "pods" in registered["status"]["resourceSummary"]["allocatable"]
            assert taint_keys(registered) == []
            # Heartbeats that change nothing write nothing: no plan while four more come.
            planned = plans_published(host_side[1])
            assert planned >= 1
            seen = heartbeat_revision(nats_server.url)
            wait_until(lambda: heartbeat_revision(nats_server.url) >= seen + 4,
                       what="four more heartbeats", timeout=30, interval=0.2)
            assert plans_published(host_side[1]) == planned

            watcher.terminate(20)

            def unknown() -> dict[str, Any] | None:
                obj = cluster(host.kubeconfig, "member1")
                if obj is None or ready_of(obj).get("status") != "Unknown":
                    return None
                return obj if taint_keys(obj) == ["cluster.karmada.io/unreachable"] else None

            lost = wait_until(unknown, what="member1 Unknown and tainted unreachable",
                              timeout=60, interval=0.2)
            assert ready_of(lost)["reason"] == "ClusterStatusUnknown"
            # What the member last reported stays, as Karmada keeps it.
            assert lost["status"]["resourceSummary"] == registered["status"]["resourceSummary"]
