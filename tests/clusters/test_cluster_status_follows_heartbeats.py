"""A member's Cluster status and taints at a time, from its latest heartbeat: Ready from the
API server's health, Unknown once the grace period passes with none, the NoSchedule taints as
Ready says, and the same answer when the same inputs are looked at again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

import pytest

from events import codec, subjects
from events.messages import Observation, SyncMarker
from events.shards import Shards
from kubesemantics import merge_patch
from spreadbus.clusterregistry.cluster_health import find_condition
from spreadbus.clusterregistry.heartbeat import Heartbeat, encode, heartbeat_subject
from spreadbus.engine.feature import PlannerContext
from spreadbus.features.clusters.core.status import MemberInputs, cluster_state, moment
from spreadbus.features.clusters.planner import planner_side
from spreadbus.features.clusters.planning.rule import (
    HEARTBEATS_RESOURCE,
    ClusterStatusRule,
    Heartbeats,
)
from spreadbus.features.clusters.settings import ClusterSettings
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection, side_resource_key
from spreadbus.projection.planning import plans_for

CREATED = 1_700_000_000.0
GRACE = timedelta(seconds=40)


def cluster(status: dict[str, Any] | None = None,
            taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "member1", "uid": "u1", "generation": 1,
                         "creationTimestamp": "2023-11-14T22:13:20Z"},
            "spec": {"syncMode": "Pull", **({"taints": taints} if taints else {})},
            "status": status or {}}


def beat(at: float, health: str = "Healthy") -> Heartbeat:
    return Heartbeat(health=health, at=CREATED + at, kubernetesVersion="v1.30.0")


NODE = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi",
                                                                  "pods": "110"}}}
POD = {"metadata": {"name": "p1", "namespace": "default"},
       "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {
           "requests": {"cpu": "500m", "memory": "1Gi"}}}]},
       "status": {"phase": "Running"}}


def taint_keys(taints: list[dict[str, Any]]) -> list[str]:
    return [t["key"] for t in taints if t.get("effect") == "NoSchedule"]


# (heartbeat seconds after creation or None, its health, look at, Ready, reason, taints)
TABLE = [
    (None, "Healthy", 10, None, None, ["cluster.karmada.io/not-ready"]),
    (None, "Healthy", 61, "Unknown", "ClusterStatusNeverUpdated",
     ["cluster.karmada.io/unreachable"]),
    (5, "Healthy", 10, "True", "ClusterReady", []),
    (5, "Healthy", 45, "True", "ClusterReady", []),
    (5, "Healthy", 46, "Unknown", "ClusterStatusUnknown", ["cluster.karmada.io/unreachable"]),
    (5, "Unhealthy", 10, "False", "ClusterNotReady", ["cluster.karmada.io/not-ready"]),
    (5, "Unreachable", 10, "False", "ClusterNotReachable", ["cluster.karmada.io/not-ready"]),
    (5, "Unhealthy", 46, "Unknown", "ClusterStatusUnknown", ["cluster.karmada.io/unreachable"]),
]


@pytest.mark.parametrize(("at", "health", "now", "ready", "reason", "taints"), TABLE)
def test_heartbeats_at_times_give_status_and_taints(
        at: float | None, health: str, now: float, ready: str | None, reason: str | None,
        taints: list[str]) -> None:
    inputs = MemberInputs(None if at is None else beat(at, health), [NODE], [POD])
    # As the planner does: the object as written when the heartbeat came, then looked at later.
    first = cluster_state(cluster(), inputs, CREATED + (at or 0), grace_period=GRACE)
    state = cluster_state(cluster(first.status, first.taints), inputs, CREATED + now,
                          grace_period=GRACE)
    condition = find_condition(state.status.get("conditions"))
    assert (None if condition is None else condition["status"]) == ready
    assert (None if condition is None else condition["reason"]) == reason
    assert taint_keys(state.taints) == taints
    # The same inputs looked at again, on the object they produced, change nothing.
    again = cluster_state(cluster(state.status, state.taints), inputs, CREATED + now,
                          grace_period=GRACE)
    assert again.status == state.status
    assert again.taints == state.taints


def test_a_healthy_heartbeat_brings_the_version_and_resource_summary() -> None:
    state = cluster_state(cluster(), MemberInputs(beat(5), [NODE], [POD]), CREATED + 10)
    assert state.status["kubernetesVersion"] == "v1.30.0"
    summary = state.status["resourceSummary"]
    assert summary["allocatable"]["cpu"] == "4"
    assert summary["allocated"]["cpu"] == "500m"
    assert summary["allocated"]["pods"] == "1"
    assert state.status["nodeSummary"]["totalNum"] == 1


def test_unlisted_nodes_keep_the_previous_summary() -> None:
    first = cluster_state(cluster(), MemberInputs(beat(5), [NODE], [POD]), CREATED + 10)
    later = cluster_state(cluster(first.status), MemberInputs(beat(15), None, None),
                          CREATED + 20)
    assert later.status["resourceSummary"] == first.status["resourceSummary"]


def test_unknown_stays_with_its_time_until_a_new_heartbeat_then_ready_again() -> None:
    inputs = MemberInputs(beat(5), [NODE], [POD])
    ready = cluster_state(cluster(), inputs, CREATED + 10, grace_period=GRACE)
    lost = cluster_state(cluster(ready.status, ready.taints), inputs, CREATED + 50,
                         grace_period=GRACE)
    later = cluster_state(cluster(lost.status, lost.taints), inputs, CREATED + 90,
                          grace_period=GRACE)
    assert later == lost
    back = cluster_state(cluster(lost.status, lost.taints), MemberInputs(beat(95), [NODE], [POD]),
                         CREATED + 96, grace_period=GRACE)
    condition = find_condition(back.status["conditions"])
    assert condition is not None
    assert condition["status"] == "True"
    assert condition["lastTransitionTime"] == moment(CREATED + 95).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert back.taints == []


def _fold(view: KubeProjection, seq: int, obj: dict[str, Any] | None, *,
          cluster_name: str = "host", group: str = "cluster.karmada.io",
          resource: str = "clusters") -> None:
    if obj is None:
        marker = SyncMarker(cluster=cluster_name, group=group, version="v1", resource=resource,
                            complete=True)
        view.fold(seq, subjects.sync(cluster_name, group, resource), codec.encode(marker))
        return
    observed = Observation(cluster=cluster_name, group=group, version="v1alpha1",
                           resource=resource, event="ADDED", object=obj)
    view.fold(seq, subjects.observation(cluster_name, group, resource, "",
                                        obj["metadata"]["name"]), codec.encode(observed))


def test_the_rule_writes_status_and_taints_and_wakes_when_the_heartbeat_goes_stale() -> None:
    view = KubeProjection()
    _fold(view, 1, None)
    _fold(view, 2, cluster())
    _fold(view, 3, None, cluster_name="member1", group="", resource="nodes")
    _fold(view, 4, None, cluster_name="member1", group="", resource="pods")
    heartbeats = Heartbeats()
    rule = ClusterStatusRule("host", heartbeats, grace_period=GRACE)
    changed = heartbeats.apply(1, heartbeat_subject("member1"), encode(beat(5)))
    assert changed == ("member1", "member1")
    beat_key = (side_resource_key("member1", HEARTBEATS_RESOURCE), "member1")
    wants = rule.desired(view, view.take_changed() | {beat_key}, CREATED + 6)
    # Ready from the first heartbeat: a status, and no taint to add to a cluster that has none.
    assert [w.verb for w in wants] == ["patch_status"]
    status = wants[0].patch["status"]
    assert (find_condition(status["conditions"]) or {}).get("status") == "True"
    assert wants[0].target.name == "member1"
    assert wants[0].governor == wants[0].target
    # Written back as the actuator would: nothing more to do until the grace period ends.
    _fold(view, 5, cluster(status))
    assert rule.desired(view, view.take_changed(), CREATED + 7) == []
    wake = rule.next_wake()
    assert wake is not None
    assert CREATED + 45 < wake < CREATED + 46
    assert rule.due(CREATED + 44) == set()
    due = rule.due(wake)
    stale = rule.desired(view, due, wake)
    assert [w.verb for w in stale] == ["patch_status", "patch"]
    lost = find_condition(stale[0].patch["status"]["conditions"]) or {}
    assert lost.get("status") == "Unknown"
    assert taint_keys(stale[1].patch["spec"]["taints"]) == ["cluster.karmada.io/unreachable"]


def test_a_heartbeat_of_an_unregistered_member_plans_nothing() -> None:
    view = KubeProjection()
    _fold(view, 1, None)
    heartbeats = Heartbeats()
    heartbeats.apply(1, heartbeat_subject("member2"), encode(beat(5)))
    rule = ClusterStatusRule("host", heartbeats, grace_period=GRACE)
    assert rule.desired(view, {("$clusterheartbeats", "member2")}, CREATED + 6) == []


async def test_only_the_shard_owning_cluster_scoped_objects_keeps_the_clusters() -> None:
    sides = [await planner_side(PlannerContext(cluster="host", settings=ClusterSettings(),
                                               shards=Shards(count=3, index=index)))
             for index in range(3)]
    deciding = [side for side in sides if side.rules]
    assert len(deciding) == 1
    assert [s.stream for s in deciding[0].streams] == ["KV_spreadbus-cluster-heartbeats"]
    assert [type(r).__name__ for r in deciding[0].rules] == ["ClusterStatusRule"]



def _fold_member_pods(view: KubeProjection, seq: int, pods: list[dict[str, Any]]) -> int:
    """The member's node and ``pods`` as its watcher publishes them: each observed, then synced."""
    node: dict[str, Any] = dict(NODE)
    for resource, objects in (("nodes", [node]), ("pods", pods)):
        for obj in objects:
            meta = obj["metadata"]
            observed = Observation(cluster="member1", group="", version="v1", resource=resource,
                                   event="ADDED", object=obj)
            view.fold(seq, subjects.observation("member1", "", resource,
                                                meta.get("namespace", ""), meta["name"]),
                      codec.encode(observed))
            seq += 1
        _fold(view, seq, None, cluster_name="member1", group="", resource=resource)
        seq += 1
    return seq


