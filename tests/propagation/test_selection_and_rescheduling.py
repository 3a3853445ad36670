"""Karmada's cluster selection, policy matching, estimator and rescheduling rules, table by
table. Each table is transcribed from the upstream test named in its comment
(karmada-io/karmada, v1.19)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubesemantics.karmada_binding import binding_name, matching_policy
from spreadbus.features.propagation.core.cluster import Cluster
from spreadbus.features.propagation.core.division import Mode, Target, strategy_of
from spreadbus.features.propagation.core.estimator import available_replicas, replica_request
from spreadbus.features.propagation.core.policy import APPLIED_PLACEMENT, placement_changed
from spreadbus.features.propagation.core.selection import (
    Detail,
    Group,
    SelectionError,
    cluster_matches,
    select,
    select_groups,
)
from spreadbus.features.propagation.planning.schedule import (
    Binding,
    reschedule_required,
    schedule,
)

# pkg/util/selector_test.go (TestClusterMatches): one cluster, many affinities.
CLUSTER1 = Cluster(name="cluster1", labels={"foo": "bar"}, zones=("zone1", "zone2", "zone3"),
                   region="region1", provider="provider1")
ZONES = ["zone1", "zone2", "zone3"]


def _fields(*expressions: tuple[str, str, list[str]]) -> dict[str, Any]:
    return {"matchExpressions": [{"key": k, "operator": o, "values": v}
                                 for k, o, v in expressions]}


MATCHES = [
    ("excluded and names", {"exclude": ["cluster1"], "clusterNames": ["cluster1"]}, False),
    ("excluded and label selector",
     {"exclude": ["cluster1"], "labelSelector": {"matchLabels": {"foo": "bar"}}}, False),
    ("excluded and field selector",
     {"exclude": ["cluster1"], "fieldSelector": _fields(("zone", "In", ZONES))}, False),
    ("names", {"clusterNames": ["cluster1"]}, True),
    ("names not matched", {"clusterNames": ["cluster2"]}, False),
    ("names and label selector",
     {"clusterNames": ["cluster1"], "labelSelector": {"matchLabels": {"foo": "bar"}}}, True),
    ("names and label selector not matched",
     {"clusterNames": ["cluster1"], "labelSelector": {"matchLabels": {"foo": "unmatched"}}},
     False),
    ("names and zone and region", {"clusterNames": ["cluster1"], "fieldSelector": _fields(
        ("zone", "In", ZONES), ("region", "In", ["region1"]))}, True),
    ("names and provider",
     {"clusterNames": ["cluster1"], "fieldSelector": _fields(("provider", "In", ["provider1"]))},
     True),
    ("names and zone not in",
     {"clusterNames": ["cluster1"], "fieldSelector": _fields(("zone", "NotIn", ZONES))}, False),
    ("names and provider not in", {"clusterNames": ["cluster1"], "fieldSelector": _fields(
        ("provider", "NotIn", ["provider1"]))}, False),
    ("names and region not in", {"clusterNames": ["cluster1"], "fieldSelector": _fields(
        ("region", "NotIn", ["region1"]))}, False),
    ("label selector and zone", {"labelSelector": {"matchLabels": {"foo": "bar"}},
                                 "fieldSelector": _fields(("zone", "In", ZONES))}, True),
    ("label selector", {"labelSelector": {"matchLabels": {"foo": "bar"}}}, True),
    ("label selector not matched", {"labelSelector": {"matchLabels": {"foo": "unmatched"}}},
     False),
    ("empty affinity", {}, True),
    ("label selector error", {"labelSelector": {"matchLabels": {"": "bar"}}}, False),
    ("field selector error", {"fieldSelector": {"matchExpressions": [{"key": ""}]}}, False),
    ("zone partially matched", {"clusterNames": ["cluster1"], "fieldSelector": _fields(
        ("zone", "NotIn", ZONES))}, False),
    ("one zone matches In", {"clusterNames": ["cluster1"], "fieldSelector": _fields(
        ("zone", "In", ["zone2"]))}, True),
    ("region not matched", {"clusterNames": ["cluster1"], "fieldSelector": _fields(
        ("region", "In", ["region2"]))}, False),
    ("provider not in", {"fieldSelector": _fields(("provider", "NotIn", ["provider1"]))}, False),
]


@pytest.mark.parametrize(("affinity", "want"),
                         [pytest.param(a, w, id=n) for n, a, w in MATCHES])
def test_cluster_matches(affinity: dict[str, Any], want: bool) -> None:
    assert cluster_matches(CLUSTER1, affinity) is want


# pkg/scheduler/helper_test.go (Test_needConsideredPlacementChanged).
def _terms(*terms: tuple[str, list[str]]) -> dict[str, Any]:
    return {"clusterAffinities": [{"affinityName": n, "clusterNames": c} for n, c in terms]}


SPREAD = {"spreadConstraints": [{"minGroups": 1, "maxGroups": 1, "spreadByField": "cluster"}]}
PLACEMENT_CHANGED = [
    ("nil applied placement", {"clusterAffinity": {"clusterNames": ["m1"]}}, None, "", True),
    ("same placement", {"clusterAffinity": {"clusterNames": ["m1"]}, **SPREAD},
     {"clusterAffinity": {"clusterNames": ["m1"]}, **SPREAD}, "", False),
    ("different clusterAffinity", {"clusterAffinity": {"clusterNames": ["m1", "m2"]}},
     {"clusterAffinity": {"clusterNames": ["m1"]}}, "", True),
    ("different clusterTolerations",
     {"clusterTolerations": [{"key": "a", "operator": "Exists"}]}, {}, "", True),
    ("different spreadConstraints", SPREAD, {}, "", True),
    ("different replicaScheduling", {"replicaScheduling": {"replicaSchedulingType": "Divided"}},
     {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}, "", True),
    ("clusterAffinities with no observed name", _terms(("group1", ["m1"])), {}, "", True),
    ("update the observed term", _terms(("group1", ["m1", "m2"])), _terms(("group1", ["m1"])),
     "group1", True),
    ("delete the observed term", _terms(("group2", ["m2"])),
     _terms(("group1", ["m1"]), ("group2", ["m2"])), "group1", True),
    ("delete every term", {}, _terms(("group1", ["m1"])), "group1", True),
    ("add a term, the observed one unchanged", _terms(("group1", ["m1"]), ("group2", ["m1", "m2"])),
     _terms(("group1", ["m1"])), "group1", False),
    ("update another term", _terms(("group1", ["m1"]), ("group2", ["m1", "m2"])),
     _terms(("group1", ["m1"]), ("group2", ["m2"])), "group1", False),
    ("delete another term", _terms(("group1", ["m1"])),
     _terms(("group1", ["m1"]), ("group2", ["m2"])), "group1", False),
]


@pytest.mark.parametrize(("placement", "applied", "observed", "want"),
                         [pytest.param(*c[1:], id=c[0]) for c in PLACEMENT_CHANGED])
def test_placement_changed(placement: dict[str, Any], applied: dict[str, Any] | None,
                           observed: str, want: bool) -> None:
    annotations = {} if applied is None else {APPLIED_PLACEMENT: json.dumps(applied)}
    assert placement_changed(placement, annotations, observed) is want


NOW = datetime(2024, 5, 22, 11, 36, 10, tzinfo=UTC)
EARLIER = NOW - timedelta(minutes=5)


# pkg/util/binding_test.go (TestRescheduleRequired).
@pytest.mark.parametrize(("trigger", "last", "want"), [
    (None, NOW, False), (NOW, None, False), (EARLIER, NOW, False), (NOW, EARLIER, True),
    (NOW, NOW, False),
])
def test_reschedule_required(trigger: datetime | None, last: datetime | None,
                             want: bool) -> None:
    assert reschedule_required(trigger, last) is want


# pkg/estimator/client/general_test.go (TestMaxAvailableReplicasGeneral, TestGetAllowedPodNumber,
# TestGetMaximumReplicasBasedOnClusterSummary).
BASIC = {"allocatable": {"pods": "100", "cpu": "4", "memory": "8Gi"},
         "allocated": {"pods": "20", "cpu": "1", "memory": "2Gi"}}
ESTIMATES = [
    ("nil resource summary", None, {"cpu": 500}, 0),
    ("no allowed pods", {"allocatable": {"pods": "10"}, "allocated": {"pods": "10"}}, {}, 0),
    ("no requirements", {"allocatable": {"pods": "10"}}, {}, 10),
    ("basic resource estimation", BASIC, {"cpu": 500, "memory": 2**30}, 6),
    ("pods normal case", {"allocatable": {"pods": "100"}, "allocated": {"pods": "40"},
                          "allocating": {"pods": "10"}}, {}, 50),
    ("no allocatable pods", {"allocated": {"pods": "10"}}, {}, 0),
    ("over allocation", {"allocatable": {"pods": "100"}, "allocated": {"pods": "90"},
                         "allocating": {"pods": "20"}}, {}, 0),
    ("insufficient memory", {"allocatable": {"pods": "110", "cpu": "4", "memory": "2Gi"},
                             "allocated": {"cpu": "1", "memory": "1.5Gi"}},
     {"cpu": 500, "memory": 2**30}, 0),
    ("a resource the cluster does not list", {"allocatable": {"pods": "110"}},
     {"nvidia.com/gpu": 1}, 0),
]


@pytest.mark.parametrize(("summary", "wanted", "want"),
                         [pytest.param(*c[1:], id=c[0]) for c in ESTIMATES])
def test_general_estimator(summary: dict[str, Any] | None, wanted: dict[str, int],
                           want: int) -> None:
    assert available_replicas(summary, wanted) == want


def test_the_request_of_a_pod_template() -> None:
    # pkg/util/resource.go AddPodTemplateRequest: limits stand for missing requests,
    # containers add up, an init container is a floor, the overhead is added.
    spec = {"containers": [{"resources": {"requests": {"cpu": "100m"},
                                          "limits": {"cpu": "1", "memory": "1Gi"}}},
                           {"resources": {"requests": {"cpu": "0.2", "memory": "100Mi"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
            "overhead": {"memory": "10Mi"}}
    assert replica_request(spec) == {"cpu": 2000, "memory": 2**30 + 110 * 2**20}
    assert replica_request({"containers": [{"name": "c"}]}) == {}


# pkg/detector/compare_test.go (Test_getHighestPriorityPropagationPolicies) and
# pkg/util/names/names_test.go (TestGenerateBindingName).
def _pp(name: str, selector: dict[str, Any], priority: int | None = None,
        namespace: str = "test") -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceSelectors": [{"apiVersion": "apps/v1",
                                                   "kind": "Deployment", **selector}]}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


NGINX: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "nginx", "namespace": "test", "labels": {"app": "nginx"}}}
BY_NAME = _pp("match-with-name", {"name": "nginx"})
BY_LABEL = _pp("match-with-label", {"labelSelector": {"matchLabels": {"app": "nginx"}}})
ALL = _pp("match-all", {})


@pytest.mark.parametrize(("template", "policies", "want"), [
    (NGINX, [], None),
    ({**NGINX, "metadata": {**NGINX["metadata"], "namespace": "test01"}}, [BY_NAME, BY_LABEL],
     None),
    (NGINX, [BY_LABEL, ALL, BY_NAME], "match-with-name"),
    (NGINX, [_pp("b-pp", {"name": "nginx"}), _pp("a-pp", {"name": "nginx"})], "a-pp"),
    (NGINX, [_pp("a-pp", {"name": "nginx"}), _pp("b-pp", {}, priority=1)], "b-pp"),
    (NGINX, [_pp("ab", {}), _pp("abc", {})], "ab"),
])
def test_policy_matching(template: dict[str, Any], policies: list[dict[str, Any]],
                         want: str | None) -> None:
    found = matching_policy(template, [template, *policies])
    assert (found["metadata"]["name"] if found is not None else None) == want


def test_a_propagation_policy_wins_over_a_cluster_propagation_policy() -> None:
    cpp = {**_pp("cluster-wide", {"name": "nginx"}, priority=100), "kind":
           "ClusterPropagationPolicy", "metadata": {"name": "cluster-wide"}}
    found = matching_policy(NGINX, [cpp, ALL])
    assert found is not None
    assert found["metadata"]["name"] == "match-all"
    assert matching_policy(NGINX, [cpp]) is cpp


@pytest.mark.parametrize(("kind", "name", "want"), [
    ("Deployment", "nginx", "nginx-deployment"),
    ("ClusterRole", "system:aggregate-to-edit", "system.aggregate-to-edit-clusterrole"),
    ("ConfigMap", "Demo", "demo-configmap"),
])
def test_binding_names(kind: str, name: str, want: str) -> None:
    assert binding_name(kind, name) == want


# pkg/scheduler/scheduler.go doScheduleBinding and scheduler_test.go
# (TestScheduleResourceBindingWithClusterAffinities): when a round runs, and how.
APPS = {"apps/v1": frozenset({"Deployment"})}
DYNAMIC = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
           "weightPreference": {"dynamicWeight": "AvailableReplicas"}}


def _cluster(name: str, pods: int, **extra: Any) -> Cluster:
    return Cluster(name=name, api_enablements=APPS, ready="True",
                   summary={"allocatable": {"pods": str(pods)}}, **extra)


def _binding(placement: dict[str, Any], clusters: tuple[Target, ...] = (),
             applied: bool = True, **extra: Any) -> Binding:
    annotations = {APPLIED_PLACEMENT: json.dumps(placement)} if applied else {}
    return Binding(api_version="apps/v1", kind="Deployment", placement=placement, replicas=4,
                   workload=True, clusters=clusters, annotations=annotations, **extra)


MEMBERS = [_cluster("member1", 10), _cluster("member2", 10)]


def test_a_first_schedule_runs_because_nothing_was_applied() -> None:
    placement = {"replicaScheduling": DYNAMIC}
    result = schedule(_binding(placement, applied=False), MEMBERS, NOW)
    assert result.scheduled
    assert result.mode is Mode.STEADY
    assert result.succeeded
    assert {t.name: t.replicas for t in result.clusters} == {"member1": 2, "member2": 2}


def test_a_recovered_cluster_pulls_nothing_back() -> None:
    placement = {"replicaScheduling": DYNAMIC}
    result = schedule(_binding(placement, (Target("member2", 4),), last_scheduled_time=EARLIER),
                      MEMBERS, NOW)
    assert not result.scheduled
    assert result.mode is None
    assert result.clusters == (Target("member2", 4),)


def test_a_rebalance_schedules_fresh_and_spreads_again() -> None:
    placement = {"replicaScheduling": DYNAMIC}
    result = schedule(_binding(placement, (Target("member2", 4),), last_scheduled_time=EARLIER,
                               reschedule_triggered_at=NOW), MEMBERS, NOW)
    assert result.scheduled
    assert result.mode is Mode.FRESH
    # member2 counts its own 4 as room: 14 against member1's 10.
    assert {t.name: t.replicas for t in result.clusters} == {"member1": 2, "member2": 2}
    assert result.last_scheduled_time == NOW


def test_a_trigger_before_the_last_schedule_does_nothing() -> None:
    placement = {"replicaScheduling": DYNAMIC}
    result = schedule(_binding(placement, (Target("member2", 4),), last_scheduled_time=NOW,
                               reschedule_triggered_at=NOW), MEMBERS, NOW)
    assert not result.scheduled


def test_duplicated_and_non_workloads_always_schedule() -> None:
    placement = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}
    result = schedule(_binding(placement, (Target("member1", 4), Target("member2", 4))),
                      MEMBERS, NOW)
    assert result.scheduled
    assert result.mode is Mode.STEADY


def test_a_terminating_target_cluster_reschedules() -> None:
    placement = {"replicaScheduling": DYNAMIC}
    members = [_cluster("member1", 10, deleting=True), _cluster("member2", 10)]
    result = schedule(_binding(placement, (Target("member1", 2), Target("member2", 2))),
                      members, NOW)
    assert result.scheduled
    assert result.clusters == (Target("member2", 4),)


def test_no_fit_clears_the_clusters_and_too_little_room_keeps_them() -> None:
    placement = {"clusterAffinity": {"clusterNames": ["nowhere"]}, "replicaScheduling": DYNAMIC}
    result = schedule(_binding(placement, (Target("member1", 4),), applied=False), MEMBERS, NOW)
    assert result.error == ("0/2 clusters are available: 2 cluster(s) did not match the "
                            "placement cluster affinity constraint.")
    assert result.clusters == ()
    assert result.reason == "NoClusterFit"
    tight = [_cluster("member1", 0), _cluster("member2", 0)]
    result = schedule(_binding({"replicaScheduling": DYNAMIC}, (Target("member1", 3),),
                               applied=False), tight, NOW)
    assert result.reason == "Unschedulable"
    assert result.error == ("failed to assign replicas: failed to scale up: Clusters available "
                            "replicas 0 are not enough to schedule.")
    assert result.clusters == (Target("member1", 3),)
    assert result.last_scheduled_time is None


PRIMARY_BACKUP = {"replicaScheduling": DYNAMIC, "clusterAffinities": [
    {"affinityName": "primary", "clusterNames": ["member1"]},
    {"affinityName": "backup", "clusterNames": ["member2"]}]}


def test_affinity_terms_fall_through_and_a_rebalance_starts_from_the_first() -> None:
    down = [_cluster("member1", 10, taints=({"key": "cluster.karmada.io/not-ready",
                                              "effect": "NoSchedule"},)), _cluster("member2", 10)]
    result = schedule(_binding(PRIMARY_BACKUP, applied=False), down, NOW)
    assert result.observed_affinity == "backup"
    assert result.clusters == (Target("member2", 4),)
    # The primary recovers: with the backup observed, nothing moves by itself...
    on_backup = _binding(PRIMARY_BACKUP, result.clusters, observed_affinity="backup",
                         last_scheduled_time=EARLIER)
    assert not schedule(on_backup, MEMBERS, NOW).scheduled
    # ...until a rebalance, which tries the first term again (since v1.19).
    back = schedule(_binding(PRIMARY_BACKUP, result.clusters, observed_affinity="backup",
                             last_scheduled_time=EARLIER, reschedule_triggered_at=NOW),
                    MEMBERS, NOW)
    assert back.mode is Mode.FRESH
    assert back.observed_affinity == "primary"
    assert back.clusters == (Target("member1", 4),)


def test_tolerated_taints_and_held_clusters_pass_the_taint_filter() -> None:
    taint = {"key": "maintenance", "value": "yes", "effect": "NoSchedule"}
    members = [_cluster("member1", 10, taints=(taint,)), _cluster("member2", 10)]
    placement = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}
    fresh = schedule(_binding(placement, applied=False), members, NOW)
    assert [t.name for t in fresh.clusters] == ["member2"]
    tolerated = {**placement, "clusterTolerations": [{"key": "maintenance",
                                                      "operator": "Exists"}]}
    assert [t.name for t in schedule(_binding(tolerated, applied=False), members,
                                     NOW).clusters] == ["member1", "member2"]
    held = schedule(_binding(placement, (Target("member1", 4),)), members, NOW)
    assert [t.name for t in held.clusters] == ["member1", "member2"]


def test_a_cluster_without_the_api_is_not_a_candidate() -> None:
    members = [Cluster(name="member1", summary={"allocatable": {"pods": "10"}}),
               _cluster("member2", 10)]
    result = schedule(_binding({"replicaScheduling": DYNAMIC}, applied=False), members, NOW)
    assert result.clusters == (Target("member2", 4),)


def test_a_cluster_spread_constraint_swaps_in_a_larger_cluster() -> None:
    # spreadconstraint/select_clusters_by_cluster.go: the top maxGroups by score and room; a
    # slot is swapped for a larger cluster, last slot first, while the replicas do not fit.
    members = [_cluster("member1", 5), _cluster("member2", 2), _cluster("member3", 1)]
    one = {"replicaScheduling": DYNAMIC,
           "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]}
    # member3 holds one (locality score 100, so first), but its room 1 + 1 is short of 4.
    result = schedule(_binding(one, (Target("member3", 1),), applied=False), members, NOW)
    assert result.clusters == (Target("member1", 4),)
    small = [_cluster("member1", 3), _cluster("member2", 2), _cluster("member3", 1)]
    failed = schedule(_binding(one, (Target("member3", 1),), applied=False), small, NOW)
    assert failed.error == ("failed to select clusters: no enough resource when selecting 1 "
                            "clusters")
    assert failed.clusters == (Target("member3", 1),)
    two = {**one, "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2,
                                          "minGroups": 1}]}
    spread = schedule(_binding(two, (Target("member3", 1),), applied=False), small, NOW)
    assert {t.name: t.replicas for t in spread.clusters} == {"member1": 2, "member3": 2}


def test_static_weights_ignore_spread_constraints_and_room() -> None:
    placement = {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                       "replicaDivisionPreference": "Weighted",
                                       "weightPreference": {"staticWeightList": [
                                           {"targetCluster": {"clusterNames": ["member1"]},
                                            "weight": 2},
                                           {"targetCluster": {"clusterNames": ["member2"]},
                                            "weight": 1}]}},
                 "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1,
                                        "minGroups": 1}]}
    members = [_cluster("member1", 0), _cluster("member2", 0)]
    result = schedule(_binding(placement, applied=False), members, NOW)
    assert {t.name: t.replicas for t in result.clusters} == {"member1": 3, "member2": 1}


# pkg/scheduler/core/spreadconstraint/select_groups_test.go (TestSelectGroups).
def _groups(*groups: tuple[str, int, int]) -> list[Group]:
    return [Group(name=n, value=v, weight=w) for n, v, w in groups]


SELECT_GROUPS = [
    ("empty groups", [], 2, 3, 1, []),
    ("no enough groups", _groups(("R1", 1, 80)), 2, 3, 1, []),
    ("no enough value", _groups(("R1", 1, 80), ("R2", 2, 30)), 2, 3, 4, []),
    ("select one group", _groups(("R1", 1, 80)), 1, 3, 1, ["R1"]),
    ("prioritize one path", _groups(("R1", 1, 80), ("R3", 1, 80), ("R2", 1, 60), ("R5", 2, 60),
                                    ("R4", 5, 50), ("R6", 3, 50)), 1, 3, 10,
     ["R5", "R4", "R6"]),
    ("fewer groups win", _groups(("R1", 1, 80), ("R2", 4, 40), ("R3", 1, 30), ("R4", 3, 30),
                                 ("R5", 3, 20), ("R6", 5, 10)), 2, 6, 5, ["R1", "R2"]),
    ("the highest score", _groups(("R1", 1, 60), ("R2", 1, 50), ("R3", 1, 40), ("R4", 3, 30),
                                  ("R5", 3, 20), ("R6", 3, 10)), 1, 3, 6, ["R1", "R4", "R5"]),
    ("the ones chosen earlier", _groups(("R1", 1, 60), ("R2", 2, 50), ("R3", 3, 40),
                                        ("R4", 4, 30)), 1, 2, 5, ["R1", "R4"]),
    ("the greater value", _groups(("R4", 1, 60), ("R3", 3, 50), ("R1", 3, 40), ("R2", 4, 30)),
     1, 2, 5, ["R3", "R1"]),
]


@pytest.mark.parametrize(("groups", "low", "high", "target", "want"),
                         [pytest.param(*c[1:], id=c[0]) for c in SELECT_GROUPS])
def test_select_groups(groups: list[Group], low: int, high: int, target: int,
                       want: list[str]) -> None:
    assert [g.name for g in select_groups(groups, low, high, target)] == want


def test_a_region_constraint_takes_the_best_cluster_of_each_chosen_region() -> None:
    members = [_cluster("a1", 10, region="east"), _cluster("a2", 8, region="east"),
               _cluster("b1", 6, region="west"), _cluster("c1", 2, region="north")]
    placement = {"replicaScheduling": DYNAMIC, "spreadConstraints": [
        {"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
        {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 3}]}
    result = schedule(_binding(placement, applied=False), members, NOW)
    # Every region holds its share of 2 (score 2000 each); of the pairs reaching 2 clusters the
    # ones with 3 clusters win, east+north found first. Their first clusters a1 and c1, then a2
    # up to 3 clusters; Webster gives c1 (room 2) nothing of 4.
    assert {t.name: t.replicas for t in result.clusters} == {"a1": 2, "a2": 2}
    alone = {"replicaScheduling": DYNAMIC, "spreadConstraints": [
        {"spreadByField": "zone", "minGroups": 1}]}
    refused = schedule(_binding(alone, applied=False),
                       [_cluster("z", 10, zones=("z1",))], NOW)
    assert refused.error == ("failed to select clusters: just support cluster and region "
                             "spread constraint")


# pkg/scheduler/core/spreadconstraint/select_clusters_test.go (TestSelectBestClusters): four
# clusters already in the scheduler's order, a cluster spread constraint.
INFOS = [Detail("member4", 60, 0, 50, 50, "R2"), Detail("member2", 40, 0, 60, 60, "R1"),
         Detail("member3", 30, 0, 80, 80, "R1"), Detail("member1", 20, 0, 40, 40, "R1")]
STATIC = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
          "weightPreference": {"staticWeightList": [
              {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1}]}}
SELECT_BEST = [
    ("by score", None, 2, 1, 100, ["member4", "member2"]),
    ("duplicated ignores room", {"replicaSchedulingType": "Duplicated"}, 2, 1, 120,
     ["member4", "member2"]),
    ("static weight ignores the constraint", STATIC, 2, 1, 120,
     ["member4", "member2", "member3", "member1"]),
    ("room swapped in", {"replicaSchedulingType": "Divided"}, 2, 1, 120,
     ["member4", "member3"]),
    ("insufficient resources", {"replicaSchedulingType": "Divided"}, 2, 1, 200,
     "no enough resource when selecting 2 clusters"),
    ("more groups than clusters", None, 7, 7, 30,
     "the number of feasible clusters is less than spreadConstraint.MinGroups"),
]


@pytest.mark.parametrize(("scheduling", "high", "low", "replicas", "want"),
                         [pytest.param(*c[1:], id=c[0]) for c in SELECT_BEST])
def test_select_best_clusters(scheduling: dict[str, Any] | None, high: int, low: int,
                              replicas: int, want: list[str] | str) -> None:
    placement: dict[str, Any] = {"spreadConstraints": [
        {"spreadByField": "cluster", "maxGroups": high, "minGroups": low}]}
    if scheduling is not None:
        placement["replicaScheduling"] = scheduling
    strategy = strategy_of(scheduling)
    if isinstance(want, str):
        with pytest.raises(SelectionError, match=want):
            select(INFOS, placement, strategy, replicas)
        return
    assert [d.name for d in select(INFOS, placement, strategy, replicas)] == want


OVERFLOW_PLACEMENT = {
    "replicaScheduling": {"replicaSchedulingType": "Divided",
                          "replicaDivisionPreference": "Aggregated"},
    "clusterAffinities": [{"affinityName": "primary", "clusterNames": ["member1"],
                           "overflowAffinities": [{"affinityName": "burst",
                                                   "clusterNames": ["member2"]}]}]}


def test_an_overflow_tier_takes_what_the_primary_cannot_hold() -> None:
    # common.go assignWorkloadReplicas and the ClusterAffinity filter: the observed term's
    # overflow affinities are candidates too, used only for what the primary cannot hold.
    members = [_cluster("member1", 3), _cluster("member2", 10)]
    # The term being tried is the observed one during the round, so its tiers count at once.
    first = schedule(_binding(OVERFLOW_PLACEMENT, applied=False), members, NOW)
    assert first.observed_affinity == "primary"
    assert first.clusters == (Target("member1", 3), Target("member2", 1))
    roomy = [_cluster("member1", 10), _cluster("member2", 10)]
    assert schedule(_binding(OVERFLOW_PLACEMENT, applied=False), roomy,
                    NOW).clusters == (Target("member1", 4),)


def test_a_non_workload_ignores_overflow_affinities() -> None:
    members = [_cluster("member1", 3), _cluster("member2", 10)]
    config = Binding(api_version="apps/v1", kind="Deployment", placement=OVERFLOW_PLACEMENT,
                     replicas=0, workload=False, observed_affinity="primary")
    assert schedule(config, members, NOW).clusters == (Target("member1", 0),)
