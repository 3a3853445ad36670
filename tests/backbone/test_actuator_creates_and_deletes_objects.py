"""Create and delete plans through the actuator, against kubesim over HTTP and a real nats-server.

A create lands once: a redelivery or an equal plan finds the object its owner already holds
(``skipped``), an object someone else holds the name with fails it (AlreadyExists). A delete names
the object's uid: another uid fails it (Conflict), an object already gone is ``skipped``. A plan
whose verb the actuator does not know is answered ``failed`` without being applied, and the
plans after it go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import pytest
from kubernetes import client
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events import codec, subjects
from events.messages import ObjectRef, Plan, Precondition
from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.test_actuator_outcomes import publish
from tests.fixtures.plan_grants import granting
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running

AUTHORITY = granting("test", ("", "configmaps"))


def config_map(name: str, owner: Any = None) -> dict[str, Any]:
    """A ConfigMap, controlled by the ConfigMap ``owner`` when given."""
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner is not None:
        metadata["ownerReferences"] = [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
            "uid": owner.metadata.uid, "controller": True, "blockOwnerDeletion": True,
        }]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}


def ref(name: str, uid: str = "") -> ObjectRef:
    return ObjectRef(group="", version="v1", resource="configmaps", namespace="default",
                     name=name, uid=uid)


def create(plan_id: str, name: str, owner: Any) -> Plan:
    return Plan(id=plan_id, cluster="c1", verb="create", target=ref(name), rule="test",
                object=config_map(name, owner))


def delete(plan_id: str, name: str, uid: str) -> Plan:
    return Plan(id=plan_id, cluster="c1", verb="delete", target=ref(name, uid), rule="test",
                precondition=Precondition(uid=uid))


async def redeliver(nc: Client, plan: Plan) -> None:
    """The same plan once more, as JetStream hands it out again after a crash before its ack."""
    t = plan.target
    subject = subjects.plan("c1", plan.verb, t.group, t.resource, t.namespace, t.name)
    await nc.jetstream().publish(subject, codec.encode(plan),
                                 headers={"Nats-Msg-Id": f"{plan.id}-again"})


class Actuator:
    """One actuator replica with its own metrics, counting the outcomes it published."""

    def __init__(self, nc: Client, api: client.ApiClient) -> None:
        self.registry = CollectorRegistry()
        self.consumer = PlanConsumer(
            nc, Applier(KubeClient(api), limiter=TokenBucket(50, 50), backoff_seconds=0.05,
                        authority=AUTHORITY),
            cluster="c1", workers=1, registry=self.registry,
        )

    def sample(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0

    def published(self) -> float:
        return sum(self.sample("spreadbus_actuator_outcomes_total", result=r)
                   for r in ("applied", "skipped", "failed"))

    async def answered(self, count: int) -> None:
        """Wait until ``count`` outcomes were published (duplicates the stream drops count)."""

        async def enough() -> bool:
            return self.published() >= count

        await wait_until_async(enough, what=f"{count} outcomes published")

    def run(self) -> contextlib.AbstractAsyncContextManager[asyncio.Event]:
        return running(self.consumer.run, stop_within=20)


async def by_plan(nc: Client) -> dict[str, dict[str, Any]]:
    """Every outcome in the stream as JSON (any verb), by plan id; one per plan."""
    js = nc.jetstream()
    info = await js.stream_info("OUTCOMES")
    found: dict[str, dict[str, Any]] = {}
    for seq in range(info.state.first_seq or 1, info.state.last_seq + 1):
        body = json.loads((await js.get_msg("OUTCOMES", seq)).data or b"")
        assert body["plan_id"] not in found, "one outcome per plan"
        found[body["plan_id"]] = body
    return found


async def test_a_create_makes_the_object_once_and_an_owner_tells_done_from_taken(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    core = client.CoreV1Api(kube_api_client)
    owner = await asyncio.to_thread(core.create_namespaced_config_map, "default",
                                    config_map("owner"))
    stranger = await asyncio.to_thread(core.create_namespaced_config_map, "default",
                                       config_map("stranger"))
    first = create("p-create", "child", owner)
    actuator = Actuator(nats_client, kube_api_client)
    async with actuator.run():
        await publish(nats_client, first)
        await actuator.answered(1)
        await redeliver(nats_client, first)
        await actuator.answered(2)
        await publish(nats_client, create("p-equal", "child", owner))
        await publish(nats_client, create("p-foreign", "child", stranger))
        await actuator.answered(4)
    results = await by_plan(nats_client)
    assert {plan_id: o["result"] for plan_id, o in results.items()} == {
        "p-create": "applied", "p-equal": "skipped", "p-foreign": "failed",
    }
    assert actuator.sample("spreadbus_actuator_outcomes_total", result="skipped") == 2
    error = results["p-foreign"]["error"]
    assert (error["status"], error["reason"]) == (409, "AlreadyExists")
    child = await asyncio.to_thread(core.read_namespaced_config_map, "child", "default")
    [owner_ref] = child.metadata.owner_references
    assert (owner_ref.uid, owner_ref.controller) == (owner.metadata.uid, True)
    assert child.data == {"k": "v"}
    assert results["p-create"]["resource_version"] == child.metadata.resource_version
    assert results["p-equal"]["resource_version"] == child.metadata.resource_version


async def test_a_create_of_a_name_held_by_an_object_without_an_owner_fails(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    core = client.CoreV1Api(kube_api_client)
    owner = await asyncio.to_thread(core.create_namespaced_config_map, "default",
                                    config_map("owner"))
    await asyncio.to_thread(core.create_namespaced_config_map, "default", config_map("taken"))
    actuator = Actuator(nats_client, kube_api_client)
    async with actuator.run():
        await publish(nats_client, create("p-taken", "taken", owner))
        await actuator.answered(1)
    [outcome] = (await by_plan(nats_client)).values()
    assert outcome["result"] == "failed"
    assert outcome["error"]["reason"] == "AlreadyExists"
    kept = await asyncio.to_thread(core.read_namespaced_config_map, "taken", "default")
    assert kept.metadata.owner_references is None


async def test_a_delete_removes_the_object_it_names_by_uid_and_nothing_else(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    core = client.CoreV1Api(kube_api_client)
    doomed = await asyncio.to_thread(core.create_namespaced_config_map, "default",
                                     config_map("doomed"))
    kept = await asyncio.to_thread(core.create_namespaced_config_map, "default",
                                   config_map("kept"))
    first = delete("p-delete", "doomed", doomed.metadata.uid)
    actuator = Actuator(nats_client, kube_api_client)
    async with actuator.run():
        await publish(nats_client, first)
        await actuator.answered(1)
        await redeliver(nats_client, first)
        await actuator.answered(2)
        await publish(nats_client, delete("p-stale", "kept", "uid-of-an-older-kept"))
        await publish(nats_client, delete("p-gone", "never-was", "uid-x"))
        await actuator.answered(4)
    results = await by_plan(nats_client)
    assert {plan_id: o["result"] for plan_id, o in results.items()} == {
        "p-delete": "applied", "p-stale": "failed", "p-gone": "skipped",
    }
    error = results["p-stale"]["error"]
    assert (error["status"], error["reason"]) == (409, "Conflict")
    assert error["message"] == (
        f"uid is {kept.metadata.uid!r}, the plan was for 'uid-of-an-older-kept'")
    remaining = await asyncio.to_thread(core.list_namespaced_config_map, "default")
    names = {item.metadata.name for item in remaining.items}
    assert "doomed" not in names
    still = await asyncio.to_thread(core.read_namespaced_config_map, "kept", "default")
    assert still.metadata.uid == kept.metadata.uid


async def test_a_delete_orphans_dependents_only_when_the_plan_says_so(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    core = client.CoreV1Api(kube_api_client)

    async def make(name: str, owner: Any = None) -> Any:
        return await asyncio.to_thread(core.create_namespaced_config_map, "default",
                                       config_map(name, owner))

    orphaning, background = await make("orphaning"), await make("background")
    await make("orphan", orphaning)
    await make("dependent", background)
    orphan_plan = Plan(id="p-orphan", cluster="c1", verb="delete",
                       target=ref("orphaning", orphaning.metadata.uid), rule="test",
                       precondition=Precondition(uid=orphaning.metadata.uid),
                       propagation_policy="Orphan")
    actuator = Actuator(nats_client, kube_api_client)
    async with actuator.run():
        await publish(nats_client, orphan_plan)
        await publish(nats_client, delete("p-background", "background", background.metadata.uid))
        await actuator.answered(2)

    async def names() -> set[str]:
        listed = await asyncio.to_thread(core.list_namespaced_config_map, "default")
        return {item.metadata.name for item in listed.items}

    async def collected() -> bool:
        return not {"orphaning", "background", "dependent"} & await names()

    await wait_until_async(collected, what="both owners and the background dependent gone")
    orphan = await asyncio.to_thread(core.read_namespaced_config_map, "orphan", "default")
    assert orphan.metadata.owner_references is None
    assert {o["result"] for o in (await by_plan(nats_client)).values()} == {"applied"}


async def test_a_plan_with_a_verb_the_actuator_does_not_know_is_answered_unapplied(
    nats_client: Client, kube_api_client: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    await ensure_streams(nats_client.jetstream())
    core = client.CoreV1Api(kube_api_client)
    target = await asyncio.to_thread(core.create_namespaced_config_map, "default",
                                     config_map("target"))
    newer = codec.encode(delete("p-scale", "target", target.metadata.uid)).replace(
        b'"verb":"delete"', b'"verb":"scale"')
    subject = subjects.plan("c1", "scale", "", "configmaps", "default", "target")
    actuator = Actuator(nats_client, kube_api_client)
    with caplog.at_level(logging.WARNING, logger="services.actuator.consumer"):
        async with actuator.run():
            await nats_client.jetstream().publish(subject, newer,
                                                  headers={"Nats-Msg-Id": "p-scale"})
            await publish(nats_client, create("p-next", "next", target))
            await actuator.answered(2)
    results = await by_plan(nats_client)
    assert results["p-next"]["result"] == "applied"
    unknown = results["p-scale"]
    assert (unknown["result"], unknown["error"]["reason"]) == ("failed", "UnknownVerb")
    assert (unknown["verb"], unknown["target"]["name"]) == ("scale", "target")
    assert actuator.sample("spreadbus_actuator_unknown_verbs_total", verb="scale") == 1
    assert any(getattr(r, "plan", None) == "p-scale" and getattr(r, "verb", None) == "scale"
               for r in caplog.records)
    untouched = await asyncio.to_thread(core.read_namespaced_config_map, "target", "default")
    assert untouched.metadata.resource_version == target.metadata.resource_version
    assert untouched.metadata.deletion_timestamp is None
