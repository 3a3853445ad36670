"""A budget of the host over a propagated workload is one budget across its members: each
member's webhook spends it on the hub's one entry through a real hub and two leaf servers in
their own domains, so two members deleting their copies' pods at once never spend more than
it allows; a member whose link is cut refuses; and a member can neither spend as another member
nor read another member's answers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg

from events.buckets import entry_key
from spreadbus.engine.admission_chain import Verdict
from spreadbus.features.podunavailablebudget.admission.budget_bucket import (
    budget_bucket,
    budget_store,
)
from spreadbus.features.podunavailablebudget.admission.handlers import BudgetAdmission
from spreadbus.features.podunavailablebudget.admission.host_budgets import (
    HostBudgetClient,
    HostUnanswered,
    SpendResponder,
)
from spreadbus.features.podunavailablebudget.core import budget_ledger, member_spend
from spreadbus.features.podunavailablebudget.planning.status_inputs import compute
from spreadbus.runtime.bus_setup import ensure_bucket
from tests.fixtures.member_bus import MEMBERS, MemberBus
from tests.memberbus.bus_reading import wait_for
from tests.podunavailablebudget.budgets import NS, StaticView, budget, pod, review

NOW = datetime(2026, 3, 1, 8, 0, 0, tzinfo=UTC)
DEPLOYMENT = "app"
BINDING = "app-deployment"
PER_MEMBER = 4
ALLOWED = 3


def member_pod(member: str, i: int) -> dict[str, Any]:
    found = pod(f"{member}-p{i}", related=None)
    found["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                             "name": f"{DEPLOYMENT}-abc", "uid": f"rs-{member}",
                                             "controller": True}]
    return found


def member_replicaset(member: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{DEPLOYMENT}-abc", "namespace": NS, "uid": f"rs-{member}",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": DEPLOYMENT, "uid": f"copy-{member}",
                                              "controller": True}]},
            "spec": {"replicas": PER_MEMBER}}


def copy(binding: str = BINDING) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": DEPLOYMENT, "namespace": NS,
                         "annotations": {member_spend.BINDING_NAME: binding,
                                         member_spend.BINDING_NAMESPACE: NS}}}


def host_binding(namespace: str, name: str) -> dict[str, Any] | None:
    if (namespace, name) != (NS, BINDING):
        return None
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": BINDING, "namespace": NS},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "name": DEPLOYMENT, "namespace": NS, "uid": "template"}}}


class Stack:
    def __init__(self, bus: MemberBus, kv: Any) -> None:
        self.bus = bus
        self.kv = kv
        total = len(MEMBERS) * PER_MEMBER
        world = [member_pod(m, i) for m in MEMBERS for i in range(PER_MEMBER)]
        protected = budget(total=total, max_unavailable=ALLOWED)
        status = compute(protected, world, [], {}, NOW).status
        assert status["unavailableAllowed"] == ALLOWED
        self.host_view = StaticView("host")
        self.host_view.budgets = {"pub": budget(total=total, max_unavailable=ALLOWED,
                                                status=status)}
        self.host = BudgetAdmission(view=self.host_view, store=budget_store(kv),
                                    clock=lambda: NOW.timestamp())
        self.responder = SpendResponder(bus.hub_client, self.host, host_binding,
                                        lambda member: member in MEMBERS)
        # Another cluster on the hub, which binds the same template but is no member's host:
        # it never answers, so its "nothing covers it" never beats the host's refusal.
        bystander = BudgetAdmission(view=StaticView("bystander"), store=budget_store(kv),
                                    clock=lambda: NOW.timestamp())
        self.bystander = SpendResponder(bus.hub_client, bystander, host_binding,
                                        lambda member: False)
        self.clients: dict[str, HostBudgetClient] = {}
        self.members: dict[str, BudgetAdmission] = {}
        self.member_responders: dict[str, SpendResponder] = {}
        for member in MEMBERS:
            view = StaticView(member)
            view.replicasets = {f"{DEPLOYMENT}-abc": member_replicaset(member)}
            client = HostBudgetClient(bus.clients[member], member, deadline_seconds=2.0)
            self.clients[member] = client
            admission = self.members[member] = BudgetAdmission(
                view=view, store=budget_store(kv), clock=lambda: NOW.timestamp(), host=client,
                workload=lambda resource, ns, name: copy() if (resource, name) == (
                    "deployments", DEPLOYMENT) else None)
            # A member's webhook answers spends too, as every webhook does: never its own.
            self.member_responders[member] = SpendResponder(
                bus.clients[member], admission, lambda ns, name: None, lambda member: False)

    async def linked(self) -> None:
        """Until each member's spend reaches the host across its leaf link (interest crosses
        the link asynchronously)."""
        for member in MEMBERS:
            probe = self.request(member, f"{member}-p0", dry_run=True)
            client = HostBudgetClient(self.bus.clients[member], member, deadline_seconds=0.5)

            async def answered(client: HostBudgetClient = client,
                               probe: member_spend.SpendRequest = probe) -> bool:
                try:
                    await client.spend(probe)
                except HostUnanswered:
                    return False
                return True

            await wait_for(f"{member}'s spends to reach the host", answered)
            await client.stop()

    def request(self, member: str, name: str, *, dry_run: bool = False,
                binding: str = BINDING) -> member_spend.SpendRequest:
        index = int(name.rsplit("p", 1)[1])
        return member_spend.SpendRequest(
            operation="DELETE", namespace=NS, pod=member_pod(member, index),
            replicaset=member_replicaset(member), dry_run=dry_run,
            copy=member_spend.CopyOf(group="apps", kind="Deployment", name=DEPLOYMENT,
                                     binding=binding))

    async def stop(self) -> None:
        for client in self.clients.values():
            await client.stop()
        for responder in [*self.member_responders.values(), self.responder, self.bystander]:
            await responder.stop()


async def stack(bus: MemberBus) -> Stack:
    await ensure_bucket(bus.hub_client.jetstream(), budget_ledger.SPEC)
    built = Stack(bus, await budget_bucket(bus.hub_client))
    for responder in built.member_responders.values():
        await responder.start()
    await built.bystander.start()
    await built.responder.start()
    await built.linked()
    return built


async def test_two_members_deleting_at_once_never_overspend_the_host_budget(
    member_bus_stack: MemberBus,
) -> None:
    built = await stack(member_bus_stack)
    try:
        probes = built.responder.answered
        deletions = [(member, member_pod(member, i)) for i in range(PER_MEMBER)
                     for member in MEMBERS]
        verdicts: list[Verdict] = await asyncio.gather(*(
            built.members[member].validate_pod(review("DELETE", target))
            for member, target in deletions))
        allowed = [target["metadata"]["name"] for (_, target), verdict
                   in zip(deletions, verdicts, strict=True) if verdict.allowed]
        assert len(allowed) == ALLOWED, verdicts
        assert {v.code for v in verdicts if not v.allowed} == {403}
        entry = await built.host.store.current(entry_key("host", NS, "pub"))
        assert sorted(entry.disrupted) == sorted(allowed)
        # Both members were heard: the refusals are the budget's, not a lost link's.
        assert all("could not be spent" not in v.message for v in verdicts)
        assert built.responder.answered == probes + len(deletions)
        assert all(r.answered == 0 for r in built.member_responders.values())
        assert built.bystander.answered == 0
    finally:
        await built.stop()


async def test_a_member_cut_off_from_the_host_refuses(member_bus_stack: MemberBus) -> None:
    bus = member_bus_stack
    built = await stack(bus)
    try:
        bus.proxy.cut()  # member1's leaf link
        built.clients["member1"].deadline = 0.5
        verdict = await built.members["member1"].validate_pod(
            review("DELETE", member_pod("member1", 0)))
        assert not verdict.allowed
        assert verdict.code == 403
        assert "could not be spent" in verdict.message
        # The link up but the host's webhook gone: refused when the deadline passes.
        await built.responder.stop()
        built.clients["member2"].deadline = 0.5
        evicted = member_pod("member2", 0)
        view = built.members["member2"].view
        assert isinstance(view, StaticView)
        view.pods = {evicted["metadata"]["name"]: evicted}
        refused = await built.members["member2"].validate_pod(
            review("CREATE", evicted, sub_resource="eviction"))
        assert not refused.allowed
        assert refused.code == 429
        entry = await built.host.store.current(entry_key("host", NS, "pub"))
        assert not entry.disrupted
    finally:
        bus.proxy.restore()
        await built.stop()


async def test_a_member_cannot_spend_as_another_nor_read_its_answers(
    member_bus_stack: MemberBus,
) -> None:
    bus = member_bus_stack
    built = await stack(bus)
    member1: Client = bus.clients["member1"]
    overheard: list[str] = []

    async def heard(msg: Msg) -> None:
        overheard.append(msg.subject)

    eavesdrop = await member1.subscribe("budget.answer.>", cb=heard)
    try:
        answered_before = built.responder.answered
        # Spending as member2: member1's leaf link may not carry member2's spend subject.
        forged = built.request("member2", "member2-p0")
        await member1.publish(member_spend.spend_subject("member2", NS),
                              member_spend.encode(forged),
                              reply=f"{member_spend.answer_prefix('member1')}.x.1")
        # Asking for the answer on member2's subjects: the host gives none.
        await member1.publish(member_spend.spend_subject("member1", NS),
                              member_spend.encode(built.request("member1", "member1-p1")),
                              reply=f"{member_spend.answer_prefix('member2')}.x.1")
        # A binding the host does not hold covers nothing, so it spends nothing.
        invented = await built.clients["member1"].spend(
            built.request("member1", "member1-p2", binding="invented"))
        assert invented.allowed
        # member2's own spend, answered to member2 alone.
        theirs = await built.clients["member2"].spend(built.request("member2", "member2-p3"))
        assert theirs.allowed
        # member1's own spend, sent after all of the above on the same link: once its answer
        # is back, whatever the hub would have passed on before it has arrived.
        mine = await built.clients["member1"].spend(built.request("member1", "member1-p3"))
        assert mine.allowed
        await member1.flush()
        assert built.responder.ignored == 1  # the answer asked for on member2's subjects
        assert built.responder.answered == answered_before + 3  # not the forged spend
        entry = await built.host.store.current(entry_key("host", NS, "pub"))
        assert sorted(entry.disrupted) == ["member1-p3", "member2-p3"]
        prefix = member_spend.answer_prefix("member1") + "."
        assert overheard
        assert all(s.startswith(prefix) for s in overheard), overheard
    finally:
        await eavesdrop.unsubscribe()
        await built.stop()
