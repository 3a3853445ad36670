"""The UnitedDeployment rule on the projection, with reconciles written by hand.

The rule gathers a UD's family (its subset workloads, their ReplicaSets and pods, its revisions)
through owner references alone, reconciles only the UDs a change concerns, and turns a
reconcile's answer into writes: creates under a name derived from the UD and the subset, updates
as the merge patch of the difference, deletes, revisions, pod labels, the status and the
rebalance annotation.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from events import codec, subjects
from events.messages import Observation
from kubesemantics import merge_patch
from spreadbus.features.uniteddeployment.core.pod_groups import OwnerKey, OwnerPods
from spreadbus.features.uniteddeployment.planning.rule import (
    HANDLED_ANNOTATION,
    RETRY_SECONDS,
    UnitedDeploymentRule,
)
from spreadbus.features.uniteddeployment.planning.workload_names import (
    SUFFIX_ALPHABET,
    subset_workload_name,
)
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired, plans_for

T0 = 1_800_000_000.0
RESOURCES = {
    "Pod": ("", "v1", "pods"),
    "Deployment": ("apps", "v1", "deployments"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "ControllerRevision": ("apps", "v1", "controllerrevisions"),
    "CloneSet": ("apps.kruise.io", "v1alpha1", "clonesets"),
    "UnitedDeployment": ("apps.kruise.io", "v1alpha1", "uniteddeployments"),
}


@dataclass(frozen=True)
class Decision:
    replicas: int
    partition: int | None
    action: Literal["create", "update", "none"]
    workload: Mapping[str, Any]


@dataclass(frozen=True)
class Answer:
    subsets: Mapping[str, Decision] = field(default_factory=dict)
    deletes: Sequence[Mapping[str, Any]] = ()
    status: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    requeue_at: datetime | None = None
    pod_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    revision_creates: Sequence[Mapping[str, Any]] = ()
    revision_updates: Sequence[tuple[str, int]] = ()
    revision_deletes: Sequence[str] = ()
    rebalance_handled: str | None = None


class Recorder:
    """A reconcile that records what it was given and answers what the test set."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.answer: Answer = Answer()

    def __call__(self, ud: Mapping[str, Any], *, workloads: Sequence[Mapping[str, Any]],
                 pod_groups: Mapping[OwnerKey, OwnerPods],
                 revisions: Sequence[Mapping[str, Any]], now: datetime,
                 home: str | None = None,
                 clusters: Sequence[Mapping[str, Any]] | None = None,
                 control_plane: bool = False) -> Answer:
        self.calls.append({"ud": ud["metadata"]["name"],
                           "workloads": sorted(w["metadata"]["name"] for w in workloads),
                           "pods": sorted(f.name for group in pod_groups.values()
                                          for f in group.pods.values()),
                           "revisions": sorted(r["metadata"]["name"] for r in revisions),
                           "now": now})
        return self.answer


class World:
    def __init__(self) -> None:
        self.view = KubeProjection()
        self.reconcile = Recorder()
        self.rule = UnitedDeploymentRule("c1", reconcile=self.reconcile,
                                         min_interval_seconds=0.0)
        self.seq = 0

    def put(self, obj: dict[str, Any],
            event: Literal["ADDED", "MODIFIED", "DELETED"] = "MODIFIED") -> dict[str, Any]:
        self.seq += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.seq)
        meta.setdefault("uid", f"uid-{meta['name']}")
        group, version, resource = RESOURCES[obj["kind"]]
        message = Observation(cluster="c1", group=group, version=version, resource=resource,
                              event=event, object=obj)
        subject = subjects.observation("c1", group, resource, meta["namespace"], meta["name"])
        self.view.apply(self.seq, subject, codec.encode(message))
        return obj

    def round(self, at: float = T0) -> list[Desired]:
        return self.rule.desired(self.view, self.view.take_changed(), at)


def owned_by(kind: str, name: str, api_version: str = "apps/v1") -> list[dict[str, Any]]:
    return [{"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}",
             "controller": True}]


