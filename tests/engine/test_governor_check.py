"""The pure decisions on a plan's governor as read: identity, generation, what is written.

A plan goes on only when the governor read is the one it was decided on (uid and generation);
gone, replaced or moved on, it is dropped (failed, decided again); claiming a generation the
governor never reached, or no uid, it is refused. A grant's ``follows`` judges the whole object
a create sends or a patch leaves, and a patch so judged must name its resourceVersion.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from events.messages import ObjectRef, Plan, Precondition, Verb
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.governor_check import (
    Dropped,
    Refusal,
    judge_governor,
    judge_written,
    written_object,
)
from spreadbus.engine.plan_grants import Governor, PlanGrant
from spreadbus.features.registry import BUILTIN

KIND = Governor(group="apps.kruise.io", kind="UnitedDeployment", resource="uniteddeployments")
TARGET = ObjectRef(group="apps", version="v1", resource="statefulsets", namespace="default",
                   name="ud-a", uid="sts-uid")


def plan(*, uid: str = "ud-uid", generation: int = 2, verb: Verb = "patch", patch: Any = None,
         patch_type: Any = "merge", obj: dict[str, Any] | None = None,
         rv: str = "7") -> Plan:
    governor = ObjectRef(group=KIND.group, version="v1alpha1", resource=KIND.resource,
                         namespace="default", name="ud", uid=uid)
    return Plan(id="p", cluster="c", verb=verb, rule="united", target=TARGET, patch=patch,
                patch_type=patch_type, object=obj, governor=governor,
                governor_generation=generation,
                precondition=Precondition(uid=TARGET.uid if verb != "create" else "",
                                          resource_version=rv))


def governor(uid: str = "ud-uid", generation: int | None = 2) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "ud", "namespace": "default", "uid": uid}
    if generation is not None:
        metadata["generation"] = generation
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": metadata}


@given(planned=st.integers(0, 9), held=st.integers(0, 9))
def test_only_the_generation_the_plan_was_decided_on_lets_it_go_on(planned: int,
                                                                   held: int) -> None:
    verdict = judge_governor(plan(generation=planned), KIND, governor(generation=held))
    if planned == held:
        assert verdict is None
    elif planned > held:
        assert isinstance(verdict, Refusal)
        assert f"generation {planned}" in verdict.message
    else:
        assert verdict == Dropped(409, "Conflict", (
            f"the governing UnitedDeployment default/ud has moved on to generation {held}, "
            f"the plan was decided at {planned}: dropped unsent"))


def test_a_governor_gone_or_replaced_drops_the_plan_and_no_uid_is_refused() -> None:
    gone = judge_governor(plan(), KIND, None)
    assert isinstance(gone, Dropped)
    assert (gone.status, gone.reason) == (404, "NotFound")
    replaced = judge_governor(plan(), KIND, governor(uid="new-uid"))
    assert isinstance(replaced, Dropped)
    assert (replaced.status, replaced.reason) == (409, "Conflict")
    assert "'new-uid'" in replaced.message
    assert isinstance(judge_governor(plan(uid=""), KIND, governor()), Refusal)
    assert isinstance(judge_governor(plan(uid=""), KIND, None), Refusal)


def test_a_governor_without_a_generation_is_at_0() -> None:
    assert judge_governor(plan(generation=0), KIND, governor(generation=None)) is None
    assert isinstance(judge_governor(plan(generation=1), KIND, governor(generation=None)),
                      Refusal)


def test_a_create_is_judged_as_the_actuator_names_it() -> None:
    obj = {"kind": "StatefulSet", "metadata": {"generateName": "ud-a-", "namespace": "x",
                                                "labels": {"k": "v"}}}
    written = written_object(plan(verb="create", obj=obj), None)
    assert written == {"kind": "StatefulSet", "metadata": {
        "namespace": "default", "name": "ud-a", "labels": {"k": "v"}}}
    assert written_object(plan(verb="create"), None) == "a create plan carries no object"


def test_a_patch_is_judged_on_the_object_it_leaves() -> None:
    before = {"kind": "StatefulSet", "metadata": {"uid": "sts-uid", "resourceVersion": "7"},
              "spec": {"replicas": 2, "paused": True,
                       "template": {"spec": {"containers": [{"name": "a", "image": "1"}]}}}}
    merged = written_object(plan(patch={"spec": {"replicas": 3, "paused": None}}), before)
    assert merged == {"kind": "StatefulSet", "metadata": before["metadata"],
                      "spec": {"replicas": 3, "template": before["spec"]["template"]}}
    strategic = written_object(plan(patch_type="strategic", patch={"spec": {"template": {
        "spec": {"containers": [{"name": "a", "image": "2"}]}}}}), before)
    assert isinstance(strategic, dict)
    assert strategic["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "2"}]
    json_patched = written_object(plan(patch_type="json", patch=[
        {"op": "test", "path": "/spec/replicas", "value": 2},
        {"op": "replace", "path": "/spec/replicas", "value": 5}]), before)
    assert isinstance(json_patched, dict)
    assert json_patched["spec"]["replicas"] == 5
    assert before["spec"]["replicas"] == 2, "the object read is left alone"


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)


@given(patch_type=st.sampled_from(["merge", "strategic", "json"]), patch=_JSON)
def test_any_patch_gives_an_object_or_a_reason_and_never_raises(patch_type: str,
                                                                 patch: Any) -> None:
    before = {"kind": "StatefulSet", "metadata": {"name": "ud-a"}, "spec": {"replicas": 1}}
    written = written_object(plan(patch_type=patch_type, patch=patch), before)
    assert isinstance(written, dict | str)


def checked(reason: str = "") -> tuple[PlanGrant, list[tuple[Any, ...]]]:
    seen: list[tuple[Any, ...]] = []

    def follows(gov: Any, written: Any, before: Any) -> str:
        seen.append((gov, written, before))
        return reason

    return PlanGrant(rule="united", verb="patch", group="apps", resource="statefulsets",
                     governor=KIND, relation="controlled", follows=follows), seen


def test_a_checked_patch_names_its_version_and_lands_on_it() -> None:
    grant, seen = checked()
    before = {"metadata": {"uid": "sts-uid", "resourceVersion": "7"}, "spec": {"replicas": 1}}
    assert judge_written(plan(patch={"spec": {"replicas": 2}}), grant, governor(), before) is None
    assert seen == [(governor(), {**before, "spec": {"replicas": 2}}, before)]
    unversioned = judge_written(plan(patch={}, rv=""), grant, governor(), before)
    assert isinstance(unversioned, Refusal)
    assert "resourceVersion" in unversioned.message
    moved = judge_written(plan(patch={}, rv="6"), grant, governor(), before)
    assert moved == Dropped(409, "Conflict", "resourceVersion is 7, the plan required 6")
    replaced = judge_written(plan(patch={}), grant, governor(),
                             {"metadata": {"uid": "other", "resourceVersion": "7"}})
    assert isinstance(replaced, Dropped)


def test_what_does_not_follow_is_refused_naming_the_governor() -> None:
    grant, _ = checked("spec.template: not the UD's")
    before = {"metadata": {"uid": "sts-uid", "resourceVersion": "7"}}
    verdict = judge_written(plan(patch={}), grant, governor(), before)
    assert verdict == Refusal("what it writes does not follow from the UnitedDeployment "
                              "default/ud: spec.template: not the UD's")
    plain = PlanGrant(rule="united", verb="patch", group="apps", resource="statefulsets",
                      governor=KIND)
    assert judge_written(plan(patch={}), plain, governor(), before) is None


def test_every_builtin_create_or_spec_patch_is_checked_against_its_governor() -> None:
    grants = plan_grants(BUILTIN)
    assert all(g.governor is not None for g in grants)
    checked = [g for g in grants if g.verb == "create" or ("spec",) in g.writes]
    assert checked, "the UnitedDeployment creates and updates its subset workloads"
    assert [g.target for g in checked if g.follows is None] == []


def test_a_governor_read_that_is_another_object_is_refused() -> None:
    """The API server's answer at the governor's path must be that governor (a traversal would
    reach another object)."""
    other = governor()
    other["apiVersion"], other["kind"] = "v1", "Secret"
    verdict = judge_governor(plan(), KIND, other)
    assert isinstance(verdict, Refusal)
    assert verdict.message.startswith("the object read is Secret default/'ud'")
