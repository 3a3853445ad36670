"""Rules say what should be true; the planner emits a plan only for a real, new difference."""

from __future__ import annotations

import pytest

from events import codec, subjects
from events.messages import Outcome, Plan
from kubesim import jsonpatch
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import patch_satisfied, plans_for
from tests.backbone.log_builders import deployment, observe
from tests.fixtures.observed_generation import (
    ANNOTATION,
    ANNOTATION_PATH,
    ObservedGeneration,
    written_value,
)

RULE = ObservedGeneration("c1")


def decide(projection: KubeProjection, log: DecisionLog) -> list[Plan]:
    changed = projection.take_changed()
    return plans_for(RULE, projection, log, RULE.desired(projection, changed, now=5.0),
                     cluster="c1", now=5.0)


def record(log: DecisionLog, plans: list[Plan], start: int) -> None:
    for i, plan in enumerate(plans):
        t = plan.target
        log.apply_plan(start + i, subjects.plan("c1", plan.verb, t.group, t.resource,
                                                t.namespace, t.name), codec.encode(plan))


def answer(log: DecisionLog, plan: Plan, seq: int, result: str = "applied") -> None:
    outcome = Outcome(plan_id=plan.id, cluster="c1", verb=plan.verb, target=plan.target,
                      result=result)  # type: ignore[arg-type]
    log.apply_outcome(seq, "outcome.c1.patch.apps.deployments.default.x", codec.encode(outcome))


def test_a_deployment_without_the_annotation_gets_exactly_one_plan() -> None:
    projection, log = KubeProjection(), DecisionLog()
    projection.apply(1, *observe(deployment("web", 3, 10)))
    plans = decide(projection, log)
    assert len(plans) == 1
    plan = plans[0]
    assert plan.patch_type == "json"
    assert plan.patch == [{"op": "test", "path": "/metadata/generation", "value": 3},
                          {"op": "add", "path": ANNOTATION_PATH, "value": "3"}]
    assert plan.precondition.uid == "uid-default-web"
    assert plan.precondition.resource_version == ""  # the generation test says what matters
    assert plan.causes == [1]
    assert plan.target.name == "web"


def test_plan_ids_are_deterministic_across_planners() -> None:
    first, second = KubeProjection(), KubeProjection()
    for projection in (first, second):
        projection.apply(1, *observe(deployment("web", 3, 10)))
    assert decide(first, DecisionLog())[0].id == decide(second, DecisionLog())[0].id


def test_an_equal_plan_in_flight_or_answered_is_not_emitted_again() -> None:
    projection, log = KubeProjection(), DecisionLog()
    projection.apply(1, *observe(deployment("web", 3, 10)))
    [plan] = decide(projection, log)
    record(log, [plan], 1)
    projection.mark_all_changed()
    assert decide(projection, log) == []  # in flight
    answer(log, plan, 1)
    projection.mark_all_changed()
    assert decide(projection, log) == []  # answered; waiting for the next observation


def test_once_the_annotation_is_observed_nothing_is_planned() -> None:
    projection, log = KubeProjection(), DecisionLog()
    projection.apply(1, *observe(deployment("web", 3, 10, {ANNOTATION: "3"})))
    assert decide(projection, log) == []


def test_a_new_generation_while_a_plan_is_in_flight_gets_a_new_plan() -> None:
    projection, log = KubeProjection(), DecisionLog()
    projection.apply(1, *observe(deployment("web", 1, 10)))
    [first] = decide(projection, log)
    record(log, [first], 1)
    projection.apply(2, *observe(deployment("web", 2, 11)))
    [second] = decide(projection, log)
    assert second.id != first.id
    assert written_value(second.patch) == "2"
    record(log, [second], 2)
    answer(log, first, 1, "failed")  # the replaced plan's outcome arrives late
    assert log.in_flight() == [second.id]


def test_an_outcome_folded_before_its_plan_still_matches() -> None:
    projection, log = KubeProjection(), DecisionLog()
    projection.apply(1, *observe(deployment("web", 1, 10)))
    [plan] = decide(projection, log)
    answer(log, plan, 1)
    record(log, [plan], 1)
    assert log.in_flight() == []
    assert log.state.early == {}


def test_merge_patch_satisfaction_follows_merge_semantics() -> None:
    observed = {"metadata": {"annotations": {"a": "1"}, "labels": {"x": "y"}}}
    assert patch_satisfied(observed, {"metadata": {"annotations": {"a": "1"}}})
    assert not patch_satisfied(observed, {"metadata": {"annotations": {"a": "2"}}})
    assert patch_satisfied(observed, {"metadata": {"annotations": {"b": None}}})
    assert not patch_satisfied(observed, {"metadata": {"labels": {"x": None}}})
    assert not patch_satisfied(observed, {"spec": {"replicas": 1}})


def test_cluster_names_that_need_escaping_still_match_their_plans() -> None:
    rule = ObservedGeneration("dev_cluster.1")
    projection, log = KubeProjection(), DecisionLog()
    projection.apply(1, *observe(deployment("web", 1, 10), cluster="dev_cluster.1"))
    changed = projection.take_changed()
    [plan] = plans_for(rule, projection, log, rule.desired(projection, changed, now=1.0),
                       cluster="dev_cluster.1", now=1.0)
    t = plan.target
    log.apply_plan(1, subjects.plan("dev_cluster.1", plan.verb, t.group, t.resource,
                                    t.namespace, t.name), codec.encode(plan))
    projection.mark_all_changed()
    again = plans_for(rule, projection, log,
                      rule.desired(projection, projection.take_changed(), now=2.0),
                      cluster="dev_cluster.1", now=2.0)
    assert again == []
    assert log.in_flight() == [plan.id]


def test_a_stale_plan_cannot_write_an_older_generation_but_lands_on_any_other_change() -> None:
    projection, log = KubeProjection(), DecisionLog()
    projection.apply(1, *observe(deployment("web", 2, 10, {"other": "x"})))
    [plan] = decide(projection, log)
    status_moved = deployment("web", 2, 11, {"other": "x"})
    status_moved["status"] = {"replicas": 2}
    patched = jsonpatch.apply(status_moved, plan.patch)
    assert patched["metadata"]["annotations"] == {"other": "x", ANNOTATION: "2"}
    with pytest.raises(jsonpatch.JsonPatchError):
        jsonpatch.apply(deployment("web", 3, 12, {"other": "x"}), plan.patch)


def test_a_deployment_without_annotations_gets_the_map_only_on_the_version_it_was_seen_at() -> None:
    projection, log = KubeProjection(), DecisionLog()
    obj = deployment("web", 1, 10)
    del obj["metadata"]["annotations"]
    projection.apply(1, *observe(obj))
    [plan] = decide(projection, log)
    assert jsonpatch.apply(obj, plan.patch)["metadata"]["annotations"] == {ANNOTATION: "1"}
    meanwhile = deployment("web", 1, 11, {"deployment.kubernetes.io/revision": "1"})
    with pytest.raises(jsonpatch.JsonPatchError):
        jsonpatch.apply(meanwhile, plan.patch)  # would have replaced the revision annotation


def test_a_deployment_whose_annotation_is_right_gets_no_plan() -> None:
    projection, log = KubeProjection(), DecisionLog()
    projection.apply(1, *observe(deployment("web", 4, 10, {ANNOTATION: "4"})))
    assert decide(projection, log) == []