def obj(kind: str, name: str, owner: list[dict[str, Any]] | None = None,
        **rest: Any) -> dict[str, Any]:
    group, version, _ = RESOURCES[kind]
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner:
        meta["ownerReferences"] = owner
    return {"apiVersion": f"{group}/{version}" if group else version, "kind": kind,
            "metadata": meta, **rest}


UD_OWNER = owned_by("UnitedDeployment", "ud", "apps.kruise.io/v1alpha1")


def family(world: World) -> None:
    world.put(obj("UnitedDeployment", "ud", spec={"replicas": 3}))
    world.put(obj("UnitedDeployment", "other"))
    world.put(obj("CloneSet", "ud-a-xxxxx", UD_OWNER, spec={"replicas": 1}))
    world.put(obj("Deployment", "ud-b-yyyyy", UD_OWNER, spec={"replicas": 2}))
    world.put(obj("ReplicaSet", "ud-b-yyyyy-1", owned_by("Deployment", "ud-b-yyyyy")))
    world.put(obj("Pod", "a-0", owned_by("CloneSet", "ud-a-xxxxx", "apps.kruise.io/v1alpha1")))
    world.put(obj("Pod", "b-0", owned_by("ReplicaSet", "ud-b-yyyyy-1")))
    world.put(obj("Pod", "b-1", owned_by("ReplicaSet", "ud-b-yyyyy-1")))
    world.put(obj("ControllerRevision", "ud-1234", UD_OWNER))
    world.put(obj("Pod", "stray"))
    world.put(obj("CloneSet", "theirs", owned_by("UnitedDeployment", "other",
                                                 "apps.kruise.io/v1alpha1")))


def test_a_ud_is_reconciled_over_its_own_family_only() -> None:
    world = World()
    family(world)
    world.round()
    mine = next(c for c in world.reconcile.calls if c["ud"] == "ud")
    assert mine["workloads"] == ["ud-a-xxxxx", "ud-b-yyyyy", "ud-b-yyyyy-1"]
    assert mine["pods"] == ["a-0", "b-0", "b-1"]
    assert mine["revisions"] == ["ud-1234"]
    assert mine["now"] == datetime.fromtimestamp(T0, UTC)
    theirs = next(c for c in world.reconcile.calls if c["ud"] == "other")
    assert theirs["workloads"] == ["theirs"]
    assert theirs["pods"] == []


def test_a_changed_pod_reconciles_the_ud_above_it_and_nothing_else() -> None:
    world = World()
    family(world)
    world.round()
    world.reconcile.calls.clear()
    world.put(obj("Pod", "b-1", owned_by("ReplicaSet", "ud-b-yyyyy-1"), status={"x": 1}))
    world.put(obj("Pod", "stray", status={"x": 1}))
    world.round(T0 + 1)
    assert [c["ud"] for c in world.reconcile.calls] == ["ud"]

    world.reconcile.calls.clear()
    world.put(obj("Pod", "b-1", owned_by("ReplicaSet", "ud-b-yyyyy-1")), event="DELETED")
    world.round(T0 + 2)
    (call,) = world.reconcile.calls
    assert call["ud"] == "ud"
    assert call["pods"] == ["a-0", "b-0"], "a deleted pod leaves the family"


def test_an_object_released_by_the_ud_leaves_its_family() -> None:
    world = World()
    family(world)
    world.round()
    world.reconcile.calls.clear()
    world.put(obj("CloneSet", "ud-a-xxxxx", None, spec={"replicas": 1}))
    world.round(T0 + 1)
    (call,) = world.reconcile.calls
    assert call["workloads"] == ["ud-b-yyyyy", "ud-b-yyyyy-1"]
    assert call["pods"] == ["b-0", "b-1"]


