"""kill -9 at seeded random moments of both members' watchers, actuators and leaf nats-servers,
of member2's webhook (member2 runs one, its pods admitted through it), and once of the hub's
nats-server, while a host UnitedDeployment with a subset in member1 (at most 3 replicas) and one
in member2 (the rest) scales through a seeded sequence: every one of those parts dies at least
once (in seeded shuffles of them all), after every change the pods settle as the allocation
says, and at the end every plan on the hub has exactly one outcome, each member's ``PLANS``
holds each of its plans once, and the hub's copies of each member's observations and outcomes
are that member's streams.

Real parts (:mod:`tests.fixtures.member_clusters`); the faults are a
:class:`~tests.fixtures.fault_injection.FaultInjector` (the seed is printed,
``SPREADBUS_FAULT_SEED`` replays it). ``make chaos`` runs it.
"""

from __future__ import annotations

import collections
import random
from pathlib import Path

import pytest
import yaml

from events.streams import PLANS
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.service_processes import ServiceProcess
from tests.fixtures.fault_injection import Crashable, FaultInjector, fault_seed, replay_hint
from tests.fixtures.member_clusters import kubectl, member_clusters, read_stream
from tests.fixtures.stack_outages import one_outcome_per_plan, say
from tests.uniteddeployment_e2e.two_clusters import (
    copies_differ,
    copies_match,
    placement,
    plans_and_outcomes,
    scale,
    subset_replicas,
    wait,
)
from tests.uniteddeployment_e2e.united import two_cluster_united

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.chaos, pytest.mark.chaos_only,
              pytest.mark.timeout(900)]

M1_MAX = 3
FAULTS = 16
"""Seven parts to kill, each at least twice, and the hub's nats-server once."""
FAULT_GAPS = (0.5, 3.0)


class LeafServer:
    """A member's leaf nats-server as a fault victim: killed, then started on its port and
    store."""

    def __init__(self, name: str, server: NatsServer) -> None:
        self.name = name
        self.server = server

    def kill(self) -> None:
        self.server.kill()

    def start(self) -> object:
        return self.server.restart()


class MemberService:
    """A member's service as a fault victim, named for its member."""

    def __init__(self, member: str, service: ServiceProcess) -> None:
        self.name = f"{member}-{service.name}"
        self.service = service

    def kill(self) -> None:
        self.service.kill()

    def start(self) -> object:
        return self.service.start()


def reviews(webhook: ServiceProcess) -> float:
    """AdmissionReviews the webhook answered, by its metrics."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in webhook.metrics().splitlines()
               if line.startswith("spreadbus_webhook_admission_duration_seconds_count"))


def allocation(replicas: int) -> dict[str, int]:
    m1 = min(M1_MAX, replicas)
    return {"m1": m1, "m2": replicas - m1}


def test_a_member_agent_under_kills_of_its_services_its_leaf_and_the_hub_converges(
    tmp_path: Path,
) -> None:
    seed = fault_seed()
    print(replay_hint(seed))
    rng = random.Random(seed)
    changes = [rng.randint(5, 8), rng.randint(1, 2), rng.randint(4, 7)]
    print(f"replicas: 4 then {changes}")
    with member_clusters(tmp_path, ("member1", "member2"), webhooks=("member2",)) as stack:
        member1, member2 = stack.members["member1"], stack.members["member2"]
        assert member2.webhook is not None
        kubectl(stack.host.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(
            two_cluster_united("cut", 4, adaptive=False, m1_max=M1_MAX)))
        wait(lambda: placement(stack) == {"member1": 3, "member2": 1},
             what="3 pods in member1, 1 in member2", timeout=120)
        assert reviews(member2.webhook) > 0, "member2's pods are admitted through its webhook"
        victims: list[Crashable] = [
            *(MemberService(m.name, s) for m in (member1, member2)
              for s in (m.watcher, m.actuator, m.webhook) if s is not None),
            *(LeafServer(f"{m.name}-leaf", m.server) for m in (member1, member2))]
        faults = FaultInjector(rng, victims, stack.hub.server, faults=FAULTS, gaps=FAULT_GAPS,
                               every_victim=True)
        faults.start()
        try:
            for replicas in changes:
                scale(stack, replicas)
                want = allocation(replicas)
                say(f"scaled to {replicas}, faults so far: {faults.done}")
                wait(lambda want=want: placement(stack) == {"member1": want["m1"],
                                                           "member2": want["m2"]}
                     and subset_replicas(stack) == want,
                     what=f"{want} placed under faults", timeout=240, interval=1.0)
            faults.finish()
        finally:
            faults.stop()
        print(f"faults: {faults.done}")
        assert len(faults.done) == FAULTS
        assert "nats-server" in faults.done
        killed = collections.Counter(faults.done)
        assert killed.pop("nats-server") == 1
        assert set(killed) == {v.name for v in victims}
        assert min(killed.values()) >= 2, killed
        for member in stack.members:
            try:
                wait(lambda member=member: copies_match(stack, member),
                     what=f"the hub's copies of {member}'s streams equal to {member}'s",
                     timeout=120, interval=1.0)
            except BaseException:
                print(copies_differ(stack, member))
                raise

        def answered() -> bool:
            return not one_outcome_per_plan(*plans_and_outcomes(stack.hub.server.url))

        try:
            wait(answered, what="every plan on the hub answered once", timeout=120,
                 interval=1.0)
        except BaseException:
            print(one_outcome_per_plan(*plans_and_outcomes(stack.hub.server.url)))
            raise
        for agent in (member1, member2):
            ids = collections.Counter(i for _, _, i in read_stream(
                agent.server.url, PLANS.name, f"plan.{agent.name}.>"))
            assert ids
            assert max(ids.values()) == 1, (f"a plan held twice in {agent.name}: "
                                            f"{ids.most_common(3)}")
        final = allocation(changes[-1])
        assert placement(stack) == {"member1": final["m1"], "member2": final["m2"]}
