"""Through real processes: kubectl creates a Deployment, the actuator annotates it, and the
chain observation -> plan -> outcome is on the bus with matching ids.

``KUBE`` keeps only the Deployment's latest observation, so the observations the plans name as
their causes are recorded by a follower while they pass; the stream at the end holds one.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from events.messages import Observation, Outcome, Plan
from kubesim import KubeSimThread
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.bus_recording import KubeRecorder, last_seq, read_stream
from tests.backbone.service_processes import stack
from tests.fixtures.observed_generation import ANNOTATION, written_value
from tests.fixtures.polling import wait_until

KUBECTL = str(Path(sys.executable).parent / "kubectl")

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: app, image: "nginx:1"}]}
"""


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def shop_observations(kube: list[tuple[int, Any]]) -> list[Observation]:
    return [o for _, o in kube if isinstance(o, Observation) and o.resource == "deployments"
            and o.object["metadata"]["name"] == "shop"]


@pytest.mark.e2e
def test_a_deployment_created_with_kubectl_gets_its_annotation_through_the_bus(
    nats_server: NatsServer, kubesim: KubeSimThread, tmp_path: Path
) -> None:
    kubeconfig = kubesim.write_kubeconfig(tmp_path / "kubeconfig")
    logs = tmp_path / "logs"
    logs.mkdir()
    with KubeRecorder(nats_server.url) as recorder, \
            stack(nats_server.url, kubeconfig, logs) as services:
        for service in services.values():
            service.wait_ready()
        kubectl(kubeconfig, "apply", "-f", "-", stdin=DEPLOYMENT)

        def annotated() -> dict[str, Any] | None:
            obj = json.loads(kubectl(kubeconfig, "get", "deployment", "shop", "-o", "json"))
            value = obj["metadata"].get("annotations", {}).get(ANNOTATION)
            return obj if value == str(obj["metadata"]["generation"]) else None

        wait_until(annotated, what="the annotation", timeout=60, interval=0.1)
        kubectl(kubeconfig, "scale", "deployment", "shop", "--replicas", "3")
        final = wait_until(annotated, what="the annotation after a spec change", timeout=60,
                           interval=0.1)
        assert final["metadata"]["generation"] == 2

        metrics = services["actuator"].metrics()
        assert 'spreadbus_actuator_outcomes_total{result="applied"}' in metrics
        codes = {name: s.terminate() for name, s in services.items()}
        published = asyncio.run(last_seq(nats_server.url, "KUBE"))
        wait_until(lambda: recorder.last_seq >= published, what=f"KUBE recorded to {published}")
        history = recorder.messages()
    assert codes == {"watcher": 0, "planner": 0, "actuator": 0}

    [latest] = shop_observations(asyncio.run(read_stream(nats_server.url, "KUBE")))
    assert latest.object["metadata"]["annotations"][ANNOTATION] == "2"
    assert len(shop_observations(history)) > 1  # the stream kept only the last of these
    plans = [p for _, p in asyncio.run(read_stream(nats_server.url, "PLANS"))]
    outcomes = [o for _, o in asyncio.run(read_stream(nats_server.url, "OUTCOMES"))]
    assert all(isinstance(p, Plan) for p in plans)
    assert all(isinstance(o, Outcome) for o in outcomes)
    assert [written_value(p.patch) for p in plans] == ["1", "2"]
    by_seq = dict(history)
    for plan in plans:
        [cause] = plan.causes
        observation = by_seq[cause]
        assert isinstance(observation, Observation)
        assert observation.object["metadata"]["name"] == "shop"
        assert observation.object["metadata"]["uid"] == plan.target.uid
        assert str(observation.object["metadata"]["generation"]) == written_value(plan.patch)
    assert sorted(o.plan_id for o in outcomes) == sorted(p.id for p in plans)
    assert {o.result for o in outcomes} == {"applied"}