def test_only_pods_under_a_ud_are_followed_and_a_released_deployment_takes_its_pods() -> None:
    world = World()
    family(world)
    world.round()
    assert len(world.rule.pods) == 3, "the stray pod is not followed"
    world.reconcile.calls.clear()
    world.put(obj("Deployment", "ud-b-yyyyy", None, spec={"replicas": 2}))
    world.round(T0 + 1)
    (call,) = world.reconcile.calls
    assert call["pods"] == ["a-0"]
    assert len(world.rule.pods) == 1
    world.put(obj("Deployment", "ud-b-yyyyy", UD_OWNER, spec={"replicas": 2}))
    world.round(T0 + 2)
    assert world.reconcile.calls[-1]["pods"] == ["a-0", "b-0", "b-1"]


def test_a_fresh_rule_offered_every_key_sees_the_same_family() -> None:
    world = World()
    family(world)
    world.round()
    first = {c["ud"]: c for c in world.reconcile.calls}
    fresh = World()
    fresh.view = world.view
    fresh.view.mark_all_changed()
    fresh.round()
    assert {c["ud"]: c for c in fresh.reconcile.calls} == first


def cloneset(name: str | None, replicas: int, image: str = "nginx:1",
             labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": "default", "ownerReferences": UD_OWNER,
                            "labels": labels or {"apps.kruise.io/subset-name": "a"}}
    if name is None:
        meta["generateName"] = "ud-a-"
    else:
        meta["name"] = name
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": meta,
            "spec": {"replicas": replicas,
                     "template": {"spec": {"containers": [{"name": "m", "image": image}]}}}}


def test_a_create_is_named_from_the_ud_uid_and_the_subset() -> None:
    world = World()
    world.put(obj("UnitedDeployment", "ud"))
    world.reconcile.answer = Answer(subsets={
        "a": Decision(2, None, "create", cloneset(None, 2)),
    })
    (create,) = world.round()
    assert create.verb == "create"
    assert create.target.resource == "clonesets"
    assert create.target.group == "apps.kruise.io"
    name = create.target.name
    assert name.startswith("ud-a-")
    assert len(name) == len("ud-a-") + 5
    assert set(name[len("ud-a-"):]) <= set(SUFFIX_ALPHABET)
    assert name == subset_workload_name("ud-a-", "uid-ud", "a")
    assert subset_workload_name("ud-a-", "uid-ud", "b") != name
    assert subset_workload_name("ud-a-", "another-uid", "a") != name
    assert subset_workload_name("x" * 80, "uid-ud", "a")[:58] == "x" * 58

    (plan,) = plans_for(world.rule, world.view, DecisionLog(), [create], cluster="c1", now=T0)
    assert plan.object is not None
    assert plan.object["metadata"]["name"] == name
    assert "generateName" not in plan.object["metadata"]
    assert plan.object["spec"]["replicas"] == 2

    world.put(cloneset(name, 2))  # observed: the same decision plans nothing
    assert plans_for(world.rule, world.view, DecisionLog(), [create], cluster="c1",
                     now=T0) == []


def test_an_update_is_the_difference_with_nulls_on_the_observed_version() -> None:
    world = World()
    world.put(obj("UnitedDeployment", "ud"))
    observed = cloneset("ud-a-abcde", 2, labels={"apps.kruise.io/subset-name": "a",
                                                 "stale": "yes"})
    observed["spec"]["minReadySeconds"] = 5
    observed["status"] = {"replicas": 2}
    world.put(observed)
    rendered = cloneset("ud-a-abcde", 3, image="nginx:2")
    rendered["metadata"]["uid"] = "uid-ud-a-abcde"
    world.reconcile.answer = Answer(subsets={"a": Decision(3, None, "update", rendered)})
    (update,) = world.round()
    assert update.verb == "patch"
    assert update.precondition == "resource_version"
    assert update.target.name == "ud-a-abcde"
    assert update.patch == {
        "metadata": {"labels": {"stale": None}},
        "spec": {"replicas": 3, "minReadySeconds": None,
                 "template": {"spec": {"containers": [{"name": "m", "image": "nginx:2"}]}}},
    }
    after = merge_patch.apply(world.view.decoded(*next(iter(
        (rk, ok) for rk, b in world.view.state.objects.items() for ok in b
        if "abcde" in ok))), update.patch)
    assert after["spec"] == rendered["spec"]
    assert after["metadata"]["labels"] == rendered["metadata"]["labels"]
    assert after["status"] == {"replicas": 2}, "the status is not the update's business"

    (plan,) = plans_for(world.rule, world.view, DecisionLog(), [update], cluster="c1", now=T0)
    assert plan.precondition.resource_version == observed["metadata"]["resourceVersion"]

    world.reconcile.answer = Answer(subsets={"a": Decision(2, None, "update", observed)})
    assert world.round(T0 + 1) == [], "nothing differs: nothing to write"


