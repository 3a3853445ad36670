"""A subscriber that knows only NATS and JSON reads what the watcher publishes.

Nothing from spreadbus is imported on the reading side: the subscriber uses nats-py and the
standard json module, and checks the message against the documented JSON Schema fields.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import nats

from events import codec, subjects
from events.messages import Observation
from spreadbus.runtime.nats_server import NatsServer

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "resourceVersion": "7",
                 "labels": {"app": "web"}},
    "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "nginx"}]},
    "status": {"phase": "Running"},
}


async def test_plain_nats_py_decodes_a_pod_observation_from_json(
    nats_server: NatsServer,
) -> None:
    reader = await nats.connect(nats_server.url)
    received: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def on_msg(msg: nats.aio.msg.Msg) -> None:
        if not received.done():
            received.set_result(msg.data)

    await reader.subscribe("kube.obs.*._.pods.>", cb=on_msg)
    writer = await nats.connect(nats_server.url)
    observation = Observation(cluster="east", group="", version="v1", resource="pods",
                              event="ADDED", object=POD, ts=1700000000.5)
    await writer.publish(subjects.observation("east", "", "pods", "shop", "web-1"),
                         codec.encode(observation))
    data = await asyncio.wait_for(received, 10)
    await writer.close()
    await reader.close()

    message = json.loads(data)
    assert message["type"] == "observation"
    assert message["v"] == 1
    assert message["event"] == "ADDED"
    assert message["object"]["spec"]["nodeName"] == "node-a"
    assert message["object"]["metadata"]["labels"] == {"app": "web"}


def test_the_schema_command_lists_the_observation_fields(tmp_path: Path) -> None:
    out = tmp_path / "schema.json"
    subprocess.run([sys.executable, "-m", "spreadbus", "events", "schema", "-o", str(out)],
                   check=True, timeout=60)
    schema = json.loads(out.read_text())
    observation = schema["$defs"]["Observation"]
    assert observation["properties"]["type"] == {"enum": ["observation"]}
    assert set(observation["required"]) >= {"cluster", "resource", "event", "object"}
