"""Through real processes: kubectl creates a Deployment, the actuator annotates it, and the
chain observation -> plan -> outcome is on the bus with matching ids."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nats
import pytest

from events import codec
from events.messages import Observation, Outcome, Plan
from kubesim import KubeSimThread
from spreadbus.projection.observed_generation import ANNOTATION, written_value
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.service_processes import stack

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


def wait_for(check: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def read_stream(url: str, stream: str) -> list[tuple[int, Any]]:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        info = await js.stream_info(stream)
        out = []
        for seq in range(info.state.first_seq or 1, info.state.last_seq + 1):
            msg = await js.get_msg(stream, seq)
            out.append((seq, codec.decode(msg.data or b"")))
        return out
    finally:
        await nc.close()


@pytest.mark.e2e
def test_a_deployment_created_with_kubectl_gets_its_annotation_through_the_bus(
    nats_server: NatsServer, kubesim: KubeSimThread, tmp_path: Path
) -> None:
    kubeconfig = kubesim.write_kubeconfig(tmp_path / "kubeconfig")
    logs = tmp_path / "logs"
    logs.mkdir()
    with stack(nats_server.url, kubeconfig, logs) as services:
        for service in services.values():
            service.wait_ready()
        kubectl(kubeconfig, "apply", "-f", "-", stdin=DEPLOYMENT)

        def annotated() -> dict[str, Any] | None:
            obj = json.loads(kubectl(kubeconfig, "get", "deployment", "shop", "-o", "json"))
            value = obj["metadata"].get("annotations", {}).get(ANNOTATION)
            return obj if value == str(obj["metadata"]["generation"]) else None

        wait_for(annotated, "the annotation")
        kubectl(kubeconfig, "scale", "deployment", "shop", "--replicas", "3")
        final = wait_for(annotated, "the annotation after a spec change")
        assert final["metadata"]["generation"] == 2

        metrics = services["actuator"].metrics()
        assert 'spreadbus_actuator_outcomes_total{result="applied"}' in metrics
        codes = {name: s.terminate() for name, s in services.items()}
    assert codes == {"watcher": 0, "planner": 0, "actuator": 0}

    kube = asyncio.run(read_stream(nats_server.url, "KUBE"))
    plans = [p for _, p in asyncio.run(read_stream(nats_server.url, "PLANS"))]
    outcomes = [o for _, o in asyncio.run(read_stream(nats_server.url, "OUTCOMES"))]
    assert all(isinstance(p, Plan) for p in plans)
    assert all(isinstance(o, Outcome) for o in outcomes)
    assert [written_value(p.patch) for p in plans] == ["1", "2"]
    by_seq = dict(kube)
    for plan in plans:
        [cause] = plan.causes
        observation = by_seq[cause]
        assert isinstance(observation, Observation)
        assert observation.object["metadata"]["name"] == "shop"
        assert observation.object["metadata"]["uid"] == plan.target.uid
        assert str(observation.object["metadata"]["generation"]) == written_value(plan.patch)
    assert sorted(o.plan_id for o in outcomes) == sorted(p.id for p in plans)
    assert {o.result for o in outcomes} == {"applied"}
