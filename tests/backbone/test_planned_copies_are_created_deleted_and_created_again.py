"""The whole loop on create and delete plans: watcher, planner and actuator on kubesim and NATS.

A rule wants a copy of every ConfigMap labelled ``copy: "yes"`` (controlled by its source) and no
copy of one labelled ``copy: "no"``. Labelling, unlabelling and labelling again must create the
copy, delete it and create it again: the second create is a new plan, not an equal id that the
bus would drop as a duplicate.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Set
from pathlib import Path
from typing import Any

from kubernetes import client
from nats.aio.client import Client

from events.messages import ObjectRef, ResourceRef
from kubesim import KubeSimThread
from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from services.planner.planner import Planner
from services.watcher.service import prepare_watches
from services.watcher.settings import WatcherSettings
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired
from spreadbus.runtime.kube_client import KubeClient, kube_api_client
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.plan_grants import granting
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running

AUTHORITY = granting("copies", ("", "configmaps"), owner=("", "ConfigMap"))

CONFIG_MAPS = ResourceRef(group="", version="v1", resource="configmaps")


class Copies:
    """Wants ``<name>-copy`` of each ConfigMap labelled ``copy: "yes"``, and none when "no"."""

    name = "copies"
    resources = (CONFIG_MAPS,)

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        out: list[Desired] = []
        for _, source in view.iter_decoded("c1", "", "configmaps"):
            metadata = source["metadata"]
            wanted = (metadata.get("labels") or {}).get("copy")
            if wanted is None:
                continue
            target = ObjectRef(group="", version="v1", resource="configmaps",
                               namespace=metadata["namespace"], name=f"{metadata['name']}-copy")
            if wanted == "no":
                out.append(Desired(verb="delete", target=target, reason="copy unwanted"))
                continue
            copy = {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"ownerReferences": [{
                    "apiVersion": "v1", "kind": "ConfigMap", "name": metadata["name"],
                    "uid": metadata["uid"], "controller": True,
                }]},
                "data": source.get("data") or {},
            }
            out.append(Desired(verb="create", target=target, object=copy, reason="copy wanted"))
        return out


async def stream_bodies(nc: Client, stream: str) -> list[dict[str, Any]]:
    js = nc.jetstream()
    info = await js.stream_info(stream)
    return [json.loads((await js.get_msg(stream, seq)).data or b"")
            for seq in range(info.state.first_seq or 1, info.state.last_seq + 1)]


async def test_a_copy_is_created_deleted_and_created_again_as_its_label_flips(
    nats_client: Client, kubesim: KubeSimThread, tmp_path: Path
) -> None:
    await ensure_streams(nats_client.jetstream())
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    kube = KubeClient(api)
    [watch] = await prepare_watches(
        nats_client, WatcherSettings(cluster="c1", resources=("v1/configmaps",)), kube)
    planner = Planner(nats_client, cluster="c1", rules=[Copies()])
    await planner.restore()
    planner.set_leader(True)
    actuator = PlanConsumer(nats_client, Applier(kube, limiter=TokenBucket(50, 50),
                                                 authority=AUTHORITY),
                            cluster="c1", workers=2)

    async def label(value: str) -> None:
        await asyncio.to_thread(core.patch_namespaced_config_map, "source", "default",
                                {"metadata": {"labels": {"copy": value}}})

    async def copy_uid() -> str | None:
        listed = await asyncio.to_thread(core.list_namespaced_config_map, "default")
        found = [i for i in listed.items if i.metadata.name == "source-copy"]
        return found[0].metadata.uid if found else None

    async def copy_gone() -> bool:
        return await copy_uid() is None

    try:
        async with running(watch.run, planner.run, actuator.run, stop_within=20):
            source = await asyncio.to_thread(core.create_namespaced_config_map, "default", {
                "metadata": {"name": "source", "labels": {"copy": "yes"}}, "data": {"k": "v"}})
            first = await wait_until_async(copy_uid, what="the first copy")
            await label("no")
            await wait_until_async(copy_gone, what="the copy deleted")
            await label("yes")
            second = await wait_until_async(copy_uid, what="the copy created again")
    finally:
        api.close()
    assert first != second
    copy = await asyncio.to_thread(core.read_namespaced_config_map, "source-copy", "default")
    assert copy.metadata.owner_references[0].uid == source.metadata.uid
    assert copy.data == {"k": "v"}
    plans = await stream_bodies(nats_client, "PLANS")
    outcomes = {o["plan_id"]: o["result"] for o in await stream_bodies(nats_client, "OUTCOMES")}
    creates = [p["id"] for p in plans if p["verb"] == "create"]
    deletes = [p["id"] for p in plans if p["verb"] == "delete"]
    assert [outcomes[i] for i in creates].count("applied") == 2
    assert {outcomes[i] for i in creates} <= {"applied", "skipped"}
    assert [outcomes[i] for i in deletes] == ["applied"]
    assert len(set(creates)) == len(creates)
    [delete] = [p for p in plans if p["verb"] == "delete"]
    assert delete["precondition"]["uid"] == first