def _pod(name: str, node: str | None) -> dict[str, Any]:
    """A pod requesting 500m and 1Gi, bound to ``node`` or waiting for one."""
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {**({"nodeName": node} if node else {}),
                     "containers": [{"name": "c", "resources": {
                         "requests": {"cpu": "500m", "memory": "1Gi"}}}]},
            "status": {"phase": "Running" if node else "Pending"}}


def test_a_summary_part_that_empties_is_removed_from_the_written_status() -> None:
    """A status written while a pod waited for a node counts it as allocating; once it is bound
    the next status has no ``allocating`` at all, and the plan, a JSON merge patch, must remove
    it rather than leave the old one standing for good."""
    view = KubeProjection()
    _fold(view, 1, None)
    _fold(view, 2, cluster())
    seq = _fold_member_pods(view, 3, [_pod("p1", "n1"), _pod("p2", None)])
    heartbeats = Heartbeats()
    rule = ClusterStatusRule("host", heartbeats, grace_period=GRACE)
    beat_key = (side_resource_key("member1", HEARTBEATS_RESOURCE), "member1")
    heartbeats.apply(1, heartbeat_subject("member1"), encode(beat(5)))
    (first,) = rule.desired(view, view.take_changed() | {beat_key}, CREATED + 6)
    written = merge_patch.apply(cluster(), first.patch)
    assert written["status"]["resourceSummary"]["allocating"] == {
        "cpu": "500m", "memory": "1Gi", "pods": "1"}
    _fold(view, seq, written)

    _fold_member_pods(view, seq + 1, [_pod("p1", "n1"), _pod("p2", "n1")])
    heartbeats.apply(2, heartbeat_subject("member1"), encode(beat(6)))
    wants = rule.desired(view, view.take_changed() | {beat_key}, CREATED + 7)
    plans = plans_for(rule, view, DecisionLog(), wants, cluster="host", now=CREATED + 7)
    assert [plan.verb for plan in plans] == ["patch_status"]
    after = merge_patch.apply(written, plans[0].patch)
    assert after["status"]["resourceSummary"] == {
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocated": {"cpu": "1", "memory": "2Gi", "pods": "2"}}
    # Written back, the same inputs ask for nothing more.
    _fold(view, seq + 10, after)
    assert rule.desired(view, view.take_changed() | {beat_key}, CREATED + 7) == []


def _running_pod(name: str, cpu: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {
                "requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running"}}


def _fold_pod(view: KubeProjection, seq: int, pod: dict[str, Any],
              event: Literal["ADDED", "MODIFIED", "DELETED"] = "ADDED") -> None:
    observed = Observation(cluster="member1", group="", version="v1", resource="pods",
                           event=event, object=pod)
    view.fold(seq, subjects.observation("member1", "", "pods", "default", pod["metadata"]["name"]),
              codec.encode(observed))


def test_the_resource_summary_follows_each_pods_latest_observation() -> None:
    """The rule keeps each pod's request between heartbeats; a pod observed again with another
    request, and a pod deleted, count as they are now on the next heartbeat."""
    view = KubeProjection()
    _fold(view, 1, None)
    _fold(view, 2, cluster())
    _fold(view, 3, None, cluster_name="member1", group="", resource="nodes")
    _fold(view, 4, None, cluster_name="member1", group="", resource="pods")
    _fold(view, 5, NODE, cluster_name="member1", group="", resource="nodes")
    _fold_pod(view, 6, _running_pod("a", "100m"))
    _fold_pod(view, 7, _running_pod("b", "200m"))
    heartbeats = Heartbeats()
    rule = ClusterStatusRule("host", heartbeats, grace_period=GRACE)
    beat_key = (side_resource_key("member1", HEARTBEATS_RESOURCE), "member1")

    held = cluster()

    def allocated(seq: int, at: float) -> dict[str, str]:
        nonlocal held
        heartbeats.apply(seq, heartbeat_subject("member1"), encode(beat(at)))
        wants = rule.desired(view, view.take_changed() | {beat_key}, CREATED + at)
        held = merge_patch.apply(held, wants[0].patch)  # the patch is a difference from held
        _fold(view, 100 + seq, held)
        summary: dict[str, str] = held["status"]["resourceSummary"]["allocated"]
        return summary

    assert allocated(1, 5) == {"cpu": "300m", "pods": "2"}
    _fold_pod(view, 8, _running_pod("b", "1"), event="MODIFIED")
    assert allocated(2, 6) == {"cpu": "1100m", "pods": "2"}
    _fold_pod(view, 9, _running_pod("a", "100m"), event="DELETED")
    assert allocated(3, 7) == {"cpu": "1", "pods": "1"}


class _Member:
    """The rule over one registered member, each status it plans written back as the actuator
    would, and the heartbeats folded as the bucket's stream brings them."""

    def __init__(self, **thresholds: timedelta) -> None:
        self.view = KubeProjection()
        _fold(self.view, 1, None)
        _fold(self.view, 2, cluster())
        self.heartbeats = Heartbeats()
        self.rule = ClusterStatusRule("host", self.heartbeats, grace_period=GRACE, **thresholds)
        self.seq = 10
        self.status: dict[str, Any] = {}
        self.taints: list[dict[str, Any]] = []

    def look(self, at: float, changed: set[tuple[str, str]]) -> str | None:
        for want in self.rule.desired(self.view, self.view.take_changed() | changed,
                                      CREATED + at):
            if want.verb == "patch_status":
                self.status = want.patch["status"]
            else:
                self.taints = want.patch["spec"]["taints"]
            self.seq += 1
            _fold(self.view, self.seq, cluster(self.status, self.taints))
        condition = find_condition(self.status.get("conditions"))
        return None if condition is None else str(condition["status"])

    def beat(self, at: float, health: str = "Healthy") -> str | None:
        """Ready after a heartbeat of ``health`` at ``at``."""
        self.seq += 1
        self.heartbeats.apply(self.seq, heartbeat_subject("member1"), encode(beat(at, health)))
        return self.look(at, {(side_resource_key("member1", HEARTBEATS_RESOURCE), "member1")})


def test_flapping_heartbeats_leave_ready_as_it_was() -> None:
    """As karmada-agent's condition cache: heartbeats toggling between healthy and not within the
    thresholds (30 s) never turn Ready over, in either direction."""
    member = _Member()
    assert member.beat(5) == "True"
    for at in range(6, 60, 2):
        assert member.beat(at, "Unhealthy") == "True", at
        assert member.beat(at + 1) == "True", at + 1
    assert taint_keys(member.taints) == []


def test_a_lasting_change_counts_once_it_has_held_for_its_threshold() -> None:
    member = _Member(failure_threshold=timedelta(seconds=30),
                     success_threshold=timedelta(seconds=20))
    assert member.beat(5) == "True"
    # Unhealthy from 10 on: held back until 10 + 30, counted from the first such heartbeat.
    assert [member.beat(at, "Unreachable") for at in (10, 20, 39)] == ["True"] * 3
    assert member.beat(40, "Unreachable") == "False"
    assert taint_keys(member.taints) == ["cluster.karmada.io/not-ready"]
    # Healthy again from 50 on: held back until 50 + 20.
    assert [member.beat(at) for at in (50, 60, 69)] == ["False"] * 3
    assert member.beat(70) == "True"
    assert taint_keys(member.taints) == []


def test_a_member_silent_past_the_grace_period_turns_unknown_and_back_at_once() -> None:
    """No heartbeat is no report: the grace period alone turns Ready Unknown, and the member's
    next healthy heartbeat (its agent saw it healthy all along) turns it True again at once."""
    member = _Member()
    assert member.beat(5) == "True"
    wake = member.rule.next_wake()
    assert wake is not None
    assert member.look(wake - CREATED, member.rule.due(wake)) == "Unknown"
    assert member.beat(100) == "True"


def test_a_member_registered_again_starts_as_one_just_joined() -> None:
    """As Karmada drops a deleted cluster from its condition cache: an Unhealthy heartbeat held
    back before the Cluster was deleted holds nothing back once it is registered again."""
    member = _Member()
    assert member.beat(5) == "True"
    assert member.beat(6, "Unhealthy") == "True"  # held back
    member.seq += 1
    deleted = Observation(cluster="host", group="cluster.karmada.io", version="v1alpha1",
                          resource="clusters", event="DELETED", object=cluster())
    member.view.fold(member.seq, subjects.observation("host", "cluster.karmada.io", "clusters",
                                                      "", "member1"), codec.encode(deleted))
    member.look(7, set())
    member.status, member.taints = {}, []
    member.seq += 1
    _fold(member.view, member.seq, cluster())
    assert member.beat(8) == "True"
    # Unhealthy from 9 on is held back for the threshold from 9, not from 6.
    assert [member.beat(at, "Unhealthy") for at in (9, 37)] == ["True", "True"]
    assert member.beat(39, "Unhealthy") == "False"
