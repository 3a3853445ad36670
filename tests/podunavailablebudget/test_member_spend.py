"""A member's spend on a budget of the host: which pods are a copy's, which copies the host binds,
who is answered, and the host's decision on a real nats-server (the budget found afresh, by the
template's name or the pods' labels; nothing spent for a copy the host does not bind)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client

from events.buckets import entry_key
from spreadbus.features.podunavailablebudget.admission.budget_bucket import (
    budget_bucket,
    budget_store,
)
from spreadbus.features.podunavailablebudget.admission.handlers import BudgetAdmission
from spreadbus.features.podunavailablebudget.core import member_spend
from spreadbus.features.podunavailablebudget.core.member_spend import CopyOf, SpendRequest
from spreadbus.features.podunavailablebudget.feature import FEATURE
from spreadbus.features.podunavailablebudget.planning.status_inputs import compute
from spreadbus.runtime.bus_permissions import permissions
from spreadbus.runtime.member_permissions import member_permissions
from tests.podunavailablebudget.budgets import NS, StaticView, budget, pod, review

NOW = datetime(2026, 3, 1, 8, 0, 0, tzinfo=UTC)
COPY = CopyOf(group="apps", kind="Deployment", name="web-app", binding="web-app-deployment")


def replicaset(owner: str = "web-app") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{owner}-abc", "namespace": NS, "uid": "rs",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": owner, "uid": "copy",
                                              "controller": True}]}}


def copy_pod(name: str, *, related: str | None = None) -> dict[str, Any]:
    found = pod(name, related=related)
    found["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                             "name": "web-app-abc", "uid": "rs",
                                             "controller": True}]
    found["metadata"]["labels"]["pod-template-hash"] = "abc"
    return found


def marked(binding: str = COPY.binding, namespace: str = NS) -> dict[str, Any]:
    return {"metadata": {"name": "web-app", "namespace": NS, "annotations": {
        member_spend.BINDING_NAME: binding, member_spend.BINDING_NAMESPACE: namespace}}}


def binding(*, kind: str = "Deployment", name: str = "web-app") -> dict[str, Any]:
    return {"metadata": {"name": COPY.binding, "namespace": NS},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": kind, "name": name,
                                  "namespace": NS, "uid": "template"}}}


def test_a_pod_is_a_copys_when_its_workload_carries_a_bindings_marks() -> None:
    def workload(copy: dict[str, Any] | None) -> Any:
        return lambda resource, namespace, name: (
            copy if (resource, namespace, name) == ("deployments", NS, "web-app") else None)

    assert member_spend.copy_of(copy_pod("p"), replicaset=replicaset(),
                                workload=workload(marked())) == COPY
    # The ReplicaSet not in the view: its Deployment is read from the names, as Kubernetes
    # names a Deployment's ReplicaSets.
    assert member_spend.copy_of(copy_pod("p"), replicaset=None,
                                workload=workload(marked())) == COPY
    assert member_spend.copy_of(copy_pod("p"), replicaset=replicaset(),
                                workload=workload({"metadata": {"name": "web-app"}})) is None
    assert member_spend.copy_of(copy_pod("p"), replicaset=replicaset(),
                                workload=workload(marked(namespace="other"))) is None
    assert member_spend.copy_of(pod("bare"), replicaset=None, workload=workload(marked())) is None
    owned = copy_pod("p")
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                             "name": "web-app", "controller": True}]
    assert member_spend.copy_of(owned, replicaset=None, workload=workload(marked())) is None


def request(copy: CopyOf = COPY, **changes: Any) -> SpendRequest:
    fields: dict[str, Any] = {"operation": "DELETE", "namespace": NS, "pod": copy_pod("p"),
                              "replicaset": replicaset(), "copy": copy, **changes}
    return SpendRequest(**fields)


def test_a_copy_is_the_hosts_only_when_the_named_binding_places_its_template() -> None:
    assert member_spend.bound_by_host(request(), binding())
    assert not member_spend.bound_by_host(request(), None)
    assert not member_spend.bound_by_host(request(), binding(name="other"))
    assert not member_spend.bound_by_host(request(), binding(kind="StatefulSet"))
    assert not member_spend.bound_by_host(request(namespace="other"), binding())


def test_a_member_is_named_by_its_subject_and_answered_only_on_its_own() -> None:
    subject = member_spend.spend_subject("east.1", NS)
    assert member_spend.member_of(subject) == "east.1"
    assert member_spend.member_of("budget.spend.east") is None
    assert member_spend.member_of("budget.spend.east.web.extra") is None
    assert member_spend.member_of("other.spend.east.web") is None
    prefix = member_spend.answer_prefix("east.1")
    assert member_spend.answers_to(f"{prefix}.r.1", "east.1")
    assert not member_spend.answers_to(f"{member_spend.answer_prefix('west')}.r.1", "east.1")
    assert not member_spend.answers_to(f"{prefix}1.r.1", "east.1")  # "east%2E11", not east.1's
    assert not member_spend.answers_to(f"{prefix}.>", "east.1")


def test_a_malformed_spend_names_its_field() -> None:
    encoded = member_spend.encode(request())
    assert member_spend.decode_request(encoded) == request()
    broken = msgspec.json.decode(encoded)
    broken["operation"] = "PATCH"
    with pytest.raises(msgspec.ValidationError, match=r"\$\.operation"):
        member_spend.decode_request(msgspec.json.encode(broken))
    broken["operation"] = "DELETE"
    del broken["copy"]
    with pytest.raises(msgspec.ValidationError, match="copy"):
        member_spend.decode_request(msgspec.json.encode(broken))


def host(kv: Any, *, max_unavailable: int = 1) -> BudgetAdmission:
    world = [copy_pod(f"p{i}") for i in range(3)]
    protected = budget(total=3, max_unavailable=max_unavailable)
    view = StaticView("host")
    view.budgets = {"pub": budget(total=3, max_unavailable=max_unavailable,
                                  status=compute(protected, world, [], {}, NOW).status)}
    return BudgetAdmission(view=view, store=budget_store(kv), clock=lambda: NOW.timestamp())


@pytest.fixture
async def kv(nats_client: Client) -> Any:
    return await budget_bucket(nats_client)


async def test_the_host_spends_its_budget_for_a_copy_it_binds_and_nothing_else(
    nats_client: Client, kv: Any,
) -> None:
    admission = host(kv)
    key = entry_key("host", NS, "pub")
    invented = await admission.spend_for_member("m1", request(), None)
    assert invented.allowed
    assert not (await admission.store.current(key)).disrupted
    # The member's own link to a budget of its own is no name for the host's.
    first = await admission.spend_for_member(
        "m1", request(pod=copy_pod("p0", related="members-own")), binding())
    assert first.allowed
    assert sorted((await admission.store.current(key)).disrupted) == ["p0"]
    second = await admission.spend_for_member("m2", request(pod=copy_pod("p1")), binding())
    assert (second.allowed, second.code) == (False, 403)
    assert 'podunavailablebudget.policy.kruise.io "pub" is forbidden' in second.message
    evicted = await admission.spend_for_member(
        "m2", request(operation="EVICT", pod=copy_pod("p1")), binding())
    assert (evicted.allowed, evicted.code) == (False, 429)


async def test_a_budget_naming_the_template_covers_its_copies_pods(
    nats_client: Client, kv: Any,
) -> None:
    admission = host(kv, max_unavailable=0)
    named = admission.view.budget(NS, "pub")
    assert named is not None
    named["spec"] = {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                   "name": "web-app"}, "maxUnavailable": 0}
    unlabelled = copy_pod("p2")
    unlabelled["metadata"]["labels"] = {"pod-template-hash": "abc"}
    refused = await admission.spend_for_member("m1", request(pod=unlabelled), binding())
    assert not refused.allowed
    elsewhere = copy_pod("p2")
    elsewhere["metadata"]["labels"] = {"pod-template-hash": "abc"}
    elsewhere["metadata"]["ownerReferences"][0]["name"] = "another-abc"
    other = await admission.spend_for_member(
        "m1", request(pod=elsewhere, replicaset=replicaset("another")), binding())
    assert other.allowed  # its ReplicaSet is another Deployment's: the budget names no such


async def test_a_host_that_has_not_listed_its_budgets_refuses_rather_than_frees(
    nats_client: Client, kv: Any,
) -> None:
    admission = host(kv)
    view = admission.view
    assert isinstance(view, StaticView)
    view.budgets.clear()
    view.listed = False
    for bound in (binding(), None):
        answer = await admission.spend_for_member("m1", request(), bound)
        assert (answer.allowed, answer.code) == (False, 403)
        assert "still syncing" in answer.message


class Host:
    """The host's side as a member's webhook reaches it: records each spend, answers as set."""

    def __init__(self, answer: member_spend.SpendAnswer | Exception) -> None:
        self.answer = answer
        self.asked: list[SpendRequest] = []

    async def spend(self, request: SpendRequest) -> member_spend.SpendAnswer:
        self.asked.append(request)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def member(kv: Any, host: Host) -> BudgetAdmission:
    view = StaticView("m1")
    view.replicasets = {"web-app-abc": replicaset()}
    return BudgetAdmission(view=view, store=budget_store(kv), clock=lambda: NOW.timestamp(),
                           host=host, workload=lambda resource, namespace, name: marked()
                           if (resource, name) == ("deployments", "web-app") else None)


async def test_a_member_asks_the_host_only_for_a_copys_pod_a_budget_could_refuse(
    nats_client: Client, kv: Any,
) -> None:
    host = Host(member_spend.SpendAnswer(allowed=False, code=403, reason="Forbidden",
                                         message="the host's budget is spent"))
    admission = member(kv, host)
    refused = await admission.validate_pod(review("DELETE", copy_pod("p0")))
    assert (refused.allowed, refused.code, refused.message) == (
        False, 403, "the host's budget is spent")
    asked = host.asked.pop()
    assert (asked.operation, asked.copy, asked.replicaset) == ("DELETE", COPY, replicaset())
    unready = copy_pod("p1")
    unready["status"]["conditions"][0]["status"] = "False"
    relabelled = copy.deepcopy(copy_pod("p0"))
    relabelled["metadata"]["labels"]["tier"] = "front"
    free = [review("DELETE", pod("not-a-copy", related=None)), review("DELETE", unready),
            review("UPDATE", copy_pod("p0"), new=relabelled)]
    for request in free:
        assert (await admission.validate_pod(request)).allowed
    assert not host.asked
    changed = copy.deepcopy(copy_pod("p0"))
    changed["spec"]["containers"][0]["image"] = "nginx:2"
    assert not (await admission.validate_pod(review("UPDATE", copy_pod("p0"),
                                                    new=changed))).allowed
    assert host.asked.pop().operation == "UPDATE"


async def test_a_member_the_host_does_not_answer_refuses(nats_client: Client, kv: Any) -> None:
    admission = member(kv, Host(TimeoutError("no answer")))
    deleted = await admission.validate_pod(review("DELETE", copy_pod("p0")))
    assert (deleted.allowed, deleted.code) == (False, 403)
    assert "could not be spent" in deleted.message
    evicted_pod = copy_pod("p0")
    view = admission.view
    assert isinstance(view, StaticView)
    view.pods = {"p0": evicted_pod}
    evicted = await admission.validate_pod(review("CREATE", evicted_pod,
                                                  sub_resource="eviction"))
    assert (evicted.allowed, evicted.code) == (False, 429)


def test_a_members_webhook_may_spend_only_as_itself_and_the_hosts_answers_any() -> None:
    member = member_permissions("m1", "webhook", [FEATURE.bus], clusters=["host", "m2"])
    spends = [s for s in member["publish"]["allow"] if s.startswith("budget.spend")]
    assert spends == ["budget.spend.m1.>"]
    hub = permissions("webhook", [FEATURE.bus])
    assert "budget.spend.>" in hub["subscribe"]["allow"]
    assert "budget.answer.>" in hub["publish"]["allow"]
