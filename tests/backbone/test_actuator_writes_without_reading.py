"""Plans the actuator can write without reading the object first, and when it reads after all.

Against kubesim over HTTP: a planner's annotation plan is a JSON patch that tests the uid (any
later version of the same object takes it). A refusal (another uid, no annotation map) sends the
plan the reading way, which answers applied, failed or skipped as before. A plan with a
resourceVersion precondition is not written blind: the object is read and checked, then the
patch is sent onto that version.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Unpack

import msgspec
from kubernetes import client

from events.messages import ObjectRef, Plan, Precondition
from services.actuator.application import Applier
from spreadbus.runtime.kube_client import KubeClient, RequestOptions
from spreadbus.runtime.rate_limit import TokenBucket
from tests.fixtures.plan_grants import granting

AUTHORITY = granting("test", ("", "configmaps"))

NOTE = "example.com/cost"


class CountingClient(KubeClient):
    """kubesim over HTTP, counting the requests by method."""

    def __init__(self, api: client.ApiClient) -> None:
        super().__init__(api)
        self.methods: list[str] = []
        self.paths: list[str] = []

    def request(self, method: str, path: str, **options: Unpack[RequestOptions]) -> bytes:
        self.methods.append(method)
        self.paths.append(path)
        return super().request(method, path, **options)


def config_map(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"v": "1"}}


def note(name: str, uid: str, seen: str, value: str) -> Plan:
    return Plan(
        id=f"p-{name}-{value}", cluster="c1", verb="patch",
        target=ObjectRef(group="", version="v1", resource="configmaps", namespace="default",
                         name=name, uid=uid),
        patch={"metadata": {"annotations": {NOTE: value}}},
        precondition=Precondition(uid=uid, seen_version=seen), rule="test")


async def applier_for(api: client.ApiClient) -> tuple[Applier, CountingClient]:
    kube = CountingClient(api)
    return Applier(kube, limiter=TokenBucket(100, 100), backoff_seconds=0.01,
                   authority=AUTHORITY), kube


PATH = "/api/v1/namespaces/default/configmaps"


def create(core: client.CoreV1Api, name: str,
           annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """The created object's metadata, as JSON."""
    body = KubeClient(core.api_client).request("POST", PATH, body=config_map(name, annotations),
                                               content_type="application/json")
    meta: dict[str, Any] = json.loads(body)["metadata"]
    return meta


def read(core: client.CoreV1Api, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(KubeClient(core.api_client).request(
        "GET", f"{PATH}/{name}"))["metadata"]
    return meta


async def test_an_annotation_plan_is_written_without_a_read_onto_any_later_version(
    kube_api_client: client.ApiClient,
) -> None:
    core = client.CoreV1Api(kube_api_client)
    made = await asyncio.to_thread(create, core, "moving", {"owner": "team-a"})
    await asyncio.to_thread(core.patch_namespaced_config_map, "moving", "default",
                            {"metadata": {"labels": {"tier": "a"}}})  # moved on since
    applier, kube = await applier_for(kube_api_client)
    result = await applier.apply(note("moving", made["uid"], made["resourceVersion"], "100"))
    assert result.result == "applied"
    assert kube.methods == ["PATCH"]
    now = await asyncio.to_thread(read, core, "moving")
    assert now["annotations"] == {"owner": "team-a", NOTE: "100"}
    assert now["labels"] == {"tier": "a"}
    assert result.resource_version == now["resourceVersion"]


async def test_an_object_without_annotations_is_read_then_patched(
    kube_api_client: client.ApiClient,
) -> None:
    core = client.CoreV1Api(kube_api_client)
    made = await asyncio.to_thread(create, core, "bare")
    applier, kube = await applier_for(kube_api_client)
    result = await applier.apply(note("bare", made["uid"], made["resourceVersion"], "100"))
    assert result.result == "applied"
    assert kube.methods == ["PATCH", "GET", "PATCH"]  # no map to add to: the reading way
    now = await asyncio.to_thread(read, core, "bare")
    assert now["annotations"] == {NOTE: "100"}


async def test_a_replaced_object_fails_and_is_left_untouched(
    kube_api_client: client.ApiClient,
) -> None:
    core = client.CoreV1Api(kube_api_client)
    old = await asyncio.to_thread(create, core, "swap", {"owner": "team-a"})
    await asyncio.to_thread(core.delete_namespaced_config_map, "swap", "default")
    await asyncio.to_thread(create, core, "swap", {"owner": "team-b"})
    applier, kube = await applier_for(kube_api_client)
    replaced = await applier.apply(note("swap", old["uid"], old["resourceVersion"], "100"))
    assert replaced.result == "failed"
    assert replaced.error is not None
    assert replaced.error.status == 409
    assert kube.methods == ["PATCH", "GET"]  # the uid test refused it; the read tells why
    untouched = await asyncio.to_thread(read, core, "swap")
    assert untouched["annotations"] == {"owner": "team-b"}


async def test_a_version_precondition_is_read_and_checked_then_written_onto_that_version(
    kube_api_client: client.ApiClient,
) -> None:
    core = client.CoreV1Api(kube_api_client)
    made = await asyncio.to_thread(create, core, "pinned", {"owner": "team-a"})
    applier, kube = await applier_for(kube_api_client)
    pinned = msgspec.structs.replace(note("pinned", made["uid"], "", "100"), precondition=(
        Precondition(uid=made["uid"], resource_version=made["resourceVersion"])))
    assert (await applier.apply(pinned)).result == "applied"
    assert kube.methods == ["GET", "PATCH"]  # the object is read before it is written
    kube.methods.clear()
    stale = msgspec.structs.replace(pinned, id="p-stale", patch={
        "metadata": {"annotations": {NOTE: "200"}}})
    result = await applier.apply(stale)
    assert result.result == "failed"  # decided on a version that moved on: stale
    assert kube.methods == ["GET"], "the read tells it is stale; nothing is sent"
    assert (await applier.apply(pinned)).result == "skipped"  # redelivered, already made
