"""A plan whose body names another cluster than the actuator's own is refused unsent.

The subject filter hands ``member1``'s actuator only what is published on ``member1``'s plan
subjects, but the plan's body names its cluster too: one for ``member2`` put on ``member1``'s
subject would have ``member1`` hold ``member2``'s share. On a real nats-server with the users
``spreadbus bus-users --member`` writes, and kubesim over HTTP: such a plan is answered
``failed``/Forbidden on ``member1``'s own outcome subject (the only one its actuator may publish
on) without a single API request, and nothing is created; ``member1``'s own plan, the same
otherwise, is applied.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from kubernetes import client
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events import codec, subjects
from events.messages import ObjectRef, Outcome, Plan
from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from spreadbus.cli import main
from spreadbus.runtime.bus_permissions import SETUP, inbox_prefix
from spreadbus.runtime.bus_users import seed_file
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.rate_limit import TokenBucket
from tests.backbone.test_actuator_applies_only_granted_plans import deployment
from tests.backbone.test_actuator_writes_without_reading import CountingClient
from tests.fixtures.bus_setup import set_up
from tests.fixtures.plan_grants import granting
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running


@pytest.fixture
def secured(tmp_path: Path, capsys: pytest.CaptureFixture[str],
            ) -> Iterator[tuple[NatsServer, Path]]:
    credentials = tmp_path / "credentials"
    assert main(["bus-users", "--out", str(credentials), "--cluster", "host",
                 "--member", "member1", "--member", "member2"]) == 0
    capsys.readouterr()
    server = NatsServer(store_dir=tmp_path / "store",
                        extra_args=["-c", str(credentials / "users.conf")]).start()
    try:
        set_up(server.url, nkeys_seed=str(seed_file(credentials, SETUP)),
               inbox_prefix=inbox_prefix(SETUP))
        yield server, credentials
    finally:
        server.stop()


async def connect(server: NatsServer, credentials: Path, user: str) -> Client:
    return await nats.connect(server.url, allow_reconnect=False,
                              nkeys_seed=str(seed_file(credentials, user)),
                              inbox_prefix=inbox_prefix(user))


def create(plan_id: str, cluster: str, name: str) -> Plan:
    return Plan(id=plan_id, cluster=cluster, verb="create", rule="copies",
                target=ObjectRef(group="apps", version="v1", resource="deployments",
                                 namespace="default", name=name),
                object=deployment(name))


async def answered(nc: Client) -> dict[str, tuple[str, Outcome]]:
    """Every outcome on the bus by plan id, with the subject it was published on."""
    js = nc.jetstream()
    info = await js.stream_info("OUTCOMES")
    found: dict[str, tuple[str, Outcome]] = {}
    for seq in range(info.state.first_seq or 1, info.state.last_seq + 1):
        msg = await js.get_msg("OUTCOMES", seq)
        decoded = codec.decode(msg.data or b"")
        assert isinstance(decoded, Outcome)
        found[decoded.plan_id] = (msg.subject or "", decoded)
    return found


def names(api: client.ApiClient) -> set[str]:
    listed: Any = client.AppsV1Api(api).list_namespaced_deployment("default")
    return {d.metadata.name for d in listed.items}


async def test_a_plan_for_member2_on_member1s_subject_is_refused_unsent(
    secured: tuple[NatsServer, Path], kube_api_client: client.ApiClient,
) -> None:
    server, credentials = secured
    planner = await connect(server, credentials, "planner")
    member1 = await connect(server, credentials, "member1-actuator")
    kube = CountingClient(kube_api_client)
    registry = CollectorRegistry()
    applier = Applier(kube, limiter=TokenBucket(100, 100), authority=granting(
        "copies", ("apps", "deployments")), registry=registry)
    consumer = PlanConsumer(member1, applier, cluster="member1", workers=2, registry=registry)
    try:
        async with running(consumer.run):
            for plan in (create("foreign", "member2", "share-of-member2"),
                         create("own", "member1", "share-of-member1")):
                t = plan.target
                # Both on member1's subject: only the body says whose share it is.
                subject = subjects.plan("member1", plan.verb, t.group, t.resource,
                                        t.namespace, t.name)
                await planner.jetstream().publish(subject, codec.encode(plan),
                                                  headers={"Nats-Msg-Id": plan.id})

            async def both() -> dict[str, tuple[str, Outcome]] | None:
                found = await answered(planner)
                return found if len(found) == 2 else None

            outcomes = await wait_until_async(both, what="both plans answered")
    finally:
        await member1.close()
        await planner.close()
    subject, foreign = outcomes["foreign"]
    assert subject.startswith("outcome.member1.create."), subject
    assert foreign.result == "failed"
    assert foreign.error is not None
    assert (foreign.error.status, foreign.error.reason) == (403, "Forbidden")
    assert "'member2'" in foreign.error.message
    assert "'member1'" in foreign.error.message
    assert foreign.attempts == 0
    assert outcomes["own"][1].result == "applied"
    assert kube.methods == ["POST"], "only member1's own plan reached the API"
    assert await asyncio.to_thread(names, kube_api_client) == {"share-of-member1"}
    assert registry.get_sample_value("spreadbus_actuator_forbidden_plans_total",
                                     {"rule": "copies"}) == 1
