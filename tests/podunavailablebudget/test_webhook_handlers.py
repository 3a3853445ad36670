"""The PodUnavailableBudget handlers on a real nats-server: CREATE links, UPDATE spends, the gates,
and PUB validation."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from nats.aio.client import Client

from events.buckets import entry_key
from spreadbus.engine.review import AdmissionRequest
from spreadbus.features.podunavailablebudget.admission.budget_bucket import (
    budget_bucket,
    budget_store,
)
from spreadbus.features.podunavailablebudget.admission.handlers import BudgetAdmission
from spreadbus.features.podunavailablebudget.planning.status_inputs import compute
from spreadbus.features.podunavailablebudget.settings import PodUnavailableBudgetSettings
from spreadbus.runtime.ledger import LedgerConflict
from tests.podunavailablebudget.budgets import NS, StaticView, budget, pod, review

NOW = datetime(2026, 3, 1, 8, 0, 0, tzinfo=UTC)


def admission_for(nc: Client, view: StaticView, kv: Any,
                  **gates: bool) -> BudgetAdmission:
    return BudgetAdmission(view=view, store=budget_store(kv),
                           settings=PodUnavailableBudgetSettings(**gates),
                           clock=lambda: NOW.timestamp())


@pytest.fixture
async def kv(nats_client: Client) -> Any:
    return await budget_bucket(nats_client)


def settled_view(total: int = 3, max_unavailable: int = 1) -> tuple[StaticView, list[Any]]:
    view = StaticView()
    world = [pod(f"p{i}") for i in range(total)]
    status = compute(budget(total=total, max_unavailable=max_unavailable), world, [], {},
                     NOW).status
    view.budgets = {"pub": budget(total=total, max_unavailable=max_unavailable, status=status)}
    view.pods = {p["metadata"]["name"]: p for p in world}
    return view, world


def create(new_pod: dict[str, Any]) -> AdmissionRequest:
    return AdmissionRequest(
        uid="c", api_version="admission.k8s.io/v1", operation="CREATE", group="", version="v1",
        resource="pods", sub_resource="", namespace=NS, name="", dry_run=False, object=new_pod,
        old_object=None,
    )


async def test_a_new_pod_is_linked_to_the_first_budget_that_selects_it(
    nats_client: Client, kv: Any,
) -> None:
    view, _ = settled_view()
    other = budget("other", total=3)
    other["spec"]["selector"] = {"matchLabels": {"app": "elsewhere"}}
    view.budgets["other"] = other
    admission = admission_for(nats_client, view, kv)
    fresh = pod("new", related=None)
    verdict = await admission.mutate_pod(create(fresh))
    assert list(verdict.patch) == [
        {"op": "add", "path": "/metadata/annotations/kruise.io~1related-pub", "value": "pub"}]
    stranger = pod("new", related=None)
    stranger["metadata"]["labels"] = {"app": "unprotected"}
    assert not (await admission.mutate_pod(create(stranger))).patch
    off = admission_for(nats_client, view, kv, pub_delete_gate=False, pub_update_gate=False)
    assert not (await off.mutate_pod(create(fresh))).patch


async def test_an_update_that_changes_the_spec_spends_and_a_label_change_does_not(
    nats_client: Client, kv: Any,
) -> None:
    view, world = settled_view(total=3, max_unavailable=1)
    admission = admission_for(nats_client, view, kv)
    relabelled = copy.deepcopy(world[0])
    relabelled["metadata"]["labels"]["tier"] = "web"
    assert (await admission.validate_pod(review("UPDATE", world[0], new=relabelled))).allowed
    new_image = copy.deepcopy(world[0])
    new_image["spec"]["containers"][0]["image"] = "nginx:2"
    assert (await admission.validate_pod(review("UPDATE", world[0], new=new_image))).allowed
    entry = await admission.store.current(entry_key("c1", NS, "pub"))
    assert list(entry.unavailable) == ["p0"]
    assert not entry.disrupted
    other = copy.deepcopy(world[1])
    other["spec"]["containers"][0]["image"] = "nginx:2"
    refused = await admission.validate_pod(review("UPDATE", world[1], new=other))
    assert (refused.allowed, refused.code) == (False, 403)
    # With the update gate off, the same update is not the budget's business.
    ungated = admission_for(nats_client, view, kv, pub_update_gate=False)
    assert (await ungated.validate_pod(review("UPDATE", world[1], new=other))).allowed


async def test_with_the_delete_gate_off_deletions_and_evictions_are_not_checked(
    nats_client: Client, kv: Any,
) -> None:
    view, world = settled_view(total=2, max_unavailable=0)
    gated = admission_for(nats_client, view, kv)
    assert not (await gated.validate_pod(review("DELETE", world[0]))).allowed
    ungated = admission_for(nats_client, view, kv, pub_delete_gate=False)
    assert (await ungated.validate_pod(review("DELETE", world[0]))).allowed
    assert (await ungated.validate_pod(review("CREATE", world[1],
                                              sub_resource="eviction"))).allowed


async def test_a_pod_no_budget_selects_or_of_a_vanished_budget_is_not_protected(
    nats_client: Client, kv: Any,
) -> None:
    view, _ = settled_view(total=2, max_unavailable=0)
    admission = admission_for(nats_client, view, kv)
    # Not linked at CREATE, but selected: protected all the same.
    unlinked = await admission.validate_pod(review("DELETE", pod("x", related=None)))
    assert (unlinked.allowed, unlinked.code) == (False, 403)
    assert 'podunavailablebudget.policy.kruise.io "pub" is forbidden' in unlinked.message
    other = pod("x", related=None)
    other["metadata"]["labels"] = {"app": "other"}
    assert (await admission.validate_pod(review("DELETE", other))).allowed
    assert (await admission.validate_pod(review("DELETE", pod("y", related="gone")))).allowed
    assert (await admission.validate_pod(review("DELETE", pod("z", ready=False)))).allowed
    # Before the watcher has listed budgets, a missing budget is not known to be gone.
    view.listed = False
    early = await admission.validate_pod(review("DELETE", pod("y", related="gone")))
    assert (early.allowed, early.code) == (False, 403)


def budget_review(obj: dict[str, Any], old: dict[str, Any] | None = None) -> AdmissionRequest:
    return AdmissionRequest(
        uid="b", api_version="admission.k8s.io/v1", operation="UPDATE" if old else "CREATE",
        group="policy.kruise.io", version="v1alpha1", resource="podunavailablebudgets",
        sub_resource="", namespace=NS, name=obj["metadata"]["name"], dry_run=False, object=obj,
        old_object=old,
    )


async def test_budgets_are_validated_with_kruises_field_paths_and_conflicts(
    nats_client: Client, kv: Any,
) -> None:
    view, _ = settled_view()
    admission = admission_for(nats_client, view, kv)
    both = budget("both", total=3)
    both["spec"]["selector"] = {"matchLabels": {"app": "both"}}
    both["spec"]["targetRef"] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
    verdict = await admission.validate_budget(budget_review(both))
    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 422, "Invalid")
    assert [c["field"] for c in verdict.causes] == ["spec.selector, targetRef"]
    assert 'PodUnavailableBudget.policy.kruise.io "both" is invalid' in verdict.message
    twin = budget("twin", total=3)  # the same selector as "pub", already in the namespace
    conflict = await admission.validate_budget(budget_review(twin))
    assert [c["field"] for c in conflict.causes] == ["spec.selector"]
    assert "in conflict with other PodUnavailableBudget pub" in conflict.message
    # Its own stored version is not a conflict.
    assert (await admission.validate_budget(
        budget_review(view.budgets["pub"], old=view.budgets["pub"]))).allowed


class _Unreachable:
    conflicts = 0

    async def transact(self, key: str, decide: Any) -> Any:
        raise LedgerConflict(f"ledger entry {key} kept conflicting")


async def test_a_budget_that_cannot_be_spent_refuses_rather_than_lets_go() -> None:
    view, world = settled_view(total=3, max_unavailable=1)
    admission = BudgetAdmission(view=view, store=_Unreachable(),  # type: ignore[arg-type]
                                clock=lambda: NOW.timestamp())
    deleted = await admission.validate_pod(review("DELETE", world[0]))
    evicted = await admission.validate_pod(review("CREATE", world[1], sub_resource="eviction"))
    assert (deleted.allowed, deleted.code) == (False, 403)
    assert (evicted.allowed, evicted.code) == (False, 429)
    assert '"pub" could not be spent' in deleted.message


async def test_an_eviction_is_not_free_on_a_view_older_than_the_status_it_spends_from(
    nats_client: Client, kv: Any,
) -> None:
    """Replica B's view has p0 Ready and a status counting it; replica A still sees p0 starting
    and an older status. The eviction's review carries no pod, so A's copy of p0 is all it has:
    once B seeded the entry from the newer status, A's "p0 is unavailable, evict it for free"
    would disrupt a pod the budget counts."""
    fresh, world = settled_view(total=3, max_unavailable=1)
    fresh.budgets["pub"]["metadata"]["resourceVersion"] = "2"
    lagging = StaticView()
    starting = [pod("p0", ready=False), world[1], world[2]]
    older = compute(budget(total=3, max_unavailable=1), starting, [], {}, NOW).status
    lagging.budgets = {"pub": budget(total=3, max_unavailable=1, status=older, version=1)}
    lagging.pods = {p["metadata"]["name"]: p for p in starting}
    replica_b, replica_a = admission_for(nats_client, fresh, kv), admission_for(
        nats_client, lagging, kv)
    assert (await replica_b.validate_pod(review("DELETE", world[2]))).allowed
    evicted = await replica_a.validate_pod(review("CREATE", world[0], sub_resource="eviction"))
    assert (evicted.allowed, evicted.code) == (False, 429)
    assert "not yet observed the budget's latest status" in evicted.message
    # Caught up, A sees p0 Ready and the spent budget: refused for the budget itself.
    caught_up = await replica_b.validate_pod(review("CREATE", world[0], sub_resource="eviction"))
    assert (caught_up.allowed, caught_up.code) == (False, 429)
    assert "unavailable allowed is negative" in caught_up.message
    # A pod that is really not ready, on a view as new as the entry, goes for free.
    fresh.pods["p1"] = pod("p1", ready=False)
    assert (await replica_b.validate_pod(review("CREATE", world[1],
                                                sub_resource="eviction"))).allowed


async def test_a_deletion_is_not_free_on_a_view_whose_status_is_older_than_the_entrys(
    nats_client: Client, kv: Any,
) -> None:
    """Replica A's view still holds the budget as created, before the planner's first status
    (``desiredAvailable`` 0, "nothing to protect"), or a status in which p1 is recorded as
    disrupted; replica B has spent the budget on the newer status. What A's older status says
    frees no deletion: it decides on the entry's newer seed."""
    fresh, world = settled_view(total=3, max_unavailable=1)
    fresh.budgets["pub"]["metadata"]["resourceVersion"] = "3"
    replica_b = admission_for(nats_client, fresh, kv)
    assert (await replica_b.validate_pod(review("DELETE", world[2]))).allowed
    as_created = StaticView()
    as_created.budgets = {"pub": budget(total=3, max_unavailable=1, version=1)}
    as_created.pods = fresh.pods
    refused = await admission_for(nats_client, as_created, kv).validate_pod(
        review("DELETE", world[1]))
    assert (refused.allowed, refused.code) == (False, 403)
    assert "unavailable allowed is negative" in refused.message
    recorded = StaticView()
    status = dict(fresh.budgets["pub"]["status"])
    status["disruptedPods"] = {"p1": "2026-03-01T07:59:30Z"}
    recorded.budgets = {"pub": budget(total=3, max_unavailable=1, status=status, version=2)}
    recorded.pods = fresh.pods
    refused = await admission_for(nats_client, recorded, kv).validate_pod(
        review("DELETE", world[1]))
    assert (refused.allowed, refused.code) == (False, 403)