def test_deletes_revisions_pod_labels_status_and_rebalance_become_writes() -> None:
    world = World()
    ud = obj("UnitedDeployment", "ud", status={"replicas": 1, "subsetReplicas": {"a": 1, "b": 2},
                                               "conditions": [{"type": "X"}]})
    world.put(ud)
    gone = world.put(cloneset("ud-b-zzzzz", 1))
    world.put(obj("ControllerRevision", "ud-old", UD_OWNER))
    world.reconcile.answer = Answer(
        deletes=[gone],
        status={"replicas": 3, "subsetReplicas": {"a": 3}, "conditions": [{"type": "X"}]},
        pod_labels={"default/a-0": {"apps.kruise.io/united-deployment-reserved-pod": "true"}},
        revision_creates=[{"apiVersion": "apps/v1", "kind": "ControllerRevision",
                           "metadata": {"name": "ud-new", "namespace": "default",
                                        "ownerReferences": UD_OWNER},
                           "revision": 3, "data": {}}],
        revision_updates=[("ud-mid", 4)],
        revision_deletes=["ud-old"],
        rebalance_handled="wr-uid",
    )
    writes = {(d.verb, d.target.resource, d.target.name): d for d in world.round()}
    delete = writes[("delete", "clonesets", "ud-b-zzzzz")]
    assert delete.target.uid == gone["metadata"]["uid"]
    assert writes[("create", "controllerrevisions", "ud-new")].object is not None
    assert writes[("patch", "controllerrevisions", "ud-mid")].patch == {"revision": 4}
    assert ("delete", "controllerrevisions", "ud-old") in writes
    label = writes[("patch", "pods", "a-0")]
    assert label.patch == {"metadata": {"labels": {
        "apps.kruise.io/united-deployment-reserved-pod": "true"}}}
    status = writes[("patch_status", "uniteddeployments", "ud")]
    assert status.serial
    assert status.precondition == "resource_version"
    assert status.patch == {"status": {"replicas": 3, "subsetReplicas": {"a": 3, "b": None}}}
    handled = writes[("patch", "uniteddeployments", "ud")]
    assert handled.patch == {"metadata": {"annotations": {HANDLED_ANNOTATION: "wr-uid"}}}
    assert len(writes) == 7


def test_the_requeue_time_wakes_the_ud_once_and_a_deleted_ud_is_forgotten() -> None:
    world = World()
    world.put(obj("UnitedDeployment", "ud"))
    at = datetime.fromtimestamp(T0, UTC) + timedelta(seconds=30)
    world.reconcile.answer = Answer(requeue_at=at)
    world.round()
    assert world.rule.next_wake() == at.timestamp()
    assert world.rule.due(T0 + 29) == set()
    (key,) = world.rule.due(T0 + 30)
    assert world.rule.due(T0 + 31) == set()
    world.rule.desired(world.view, {key}, T0 + 30)
    assert len(world.reconcile.calls) == 2

    world.put(obj("UnitedDeployment", "ud"), event="DELETED")
    world.round(T0 + 40)
    assert world.rule.next_wake() is None
    assert len(world.reconcile.calls) == 2


