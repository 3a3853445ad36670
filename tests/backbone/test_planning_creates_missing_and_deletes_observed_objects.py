"""Create and delete Desired against the projection: planned only where they change something.

A create is planned while its object is not observed, a delete while it is (and not already
being deleted). Plan ids stay deterministic; a create's id moves on with the answers its slot
got, so wanting an object again after it was created and deleted is a new plan, while a refused
create is not retried until the decision log forgets it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Set
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from events import codec, subjects
from events.messages import ObjectRef, Outcome, Plan, ResourceRef
from spreadbus.projection.decision_log import CREATE_MEMORY_SECONDS, DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired, intent_id, plans_for
from tests.backbone.log_builders import deployment, observe

OWNER_UID = "uid-default-owner"


class Fixed:
    """A rule that wants exactly what it is given; plans_for only reads its name."""

    name = "fixed"
    resources = (ResourceRef(group="apps", version="v1", resource="deployments"),)

    def __init__(self, wants: list[Desired]) -> None:
        self.wants = wants

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        return self.wants


def ref(name: str) -> ObjectRef:
    return ObjectRef(group="apps", version="v1", resource="deployments", namespace="default",
                     name=name)


def child(name: str, owner_uid: str = OWNER_UID) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"generateName": f"{name}-", "labels": {"app": name},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                          "name": "owner", "uid": owner_uid,
                                          "controller": True}]},
        "spec": {"replicas": 1},
    }


def create(name: str, owner_uid: str = OWNER_UID) -> Desired:
    return Desired(verb="create", target=ref(name), object=child(name, owner_uid))


def delete(name: str) -> Desired:
    return Desired(verb="delete", target=ref(name))


def decide(view: KubeProjection, log: DecisionLog, *wants: Desired, now: float = 5.0,
           ) -> list[Plan]:
    return plans_for(Fixed(list(wants)), view, log, wants, cluster="c1", now=now)


def record(log: DecisionLog, plan: Plan, seq: int) -> None:
    t = plan.target
    log.apply_plan(seq, subjects.plan("c1", plan.verb, t.group, t.resource, t.namespace, t.name),
                   codec.encode(plan))


def answer(log: DecisionLog, plan: Plan, seq: int, result: str) -> None:
    outcome = Outcome(plan_id=plan.id, cluster="c1", verb=plan.verb, target=plan.target,
                      result=result)  # type: ignore[arg-type]
    log.apply_outcome(seq, "outcome.c1.create.apps.deployments.default.x", codec.encode(outcome))


def test_a_missing_object_gets_a_create_carrying_it_under_the_targets_name() -> None:
    [plan] = decide(KubeProjection(), DecisionLog(), create("web-a"))
    assert (plan.verb, plan.target.name, plan.cluster) == ("create", "web-a", "c1")
    assert plan.object is not None
    metadata = plan.object["metadata"]
    assert (metadata["name"], metadata["namespace"]) == ("web-a", "default")
    assert "generateName" not in metadata
    assert metadata["ownerReferences"][0]["uid"] == OWNER_UID
    assert (plan.precondition.uid, plan.precondition.seen_version, plan.causes) == ("", "", [])
    assert plan.ts == 5.0


def test_an_observed_object_is_nothing_to_create() -> None:
    view = KubeProjection()
    view.apply(1, *observe(deployment("web-a", 1, 10)))
    assert decide(view, DecisionLog(), create("web-a")) == []


def test_an_observed_object_gets_a_delete_naming_its_uid_and_version() -> None:
    view = KubeProjection()
    view.apply(1, *observe(deployment("web-a", 1, 10)))
    [plan] = decide(view, DecisionLog(), delete("web-a"))
    assert plan.verb == "delete"
    assert plan.precondition.uid == "uid-default-web-a"
    assert plan.precondition.seen_version == "10"
    assert plan.propagation_policy == "Background"
    assert plan.causes == [1]


def test_a_missing_object_or_one_being_deleted_is_nothing_to_delete() -> None:
    view = KubeProjection()
    terminating = deployment("going", 1, 11)
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    view.apply(1, *observe(terminating))
    assert decide(view, DecisionLog(), delete("never-was"), delete("going")) == []


def test_a_create_without_an_object_is_the_rules_error() -> None:
    with pytest.raises(ValueError, match="carries no object"):
        decide(KubeProjection(), DecisionLog(), Desired(verb="create", target=ref("web-a")))


def test_plans_in_flight_are_not_planned_again() -> None:
    view, log = KubeProjection(), DecisionLog()
    view.apply(1, *observe(deployment("old", 1, 10)))
    plans = decide(view, log, create("new"), delete("old"))
    assert sorted(p.verb for p in plans) == ["create", "delete"]
    for seq, plan in enumerate(plans, 1):
        record(log, plan, seq)
    assert decide(view, log, create("new"), delete("old")) == []
    view.apply(2, *observe(deployment("old", 2, 12)))  # a newer version, the same intent
    assert decide(view, log, delete("old")) == []


def test_equal_decisions_on_equal_state_have_equal_ids_and_other_objects_other_ids() -> None:
    first = decide(KubeProjection(), DecisionLog(), create("web-a"))
    second = decide(KubeProjection(), DecisionLog(), create("web-a"))
    other_owner = decide(KubeProjection(), DecisionLog(), create("web-a", "uid-other"))
    assert first == second
    assert first[0].id != other_owner[0].id


def test_a_create_wanted_again_after_its_answer_is_a_new_plan_each_time() -> None:
    view, log = KubeProjection(), DecisionLog()
    [first] = decide(view, log, create("web-a"))
    record(log, first, 1)
    answer(log, first, 1, "applied")
    [early] = decide(view, log, create("web-a"))  # answered, its observation not folded yet
    record(log, early, 2)
    answer(log, early, 2, "skipped")
    created = deployment("web-a", 1, 20)
    view.apply(1, *observe(created, "ADDED"))
    assert decide(view, log, create("web-a")) == []
    view.apply(2, *observe(created, "DELETED"))
    [again] = decide(view, log, create("web-a"))
    assert len({first.id, early.id, again.id}) == 3
    assert {p.id[:16] for p in (first, early, again)} == {intent_id("c1", "fixed", create("web-a"))}


def test_a_refused_create_stays_refused_but_another_intent_is_planned() -> None:
    view, log = KubeProjection(), DecisionLog()
    [refused] = decide(view, log, create("web-a"))
    record(log, refused, 1)
    answer(log, refused, 1, "failed")
    assert decide(view, log, create("web-a")) == []
    [changed] = decide(view, log, create("web-a", "uid-new-owner"))
    assert changed.id != refused.id


def test_a_settled_create_of_a_missing_object_is_forgotten_only_after_the_dedup_window() -> None:
    view, log = KubeProjection(), DecisionLog()
    [first] = decide(view, log, create("web-a"), now=100.0)
    record(log, first, 1)
    answer(log, first, 1, "failed")
    deadline = 100.0 + CREATE_MEMORY_SECONDS
    assert log.prune(view.exists) == 0
    assert log.prune(view.exists, now=deadline) == 0
    assert decide(view, log, create("web-a"), now=deadline) == []
    assert log.prune(view.exists, now=deadline + 1) == 1
    [retried] = decide(view, log, create("web-a"), now=deadline + 1)
    assert retried.id == first.id  # safe: older than every dedup window


def test_a_settled_delete_of_a_deleted_object_is_forgotten_at_once() -> None:
    view, log = KubeProjection(), DecisionLog()
    obj = deployment("old", 1, 10)
    view.apply(1, *observe(obj))
    [plan] = decide(view, log, delete("old"))
    record(log, plan, 1)
    answer(log, plan, 1, "applied")
    view.apply(2, *observe(obj, "DELETED"))
    assert log.prune(view.exists) == 1


def test_patch_ids_are_what_they_were_before_create_and_delete() -> None:
    want = Desired(verb="patch", target=ref("web-a"), patch={"metadata": {"labels": {"a": "b"}}})
    material = msgspec.json.Encoder(order="sorted").encode(
        ["c1", "fixed", "patch", want.target, "merge", want.patch, "uid"])
    assert intent_id("c1", "fixed", want) == hashlib.sha256(material).hexdigest()[:16]


def test_a_create_dropped_for_an_older_governor_is_decided_again_on_the_newer_one() -> None:
    view, log = KubeProjection(), DecisionLog()
    at = {"governor": ref("owner"), "governor_generation": 3}
    [dropped] = decide(view, log, msgspec.structs.replace(create("web-a"), **at))
    assert dropped.governor_generation == 3
    record(log, dropped, 1)
    answer(log, dropped, 1, "failed")  # the actuator found the governor at generation 4
    assert decide(view, log, msgspec.structs.replace(create("web-a"), **at)) == [], (
        "decided again on the same generation, the dropped plan is not repeated")
    [again] = decide(view, log, msgspec.structs.replace(create("web-a"), governor=ref("owner"),
                                                        governor_generation=4))
    assert again.governor_generation == 4
    assert again.id[:16] != dropped.id[:16]


def test_ids_without_a_governor_generation_are_what_they_were() -> None:
    want = create("web-a")
    assert intent_id("c1", "fixed", want) == intent_id(
        "c1", "fixed", msgspec.structs.replace(want, governor=ref("owner")))
    assert intent_id("c1", "fixed", want) != intent_id(
        "c1", "fixed", msgspec.structs.replace(want, governor_generation=1))


NAMES = st.sampled_from(["a", "b", "c", "d", "e"])


@given(observed=st.sets(NAMES), creates=st.sets(NAMES), deletes=st.sets(NAMES))
def test_creates_go_to_missing_objects_and_deletes_to_observed_ones(
    observed: set[str], creates: set[str], deletes: set[str]
) -> None:
    view = KubeProjection()
    for seq, name in enumerate(sorted(observed), 1):
        view.apply(seq, *observe(deployment(name, 1, seq)))
    wants = [create(n) for n in sorted(creates)] + [delete(n) for n in sorted(deletes)]
    plans = decide(view, DecisionLog(), *wants)
    assert {p.target.name for p in plans if p.verb == "create"} == creates - observed
    assert {p.target.name for p in plans if p.verb == "delete"} == deletes & observed
    assert all(p.precondition.uid == f"uid-default-{p.target.name}"
               for p in plans if p.verb == "delete")
    assert len({p.id for p in plans}) == len(plans)
    assert decide(view, DecisionLog(), *wants) == plans