async def test_a_status_that_frees_a_pod_frees_it_only_on_a_view_that_has_seen_the_pod(
    nats_client: Client, kv: Any,
) -> None:
    """The first deletion of a budget, on a replica whose view holds the budget as created
    (nothing to protect yet) and the pod as it was before it became Ready: the newest status,
    which this view has not seen, may count the pod. Once the view has the pod as the review
    carries it, the status it holds is its word."""
    view = StaticView()
    view.budgets = {"pub": budget(total=3, max_unavailable=1, version=1)}
    current = pod("p0")
    current["metadata"]["resourceVersion"] = "7"
    starting = pod("p0", ready=False)
    starting["metadata"]["resourceVersion"] = "5"
    view.pods = {"p0": starting}
    admission = admission_for(nats_client, view, kv)
    behind = await admission.validate_pod(review("DELETE", current))
    assert (behind.allowed, behind.code) == (False, 403)
    assert "not yet observed the budget's latest status" in behind.message
    view.pods = {"p0": current}
    assert (await admission.validate_pod(review("DELETE", current))).allowed


async def test_a_status_that_counted_no_pods_frees_none_of_a_workload_that_wants_them(
    nats_client: Client, kv: Any,
) -> None:
    """The planner's first status of a new budget counts no pods (its Deployment not yet seen):
    "nothing to protect". A replica still holding it, with the pods' ReplicaSet wanting 10, must
    not let the pods go for free; a ReplicaSet scaled to zero, or gone, protects nothing indeed.
    The pod's own view is caught up, for deletions and evictions alike."""
    view = StaticView()
    uncounted = budget(total=10, max_unavailable=2, status={
        "currentAvailable": 0, "desiredAvailable": 0, "totalReplicas": 0,
        "unavailableAllowed": 0, "observedGeneration": 1})
    del uncounted["metadata"]["annotations"]["pub.kruise.io/protect-total-replicas"]
    view.budgets = {"pub": uncounted}
    owned = pod("p0")
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "rs",
         "controller": True}]
    view.pods = {"p0": owned}
    view.replicasets = {"web-1": {"metadata": {"name": "web-1", "namespace": NS},
                                  "spec": {"replicas": 10}}}
    admission = admission_for(nats_client, view, kv)
    for request in (review("DELETE", owned), review("CREATE", owned, sub_resource="eviction")):
        behind = await admission.validate_pod(request)
        assert not behind.allowed, request.operation
        assert "not yet observed the budget's latest status" in behind.message
    view.replicasets["web-1"]["spec"]["replicas"] = 0
    assert (await admission.validate_pod(review("DELETE", owned))).allowed
    view.replicasets = {}
    assert (await admission.validate_pod(review("CREATE", owned, sub_resource="eviction"))).allowed


async def test_an_eviction_of_a_pod_the_view_has_not_observed_waits_where_budgets_apply(
    nats_client: Client, kv: Any,
) -> None:
    view, _ = settled_view(total=3, max_unavailable=1)
    admission = admission_for(nats_client, view, kv)
    unseen = await admission.validate_pod(review("CREATE", pod("new"), sub_resource="eviction"))
    assert (unseen.allowed, unseen.code) == (False, 429)
    assert 'pod "new" is not yet observed' in unseen.message
    view.budgets = {}
    assert (await admission.validate_pod(review("CREATE", pod("new"),
                                                sub_resource="eviction"))).allowed
