"""The pod webhook's budget decision, branch by branch, in Kruise v1.9.0's order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from spreadbus.features.podunavailablebudget.core.admission import (
    admit_removal,
    admit_update,
    budget_for_new_pod,
    decide,
    related_pub_patch,
    update_operation,
)
from spreadbus.features.podunavailablebudget.core.model import (
    PodUnavailableBudget,
    format_time,
    from_object,
)
from spreadbus.features.podunavailablebudget.core.pod_health import qos_class
from spreadbus.features.podunavailablebudget.core.workloads import Workloads
from tests.podunavailablebudget.builders import (
    budget,
    changed,
    pod,
    replicaset,
    status,
    workload,
)

JSON = dict[str, Any]
NOW = datetime(2026, 1, 1, 12, 0, 0, 500000, tzinfo=UTC)
EXHAUSTED = ('podunavailablebudget.policy.kruise.io "web-server-pub" is forbidden: '
             "pub unavailable allowed is negative")


def pub(allowed: int = 1, **kwargs: Any) -> PodUnavailableBudget:
    maps = {k: kwargs.pop(k) for k in ("disruptedPods", "unavailablePods") if k in kwargs}
    desired = kwargs.pop("desired", 2)
    return from_object(budget(status=status(allowed, desired=desired, **maps), **kwargs))


def lookup_of(*budgets: PodUnavailableBudget) -> Any:
    def lookup(namespace: str, name: str) -> PodUnavailableBudget | None:
        return next((b for b in budgets if (b.namespace, b.name) == (namespace, name)), None)

    return lookup


BRANCHES: list[tuple[str, JSON, PodUnavailableBudget | None, str, bool, str]] = [
    ("opted out", pod("p", annotations={"pub.kruise.io/no-protect": "true"}), pub(0),
     "DELETE", True, "no-protect"),
    ("opt-out is the exact word true", pod("p", annotations={"pub.kruise.io/no-protect": "True"}),
     pub(0), "DELETE", False, "exhausted"),
    ("not ready", pod("p", ready=False), pub(0), "DELETE", True, "unavailable"),
    ("pending", pod("p", phase="Pending"), pub(0), "EVICT", True, "unavailable"),
    ("terminating", pod("p", deleting=True), pub(0), "DELETE", True, "unavailable"),
    ("labelled unavailable", pod("p", labels={"unavailable-pod.kruise.io/drain": "x"}), pub(0),
     "DELETE", True, "unavailable"),
    ("mid in-place update", pod("p", annotations={"apps.kruise.io/inplace-update-state":
                                                  '{"nextContainerImages": {"main": "b"}}'}),
     pub(0), "DELETE", True, "unavailable"),
    ("no such budget", pod("p"), None, "DELETE", True, "no-budget"),
    ("nothing desired", pod("p"), pub(0, desired=0), "DELETE", True, "desired-zero"),
    ("operation not protected", pod("p"),
     pub(0, annotations={"kruise.io/pub-protect-operations": "DELETE"}), "EVICT", True,
     "unprotected-operation"),
    ("already disrupted", pod("p"), pub(0, disruptedPods={"p": "2026-01-01T11:59:59Z"}),
     "DELETE", True, "recorded"),
    ("already unavailable", pod("p"), pub(0, unavailablePods={"p": "2026-01-01T11:59:59Z"}),
     "EVICT", True, "recorded"),
    ("exhausted", pod("p"), pub(0), "DELETE", False, "exhausted"),
    ("negative", pod("p"), pub(-2), "UPDATE", False, "exhausted"),
    ("spent", pod("p"), pub(1), "DELETE", True, "spent"),
]


@pytest.mark.parametrize(
    ("the_pod", "the_pub", "operation", "allowed", "why"),
    [b[1:] for b in BRANCHES], ids=[b[0] for b in BRANCHES],
)
def test_branch(the_pod: JSON, the_pub: PodUnavailableBudget | None, operation: Any,
                allowed: bool, why: str) -> None:
    decision = decide(the_pod, the_pub, operation=operation, now=NOW)
    assert (decision.allowed, decision.why) == (allowed, why)
    if why != "spent":
        assert decision.status is None


@pytest.mark.parametrize(("operation", "code", "reason"),
                         [("DELETE", 403, "Forbidden"), ("UPDATE", 403, "Forbidden"),
                          ("RESIZE", 403, "Forbidden"), ("EVICT", 429, "TooManyRequests")])
def test_a_denial_names_the_budget_with_kruises_text(operation: Any, code: int,
                                                     reason: str) -> None:
    decision = decide(pod("p"), pub(0), operation=operation, now=NOW)
    assert (decision.allowed, decision.code, decision.reason, decision.message) == (
        False, code, reason, EXHAUSTED)
    assert decision.budget == "web/web-server-pub"


@pytest.mark.parametrize(("operation", "recorded_in"),
                         [("DELETE", "disrupted_pods"), ("EVICT", "disrupted_pods"),
                          ("RESIZE", "disrupted_pods"), ("UPDATE", "unavailable_pods")])
def test_spending_decrements_and_records_the_pod_at_now(operation: Any, recorded_in: str) -> None:
    before = pub(2, disruptedPods={"q": "2026-01-01T11:59:50Z"})
    decision = decide(pod("p"), before, operation=operation, now=NOW)
    assert decision.status is not None
    assert decision.status.unavailable_allowed == 1
    assert format_time(getattr(decision.status, recorded_in)["p"]) == "2026-01-01T12:00:00Z"
    other = "unavailable_pods" if recorded_in == "disrupted_pods" else "disrupted_pods"
    assert "p" not in getattr(decision.status, other)
    assert "q" in decision.status.disrupted_pods
    assert decision.status.current_available == before.status.current_available
    assert before.status.unavailable_allowed == 2, "the input status is left as it was"


def test_a_dry_run_is_decided_but_spends_nothing() -> None:
    assert decide(pod("p"), pub(1), operation="DELETE", now=NOW, dry_run=True).status is None
    denied = decide(pod("p"), pub(0), operation="DELETE", now=NOW, dry_run=True)
    assert not denied.allowed


def test_more_than_2000_recorded_pods_deny() -> None:
    many = {f"p{i}": "2026-01-01T11:59:59Z" for i in range(2001)}
    decision = decide(pod("x"), pub(5, disruptedPods=many), operation="DELETE", now=NOW)
    assert not decision.allowed
    assert "DisruptedPods and UnavailablePods map too big" in decision.message
    just = {f"p{i}": "2026-01-01T11:59:59Z" for i in range(2000)}
    assert decide(pod("x"), pub(5, disruptedPods=just), operation="DELETE", now=NOW).allowed


def test_resize_follows_update_while_in_place_vertical_scaling_is_off() -> None:
    only_delete = pub(0, annotations={"kruise.io/pub-protect-operations": "UPDATE"})
    assert not decide(pod("p"), only_delete, operation="RESIZE", now=NOW).allowed
    assert decide(pod("p"), only_delete, operation="RESIZE", now=NOW,
                  inplace_vertical_scaling=True).allowed


def test_removal_of_an_unannotated_pod_is_never_checked() -> None:
    decision = admit_removal(pod("p", related=None), lookup=lookup_of(pub(0)),
                             operation="DELETE", now=NOW)
    assert decision.allowed
    assert decision.budget is None


def test_removal_reads_the_budget_the_annotation_names_in_the_pods_namespace() -> None:
    assert not admit_removal(pod("p"), lookup=lookup_of(pub(0)), operation="DELETE",
                             now=NOW).allowed
    elsewhere = pod("p", namespace="other")
    assert admit_removal(elsewhere, lookup=lookup_of(pub(0)), operation="DELETE",
                         now=NOW).allowed


def test_update_changing_the_image_is_budgeted_on_the_old_pod() -> None:
    old = pod("p")
    new = changed(old, spec__containers__0__image="nginx:1.26")
    decision = admit_update(new, old, lookup=lookup_of(pub(1)), now=NOW)
    assert decision.status is not None
    assert "p" in decision.status.unavailable_pods
    assert not admit_update(new, old, lookup=lookup_of(pub(0)), now=NOW).allowed


def test_update_reads_readiness_from_the_old_pod() -> None:
    old = pod("p", ready=False)
    new = changed(pod("p"), spec__containers__0__image="nginx:1.26")
    assert admit_update(new, old, lookup=lookup_of(pub(0)), now=NOW).why == "unavailable"


def test_update_of_labels_or_status_only_is_not_budgeted() -> None:
    old = pod("p")
    new = changed(old, metadata__labels={"app": "web", "tier": "x"},
                  status__phase="Running")
    assert admit_update(new, old, lookup=lookup_of(pub(0)), now=NOW).why == (
        "availability-unchanged")


def test_update_adding_an_unavailable_label_is_budgeted() -> None:
    old = pod("p")
    new = changed(old, metadata__labels={"app": "web", "unavailable-pod.kruise.io/x": "1"})
    assert update_operation(old, new) == "UPDATE"
    assert not admit_update(new, old, lookup=lookup_of(pub(0)), now=NOW).allowed


def test_update_without_the_annotation_on_the_new_pod_is_not_checked() -> None:
    old = pod("p")
    new = changed(pod("p", related=None), spec__containers__0__image="nginx:1.26")
    assert admit_update(new, old, lookup=lookup_of(pub(0)), now=NOW).why == "unannotated"


def _with_resources(p: JSON, cpu: str, **extra: Any) -> JSON:
    resources = {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu,
                                                                       "memory": "1Gi"}}
    return changed(p, spec__containers__0__resources=resources, **extra)


def test_a_cpu_change_is_a_resize_and_recorded_as_a_disruption() -> None:
    old = _with_resources(pod("p"), "1")
    new = _with_resources(pod("p"), "1500m")
    assert update_operation(old, new) == "RESIZE"
    decision = admit_update(new, old, lookup=lookup_of(pub(1)), now=NOW)
    assert decision.status is not None
    assert "p" in decision.status.disrupted_pods


def test_a_resize_with_an_image_change_is_an_update() -> None:
    old = _with_resources(pod("p"), "1")
    new = _with_resources(pod("p"), "2", spec__containers__0__image="nginx:1.26")
    assert update_operation(old, new) == "UPDATE"


def test_a_change_of_another_resource_is_an_update() -> None:
    old = _with_resources(pod("p"), "1")
    new = changed(old, spec__containers__0__resources={
        "requests": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"},
        "limits": {"cpu": "1", "memory": "1Gi"}})
    assert update_operation(old, new) == "UPDATE"


def test_a_resize_that_changes_the_qos_class_is_an_update() -> None:
    old = _with_resources(pod("p"), "1")
    new = changed(old, spec__containers__0__resources={"requests": {"cpu": "2"}})
    assert update_operation(old, new) == "UPDATE"


def test_a_resize_that_restarts_the_container_is_an_update() -> None:
    old = _with_resources(pod("p"), "1")
    new = _with_resources(pod("p"), "2", spec__containers__0__resizePolicy=[
        {"resourceName": "cpu", "restartPolicy": "RestartContainer"}])
    old = changed(old, spec__containers__0__resizePolicy=[
        {"resourceName": "cpu", "restartPolicy": "RestartContainer"}])
    assert update_operation(old, new) == "UPDATE"


# --- CREATE --------------------------------------------------------------------------------


def test_create_stamps_the_budget_naming_the_pods_deployment() -> None:
    deployment = workload()
    rs = replicaset(deployment)
    new_pod = pod("", owner=rs, related=None)
    chosen = budget_for_new_pod(new_pod, [from_object(budget())], Workloads([deployment, rs]))
    assert chosen is not None
    assert chosen.name == "web-server-pub"


def test_create_without_the_replicaset_reads_the_deployment_from_the_template_hash() -> None:
    rs = replicaset(workload())
    new_pod = pod("", owner=rs, related=None)
    chosen = budget_for_new_pod(new_pod, [from_object(budget())], Workloads([]))
    assert chosen is not None


def test_create_takes_the_first_match_and_skips_other_targets() -> None:
    deployment = workload()
    rs = replicaset(deployment)
    budgets = [
        from_object(budget("other-target", target=("apps/v1", "Deployment", "api"))),
        from_object(budget("by-selector", target=None, selector={"matchLabels": {"app": "web"}})),
        from_object(budget("by-target")),
    ]
    new_pod = pod("", owner=rs, related=None)
    chosen = budget_for_new_pod(new_pod, budgets, Workloads([deployment, rs]))
    assert chosen is not None
    assert chosen.name == "by-selector"


def test_create_of_a_pod_without_workload_matches_selectors_only() -> None:
    budgets = [from_object(budget()), from_object(budget("empty", target=None, selector={})),
               from_object(budget("sel", target=None, selector={"matchLabels": {"app": "web"}}))]
    chosen = budget_for_new_pod(pod("", related=None), budgets, Workloads([]))
    assert chosen is not None
    assert chosen.name == "sel"
    assert budget_for_new_pod(pod("", related=None, namespace="x"), budgets, Workloads([])) is None


def test_create_matches_a_budget_naming_the_united_deployment() -> None:
    ud = workload("UnitedDeployment", "web-ud", api_version="apps.kruise.io/v1alpha1")
    subset = workload("CloneSet", "web-ud-a", api_version="apps.kruise.io/v1alpha1", owner=ud)
    ud_budget = from_object(budget(target=("apps.kruise.io/v1alpha1", "UnitedDeployment",
                                           "web-ud")))
    chosen = budget_for_new_pod(pod("", owner=subset, related=None), [ud_budget],
                                Workloads([ud, subset]))
    assert chosen is ud_budget


def test_the_patch_adds_only_the_related_pub_key() -> None:
    assert related_pub_patch(pod("", related=None), "b") == [
        {"op": "add", "path": "/metadata/annotations", "value": {"kruise.io/related-pub": "b"}}]
    with_notes = pod("", related=None, annotations={"x": "y"})
    assert related_pub_patch(with_notes, "b") == [
        {"op": "add", "path": "/metadata/annotations/kruise.io~1related-pub", "value": "b"}]


def test_the_decision_time_is_recorded_at_second_precision() -> None:
    decision = decide(pod("p"), pub(1), operation="EVICT", now=NOW + timedelta(seconds=3))
    assert decision.status is not None
    assert decision.status.disrupted_pods["p"] == datetime(2026, 1, 1, 12, 0, 3, tzinfo=UTC)


def _resources(*containers: JSON) -> JSON:
    p = pod("p")
    p["spec"]["containers"] = [{"name": f"c{i}", "image": "x", "resources": r}
                               for i, r in enumerate(containers)]
    return p


@pytest.mark.parametrize(("containers", "qos"), [
    ([{}], "BestEffort"),
    ([{"requests": {"cpu": "0"}}], "BestEffort"),
    ([{"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}],
     "Guaranteed"),
    ([{"requests": {"cpu": "1000m", "memory": "1024Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}],
     "Guaranteed"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}}], "Burstable"),
    ([{"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}},
      {"requests": {"cpu": "2"}, "limits": {"cpu": "1", "memory": "1Gi"}}], "Burstable"),
    ([{"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
      {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}],
     "Guaranteed"),
    ([{"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
      {"requests": {"cpu": "1"}}], "Burstable"),
])
def test_qos_class_as_kubernetes_computes_it(containers: list[JSON], qos: str) -> None:
    assert qos_class(_resources(*containers)) == qos
