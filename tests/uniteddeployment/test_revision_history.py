"""ControllerRevisions: create, reuse, roll back, clean up, collide, and pick the current one."""

from __future__ import annotations

import json
from typing import Any

from spreadbus.features.uniteddeployment.core.model import from_object
from spreadbus.features.uniteddeployment.core.revision import (
    revision_data,
    revision_hash,
    ud_revision_name,
)
from spreadbus.features.uniteddeployment.core.revision_history import (
    new_revision,
    plan_revisions,
)
from tests.uniteddeployment.world import united, zone

JSON = dict[str, Any]


def ud(image: str = "nginx:1", **kwargs: Any) -> JSON:
    return united([zone("a")], image=image, **kwargs)


def stored(
    image: str, number: int, *, name: str | None = None, owner: str = "sample-ud-uid"
) -> JSON:
    model = from_object(ud(image))
    found = new_revision(model, number=number, collision_count=0)
    found["metadata"]["ownerReferences"][0]["uid"] = owner
    if name is not None:
        found["metadata"]["name"] = name
    return found


def test_the_first_revision_is_created_with_number_1_labels_and_owner() -> None:
    model = from_object(ud())
    plan = plan_revisions(model, [])
    (created,) = plan.creates
    assert created["metadata"]["name"] == ud_revision_name(model) == plan.updated == plan.current
    assert created["revision"] == 1
    hash_ = revision_hash(revision_data(model.template), 0)
    assert created["metadata"]["labels"] == {
        "app": "sample",
        "controller.kubernetes.io/hash": hash_,
    }
    assert created["metadata"]["ownerReferences"][0]["uid"] == "sample-ud-uid"
    assert created["data"] == json.loads(revision_data(model.template))
    assert plan.updates == []
    assert plan.deletes == []


def test_the_updated_name_depends_on_the_template_and_the_collision_count_only() -> None:
    one = from_object(ud(status={"collisionCount": 0}))
    same = from_object(ud(replicas=9, partitions={"a": 1}))
    other = from_object(ud(status={"collisionCount": 2}))
    assert ud_revision_name(one) == ud_revision_name(same) != ud_revision_name(other)
    assert ud_revision_name(from_object(ud("nginx:2"))) != ud_revision_name(one)


def test_the_newest_equal_revision_is_reused() -> None:
    history = [stored("nginx:0", 1), stored("nginx:1", 2)]
    plan = plan_revisions(from_object(ud()), history)
    assert plan.creates == []
    assert plan.updates == []
    assert plan.updated == history[1]["metadata"]["name"]


def test_an_older_equal_revision_is_rolled_forward() -> None:
    history = [stored("nginx:1", 1), stored("nginx:2", 2)]
    plan = plan_revisions(from_object(ud()), history)
    assert plan.creates == []
    assert plan.updates == [(history[0]["metadata"]["name"], 3)]


def test_a_new_template_gets_the_next_number_and_current_stays() -> None:
    old = stored("nginx:0", 4)
    model = from_object(ud(status={"currentRevision": old["metadata"]["name"]}))
    plan = plan_revisions(model, [old])
    assert [c["revision"] for c in plan.creates] == [5]
    assert plan.current == old["metadata"]["name"] != plan.updated


def test_a_current_revision_not_in_history_falls_back_to_the_updated_one() -> None:
    model = from_object(ud(status={"currentRevision": "gone"}))
    plan = plan_revisions(model, [])
    assert plan.current == plan.updated


def test_revisions_of_others_are_not_history() -> None:
    foreign = stored("nginx:1", 7, owner="someone")
    foreign["metadata"]["name"] = "unrelated"
    plan = plan_revisions(from_object(ud()), [foreign])
    assert [c["revision"] for c in plan.creates] == [1]


def test_history_beyond_the_limit_is_cleaned_oldest_first_except_live_ones() -> None:
    history = [stored(f"nginx:old{i}", i + 1) for i in range(5)]
    live = history[0]["metadata"]["name"]
    model = from_object(ud(history_limit=2, status={"currentRevision": live}))
    plan = plan_revisions(model, history)
    # Three too many: the first is live and kept, the next two go.
    assert plan.deletes == [history[1]["metadata"]["name"], history[2]["metadata"]["name"]]
    # As in Kruise, the kept live entry no longer counts as history this round.
    assert plan.current == plan.updated
    assert [c["revision"] for c in plan.creates] == [6]


def test_the_default_limit_is_ten() -> None:
    history = [stored(f"nginx:old{i}", i + 1) for i in range(11)]
    plan = plan_revisions(from_object(ud()), history)
    assert plan.deletes == [history[0]["metadata"]["name"]]


def test_a_name_taken_by_other_data_raises_the_collision_count() -> None:
    model = from_object(ud())
    squatter = stored("nginx:9", 1, name=ud_revision_name(model))
    plan = plan_revisions(model, [squatter])
    assert plan.collision_count == 1
    assert plan.updated == ud_revision_name(model, 1)
    assert [c["metadata"]["name"] for c in plan.creates] == [plan.updated]


def test_a_name_taken_by_the_same_data_is_used_as_is() -> None:
    model = from_object(ud())
    twin = stored("nginx:1", 1, owner="someone")
    plan = plan_revisions(model, [twin])
    assert plan.creates == []
    assert plan.updated == twin["metadata"]["name"]
    assert plan.collision_count == 0
