"""A verb this code does not know, from a newer producer, is a value the consumer can answer.

``Verb`` is a closed set, so msgspec refuses a plan or outcome naming another verb; the codec
reports it as ``unknown_verb`` (with the head every plan has, whatever its verb) instead of
``invalid``, and create and delete plans of this version round-trip whole.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from events import codec
from events.codec import PlanHead, Undecodable
from events.messages import VERBS, ObjectRef, Outcome, Plan, Precondition

TARGET = ObjectRef(group="apps", version="v1", resource="deployments", namespace="ns", name="web",
                   uid="u-1")


def _with_verb(message: Plan | Outcome, verb: str) -> bytes:
    body: dict[str, Any] = json.loads(codec.encode(message))
    body["verb"] = verb
    return json.dumps(body).encode()


def test_create_and_delete_plans_round_trip_with_their_object_and_policy() -> None:
    create = Plan(id="c", cluster="east", verb="create", target=TARGET, rule="r",
                  object={"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": "web", "namespace": "ns"}})
    delete = Plan(id="d", cluster="east", verb="delete", target=TARGET, rule="r",
                  precondition=Precondition(uid="u-1"), propagation_policy="Orphan")
    assert codec.decode(codec.encode(create)) == create
    assert codec.decode(codec.encode(delete)) == delete


def test_a_plan_written_before_create_and_delete_decodes_with_their_defaults() -> None:
    old = (b'{"type":"plan","v":1,"id":"p","cluster":"east","verb":"patch","target":'
           b'{"group":"","version":"v1","resource":"pods","namespace":"ns","name":"p"},'
           b'"patch_type":"merge","patch":{},"rule":"r"}')
    plan = codec.decode(old)
    assert isinstance(plan, Plan)
    assert (plan.object, plan.propagation_policy) == (None, "Background")


@given(st.text(min_size=1).filter(lambda verb: verb not in VERBS))
def test_a_plan_with_an_unknown_verb_comes_back_as_its_head(verb: str) -> None:
    plan = Plan(id="p-1", cluster="east", verb="patch", target=TARGET, rule="r",
                patch={"spec": {"replicas": 2}})
    result = codec.decode(_with_verb(plan, verb))
    assert isinstance(result, Undecodable)
    assert (result.kind, result.type, result.verb) == ("unknown_verb", "plan", verb)
    assert result.plan == PlanHead(id="p-1", cluster="east", verb=verb, target=TARGET)


def test_an_outcome_with_an_unknown_verb_is_reported_without_a_plan_head() -> None:
    outcome = Outcome(plan_id="p-1", cluster="east", verb="patch", target=TARGET,
                      result="applied")
    result = codec.decode(_with_verb(outcome, "scale"))
    assert isinstance(result, Undecodable)
    assert (result.kind, result.verb, result.plan) == ("unknown_verb", "scale", None)


def test_a_plan_invalid_for_another_reason_stays_invalid() -> None:
    body = json.loads(codec.encode(Plan(id="p", cluster="east", verb="patch", target=TARGET,
                                        rule="r")))
    body["causes"] = "not a list"
    result = codec.decode(json.dumps(body).encode())
    assert isinstance(result, Undecodable)
    assert result.kind == "invalid"
    assert "$.causes" in result.error


def test_an_unknown_verb_without_the_rest_of_a_plan_has_no_head() -> None:
    result = codec.decode(b'{"type":"plan","v":1,"verb":"scale"}')
    assert isinstance(result, Undecodable)
    assert (result.kind, result.plan) == ("unknown_verb", None)
