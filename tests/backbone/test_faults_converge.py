"""Crashes converge: kill -9 of planner, actuator and watcher during 500 Deployment changes, and
one nats-server restart, end in the same state as a run without faults, with one outcome per
plan and no plan applied twice."""

from __future__ import annotations

import asyncio
import collections
import random
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from events.messages import Outcome, Plan
from kubesim import KubeSimThread
from spreadbus.projection.observed_generation import ANNOTATION
from spreadbus.runtime.kube_client import kube_api_client
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.service_processes import ServiceProcess, stack
from tests.backbone.test_end_to_end_annotation import read_stream

DEPLOYMENTS = 20
CHANGES = 500


def body(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "app", "image": "img:1"}]}}},
    }


def converged(apps: client.AppsV1Api) -> bool:
    items = apps.list_namespaced_deployment("default").items
    return len(items) == DEPLOYMENTS and all(
        (d.metadata.annotations or {}).get(ANNOTATION) == str(d.metadata.generation)
        for d in items
    )


@pytest.mark.e2e
@pytest.mark.slow
def test_kills_and_a_nats_restart_during_500_changes_converge(
    nats_server: NatsServer, kubesim: KubeSimThread, tmp_path: Path
) -> None:
    seed = random.randrange(1 << 30)
    print(f"fault schedule seed: {seed}")
    rng = random.Random(seed)
    kubeconfig = kubesim.write_kubeconfig(tmp_path / "kubeconfig")
    logs = tmp_path / "logs"
    logs.mkdir()
    api = kube_api_client(str(kubeconfig))
    apps = client.AppsV1Api(api)
    with stack(nats_server.url, kubeconfig, logs, resources="apps/v1/deployments") as services:
        common = ["--nats-url", nats_server.url, "--cluster", "e2e",
                  "--kubeconfig", str(kubeconfig)]
        extra = [
            ServiceProcess("planner", [*common, "--lease-ttl-seconds", "3",
                                       "--planner-id", "standby"], logs).start(),
            ServiceProcess("actuator", common, logs).start(),
        ]
        victims: list[ServiceProcess] = [*services.values(), *extra]
        try:
            for service in victims:
                service.wait_ready()
            for i in range(DEPLOYMENTS):
                apps.create_namespaced_deployment("default", body(f"d{i}"))
            nats_restart_at = rng.randrange(100, CHANGES - 100)
            for change in range(CHANGES - DEPLOYMENTS):
                name = f"d{rng.randrange(DEPLOYMENTS)}"
                apps.patch_namespaced_deployment(name, "default",
                                                 {"spec": {"replicas": rng.randrange(1, 6)}})
                if change % 40 == 39:
                    victim = rng.choice(victims)
                    victim.kill()
                    victim.start()
                if change == nats_restart_at:
                    nats_server.restart()
            changes_done = time.monotonic()
            deadline = time.monotonic() + 90
            while not converged(apps):
                assert time.monotonic() < deadline, "did not converge:\n" + "\n".join(
                    v.logs()[-1500:] for v in victims)
                time.sleep(0.2)
            print(f"converged {time.monotonic() - changes_done:.1f} s after the last change")
            # Every plan gets its outcome; wait for the last ones in flight.
            deadline = time.monotonic() + 60
            while True:
                plans = [p for _, p in asyncio.run(read_stream(nats_server.url, "PLANS"))]
                outcomes = [o for _, o in asyncio.run(read_stream(nats_server.url, "OUTCOMES"))]
                if len(outcomes) >= len(plans):
                    break
                assert time.monotonic() < deadline, f"{len(plans)} plans, {len(outcomes)} outcomes"
                time.sleep(0.3)
        finally:
            for service in extra:
                service.kill()
    api.close()

    assert all(isinstance(p, Plan) for p in plans)
    assert all(isinstance(o, Outcome) for o in outcomes)
    per_plan = collections.Counter(o.plan_id for o in outcomes)
    assert set(per_plan) == {p.id for p in plans}
    assert max(per_plan.values()) == 1
    assert len({p.id for p in plans}) == len(plans)  # no plan published twice
    by_id = {p.id: p for p in plans}
    applied = collections.Counter(
        (plan.target.name, plan.patch["metadata"]["annotations"][ANNOTATION])
        for plan in (by_id[o.plan_id] for o in outcomes if o.result == "applied")
    )
    assert max(applied.values()) == 1  # no change applied twice
    print(f"{len(plans)} plans, results {collections.Counter(o.result for o in outcomes)}")