def test_changes_within_the_interval_are_taken_in_one_later_round() -> None:
    world = World()
    world.rule.min_interval = 0.5
    family(world)
    world.round()
    world.reconcile.calls.clear()
    world.put(obj("Pod", "a-0", owned_by("CloneSet", "ud-a-xxxxx", "apps.kruise.io/v1alpha1"),
                  status={"phase": "Running"}))
    assert world.round(T0 + 0.1) == []
    assert world.reconcile.calls == []
    assert world.rule.next_wake() == T0 + 0.5
    world.rule.desired(world.view, world.rule.due(T0 + 0.5), T0 + 0.5)
    assert [c["ud"] for c in world.reconcile.calls] == ["ud"]


def test_a_deleting_ud_plans_nothing() -> None:
    world = World()
    ud = obj("UnitedDeployment", "ud")
    ud["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    world.put(ud)
    world.reconcile.answer = Answer(status={"replicas": 9})
    assert world.round() == []
    assert world.reconcile.calls == []


def test_the_rendered_workload_is_not_changed_by_planning() -> None:
    world = World()
    world.put(obj("UnitedDeployment", "ud"))
    rendered = cloneset(None, 2)
    kept = copy.deepcopy(rendered)
    world.reconcile.answer = Answer(subsets={"a": Decision(2, None, "create", rendered)})
    (create,) = world.round()
    plans_for(world.rule, world.view, DecisionLog(), [create], cluster="c1", now=T0)
    assert rendered == kept


def test_pods_seen_before_their_workload_join_the_ud_when_the_workload_does() -> None:
    world = World()
    world.put(obj("UnitedDeployment", "ud"))
    world.round()
    world.put(obj("Pod", "early-0", owned_by("CloneSet", "late", "apps.kruise.io/v1alpha1")))
    world.round(T0 + 1)
    assert world.reconcile.calls[-1]["pods"] == []
    world.put(obj("CloneSet", "late", UD_OWNER))
    world.round(T0 + 2)
    assert world.reconcile.calls[-1]["pods"] == ["early-0"]
    world.put(obj("Pod", "early-1", owned_by("CloneSet", "late", "apps.kruise.io/v1alpha1")))
    world.round(T0 + 3)
    assert world.reconcile.calls[-1]["pods"] == ["early-0", "early-1"]
    world.put(obj("CloneSet", "late", UD_OWNER), event="DELETED")
    world.round(T0 + 4)
    assert world.reconcile.calls[-1]["pods"] == []


def test_a_ud_whose_reconcile_raises_holds_back_no_other_and_is_tried_again() -> None:
    world = World()
    world.put(obj("UnitedDeployment", "bad"))
    world.put(obj("UnitedDeployment", "good"))
    answer = Answer(status={"replicas": 1})

    def reconcile(ud: Mapping[str, Any], **kwargs: Any) -> Answer:
        world.reconcile(ud, **kwargs)
        if ud["metadata"]["name"] == "bad":
            raise ValueError("cannot")
        return answer

    world.rule.reconcile = reconcile
    writes = world.round()
    assert [(d.verb, d.target.name) for d in writes] == [("patch_status", "good")]
    assert world.rule.next_wake() == T0 + RETRY_SECONDS
    world.rule.desired(world.view, world.rule.due(T0 + RETRY_SECONDS), T0 + RETRY_SECONDS)
    assert [c["ud"] for c in world.reconcile.calls] == ["bad", "good", "bad"]


def test_a_reconcile_that_refuses_writes_nothing_and_an_empty_status_wipes_nothing() -> None:
    world = World()
    world.put(obj("UnitedDeployment", "ud", status={"replicas": 3, "observedGeneration": 1}))
    world.reconcile.answer = Answer(error="subset replicas exceed spec.replicas",
                                    status={"replicas": 3, "observedGeneration": 1})
    assert world.round() == []
    world.reconcile.answer = Answer(status={})
    world.put(obj("UnitedDeployment", "ud", status={"replicas": 3, "observedGeneration": 1}))
    assert world.round(T0 + 1) == []
    assert len(world.reconcile.calls) == 2
